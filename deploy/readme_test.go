package deploy

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the README's section under heading, up to the next one
// of the same level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	level := strings.SplitN(heading, " ", 2)[0]
	section, _, _ = strings.Cut(section, "\n"+level+" ")
	return section
}

// TestReadmeDeployment: the README's deployment section gives the
// addresses the stack publishes, make targets that exist, and the numbers
// the manifests hold.
func TestReadmeDeployment(t *testing.T) {
	section := readmeSection(t, "## Deployment")
	p := loadCompose(t)
	published := 0
	for _, s := range p.Services {
		for _, port := range s.Ports {
			published++
			if addr := fmt.Sprintf("http://%s:%s", port.HostIP, port.Published); !strings.Contains(section, addr) {
				t.Errorf("the README's deployment section does not give %s's address %s", s.Name, addr)
			}
		}
	}
	if n := len(regexp.MustCompile(`\| http://127\.0\.0\.1:\d+ \|`).FindAllString(section, -1)); n != published {
		t.Errorf("the README's table has %d addresses; the stack publishes %d", n, published)
	}

	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"up", "down"} {
		rule := regexp.MustCompile(`(?m)^` + target + `:\n((?:\t.*\n)+)`).FindSubmatch(mk)
		if rule == nil || !strings.Contains(string(rule[1]), "docker compose -f deploy/compose.yaml") {
			t.Errorf("make %s does not run deploy/compose.yaml", target)
		}
		if !strings.Contains(section, "make "+target) {
			t.Errorf("the README's deployment section does not mention make %s", target)
		}
	}

	m := build(t)
	env := containerEnv(t, m, m.deployment.Spec.Template.Spec.Containers[0])
	for _, want := range []string{
		fmt.Sprintf("%ds of termination grace", *m.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds),
		fmt.Sprintf("the %s shutdown delay", env["COMPANION_SHUTDOWN_DELAY"]),
		fmt.Sprintf("%s shutdown grace", env["COMPANION_SHUTDOWN_GRACE"]),
		fmt.Sprintf("%d to %d replicas", *m.hpa.Spec.MinReplicas, m.hpa.Spec.MaxReplicas),
		"several replicas on one PostgreSQL",
	} {
		if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
			t.Errorf("the README's deployment section does not say %q", want)
		}
	}
}

// TestReadmeConfiguration: the README's configuration table names the
// variable of every flag of companion serve (the deployments' settings are
// checked against it).
func TestReadmeConfiguration(t *testing.T) {
	readme := readmeVariables(t)
	for _, f := range serveFlags(t) {
		if f.env != "" && !readme[f.env] {
			t.Errorf("README.md's configuration table lacks $%s (-%s)", f.env, f.name)
		}
	}
}
