package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerfile is what the tests read of deploy/Dockerfile.
type dockerfile struct {
	from       []string
	args       map[string]bool
	env        map[string]string
	expose     []string
	entrypoint []string
	cmd        []string
	runs       []string
	user       string
}

// readDockerfile reads the instructions the tests check (continuation
// lines joined, comments dropped).
func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d := dockerfile{args: map[string]bool{}, env: map[string]string{}}
	var lines []string
	var cur string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	exec := func(s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Errorf("Dockerfile: %q is not in exec form: %v", s, err)
		}
		return v
	}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			d.from = append(d.from, rest)
		case "ARG":
			name, _, _ := strings.Cut(rest, "=")
			d.args[name] = true
		case "ENV":
			k, v, _ := strings.Cut(rest, "=")
			d.env[k] = v
		case "EXPOSE":
			d.expose = append(d.expose, strings.Fields(rest)...)
		case "ENTRYPOINT":
			d.entrypoint = exec(rest)
		case "CMD":
			d.cmd = exec(rest)
		case "RUN":
			d.runs = append(d.runs, rest)
		case "USER":
			d.user = rest
		}
	}
	return d
}

// TestDockerfile: the image runs companion serve on the port it exposes,
// as a non-root user, built with the module's Go and stamped with the
// version and commit.
func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)
	if len(d.entrypoint) != 1 || filepath.Base(d.entrypoint[0]) != "companion" {
		t.Errorf("ENTRYPOINT %v: want the companion binary", d.entrypoint)
	}
	checkSettings(t, "Dockerfile", d.env, d.cmd)
	addr := setting(t, d.env, "addr")
	if !strings.HasPrefix(addr, "0.0.0.0:") {
		t.Errorf("the image listens on %s: nothing outside the container could reach it", addr)
	}
	if want := addr[strings.LastIndex(addr, ":")+1:]; len(d.expose) != 1 || d.expose[0] != want {
		t.Errorf("EXPOSE %v, the service listens on %s", d.expose, want)
	}
	if d.user == "" || d.user == "root" || d.user == "0" {
		t.Errorf("USER %q", d.user)
	}

	// The build stage's Go is the one go.mod asks for.
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goVersion == nil || len(d.from) == 0 || !strings.HasPrefix(d.from[0], "golang:"+string(goVersion[1])) {
		t.Errorf("build stage %v, go.mod wants go %s", d.from, goVersion[1])
	}

	// The build stamps VERSION and COMMIT into the binary it installs as
	// the entrypoint.
	var build string
	for _, r := range d.runs {
		if strings.Contains(r, "./cmd/companion") {
			build = r
		}
	}
	for _, want := range []string{"-X main.version=${VERSION}", "-X main.commit=${COMMIT}", "-o /out/companion"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build of companion lacks %q: %s", want, build)
		}
	}
	if !d.args["VERSION"] || !d.args["COMMIT"] {
		t.Errorf("ARGs %v: want VERSION and COMMIT", d.args)
	}
}

// TestDockerfileStamp builds the binary with the Dockerfile's own
// ldflags, VERSION and COMMIT given, and reads them back from --version.
func TestDockerfileStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service")
	}
	var ldflags string
	for _, r := range readDockerfile(t).runs {
		if m := regexp.MustCompile(`ldflags="([^"]*main\.version[^"]*)"`).FindStringSubmatch(r); m != nil {
			ldflags = m[1]
		}
	}
	if ldflags == "" {
		t.Fatal("no ldflags with main.version in the Dockerfile")
	}
	ldflags = strings.NewReplacer("${VERSION}", "v1.2.3-image", "${COMMIT}", "c0ffee").Replace(ldflags)
	bin := filepath.Join(t.TempDir(), "companion")
	// Built in the service's module, as the image is, not in this one.
	goBuild := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./cmd/companion")
	goBuild.Dir = ".."
	if out, err := goBuild.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "companion v1.2.3-image (commit c0ffee)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
