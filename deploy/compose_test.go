package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/companionhq/companion/internal/testkit"
)

// loadCompose loads compose.yaml as `docker compose` would: the compose
// specification's schema, interpolation with the variables make up sets,
// paths resolved against deploy/.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."),
		cli.WithEnv([]string{"COMPANION_VERSION=v0.0.0-test", "COMPANION_COMMIT=0123abcd"}),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return p
}

// service is one service of the project, or a failed test.
func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return s
}

// composeEnv is a service's environment as a plain map.
func composeEnv(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// mounts are a service's bind mounts: container path -> host path.
func mounts(t *testing.T, s types.ServiceConfig) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind {
			out[v.Target] = v.Source
		}
	}
	return out
}

// inContainer is the host file a container path of s comes from, through
// its bind mounts ("" when none holds it).
func inContainer(t *testing.T, s types.ServiceConfig, path string) string {
	t.Helper()
	for target, source := range mounts(t, s) {
		if path == target {
			return source
		}
		if rel, ok := strings.CutPrefix(path, strings.TrimSuffix(target, "/")+"/"); ok {
			return filepath.Join(source, rel)
		}
	}
	return ""
}

// TestComposeFiles: the stack loads, everything it mounts or builds from
// exists, and only loopback ports are published.
func TestComposeFiles(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"companion", "postgres", "redis", "collector", "jaeger", "prometheus", "grafana"} {
		service(t, p, name)
	}
	for _, s := range p.Services {
		for target, source := range mounts(t, s) {
			if _, err := os.Stat(source); err != nil {
				t.Errorf("%s mounts %s at %s: %v", s.Name, source, target, err)
			}
		}
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeVolume {
				if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("%s uses volume %s, which is not declared", s.Name, v.Source)
				}
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("%s builds from %s: %v", s.Name, s.Build.Dockerfile, err)
			}
		} else if s.Image == "" || !strings.Contains(s.Image, ":") || strings.HasSuffix(s.Image, ":latest") {
			t.Errorf("%s: image %q is not pinned to a version", s.Name, s.Image)
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q, beyond loopback", s.Name, port.Published, port.HostIP)
			}
		}
		for dep := range s.DependsOn {
			if _, err := p.GetService(dep); err != nil {
				t.Errorf("%s depends on %s: %v", s.Name, dep, err)
			}
		}
	}
}

// TestComposeService: the service's image, settings and ports are its own,
// and its dependencies are where its settings say.
func TestComposeService(t *testing.T) {
	p := loadCompose(t)
	s := service(t, p, "companion")
	env := composeEnv(s)
	img := readDockerfile(t)
	for k, v := range img.env {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	checkSettings(t, "compose service companion", env, append([]string(nil), s.Command...))
	if s.Build == nil || s.Build.Args["VERSION"] == nil || *s.Build.Args["VERSION"] != "v0.0.0-test" || s.Build.Args["COMMIT"] == nil || *s.Build.Args["COMMIT"] != "0123abcd" {
		t.Errorf("the image is not stamped with the version and commit make up passes: %+v", s.Build)
	}
	for arg := range s.Build.Args {
		if !img.args[arg] {
			t.Errorf("build argument %s is not an ARG of the Dockerfile", arg)
		}
	}

	apiPort := port(t, setting(t, env, "addr"))
	if len(s.Ports) != 1 || s.Ports[0].Target != uint32(apiPort) {
		t.Errorf("ports %+v: want the service's %d", s.Ports, apiPort)
	}

	// The database is the postgres service, with its user and database.
	pg := composeEnv(service(t, p, "postgres"))
	db := env["COMPANION_DATABASE_URL"]
	if host, port := hostPort(t, db); host != "postgres" || port != 5432 {
		t.Errorf("database URL %s: not the postgres service", db)
	}
	for _, want := range []string{pg["POSTGRES_USER"] + ":" + pg["POSTGRES_PASSWORD"] + "@", "/" + pg["POSTGRES_DB"] + "?"} {
		if !strings.Contains(db, want) {
			t.Errorf("database URL %s lacks %s from the postgres service's settings", db, want)
		}
	}
	if host, _ := hostPort(t, env["COMPANION_REDIS_URL"]); host != "redis" {
		t.Errorf("Redis URL %q: not the redis service", env["COMPANION_REDIS_URL"])
	}

	// Spans go to the collector's OTLP HTTP receiver.
	host, otlpPort := hostPort(t, env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	col := service(t, p, "collector")
	if host != col.Name {
		t.Errorf("OTLP endpoint %s: not the collector", env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}
	colConfig := inContainer(t, col, "/etc/otelcol-contrib/config.yaml")
	if !strings.Contains(strings.Join(col.Command, " "), "/etc/otelcol-contrib/config.yaml") || colConfig == "" {
		t.Fatalf("the collector does not run observability/otel/collector.yaml: command %v, mounts %v", col.Command, mounts(t, col))
	}
	c := testkit.ReadYAML(t, colConfig)
	if recv, _ := testkit.Dig(c, "receivers", "otlp", "protocols", "http", "endpoint").(string); port(t, recv) != otlpPort {
		t.Errorf("the service sends OTLP to port %d, the collector receives HTTP on %s", otlpPort, recv)
	}
	backend := composeEnv(col)["TRACES_BACKEND_ENDPOINT"]
	if host, _, _ := strings.Cut(backend, ":"); host != "jaeger" {
		t.Errorf("the collector forwards to %q, not the jaeger service", backend)
	}

	// Docker stops the container after stop_grace_period: longer than the
	// service's shutdown delay and grace.
	shutdown := duration(t, setting(t, env, "shutdown-delay")) + duration(t, setting(t, env, "shutdown-grace"))
	if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= shutdown {
		t.Errorf("stop_grace_period %v is not longer than the service's shutdown delay plus grace, %v", s.StopGracePeriod, shutdown)
	}
}

// TestComposePrometheusAndGrafana: Prometheus scrapes the service and
// loads the alert rules; Grafana finds its data sources and the dashboard.
func TestComposePrometheusAndGrafana(t *testing.T) {
	p := loadCompose(t)
	prom := service(t, p, "prometheus")
	var configPath string
	for _, a := range prom.Command {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			configPath = v
		}
	}
	config := inContainer(t, prom, configPath)
	if config == "" {
		t.Fatalf("Prometheus's --config.file %q is not mounted", configPath)
	}
	cfg := testkit.ReadYAML(t, config)
	rules, _ := cfg["rule_files"].([]any)
	if len(rules) == 0 {
		t.Error("no rule_files: the alert rules are not loaded")
	}
	for _, r := range rules {
		path := r.(string)
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(configPath), path)
		}
		if host := inContainer(t, prom, path); host == "" {
			t.Errorf("rule file %s is not mounted", path)
		} else if _, err := os.Stat(host); err != nil {
			t.Errorf("rule file %s: %v", path, err)
		}
	}
	companion := service(t, p, "companion")
	target, _ := testkit.Dig(cfg, "scrape_configs", "0", "static_configs", "0", "targets", "0").(string)
	host, _, _ := strings.Cut(target, ":")
	if host != companion.Name || port(t, target) != int(companion.Ports[0].Target) {
		t.Errorf("Prometheus scrapes %q; the service is %s on port %d", target, companion.Name, companion.Ports[0].Target)
	}

	graf := service(t, p, "grafana")
	dsDir := inContainer(t, graf, "/etc/grafana/provisioning/datasources")
	files, _ := filepath.Glob(filepath.Join(dsDir, "*.yaml"))
	kinds := map[string]bool{}
	for _, f := range files {
		list, _ := testkit.Dig(testkit.ReadYAML(t, f), "datasources").([]any)
		for _, ds := range list {
			kind, _ := testkit.Dig(ds, "type").(string)
			kinds[kind] = true
			u, _ := testkit.Dig(ds, "url").(string)
			host, port := hostPort(t, u)
			if _, err := p.GetService(host); err != nil {
				t.Errorf("data source %s: %s is no service of the stack", f, u)
				continue
			}
			if want := map[string]int{"prometheus": 9090, "jaeger": 16686}[host]; port != want {
				t.Errorf("data source %s: port %d, the %s service serves on %d", f, port, host, want)
			}
		}
	}
	if !kinds["prometheus"] || !kinds["jaeger"] {
		t.Errorf("Grafana's provisioned data sources are of types %v: want prometheus and jaeger", kinds)
	}
	provider := inContainer(t, graf, "/etc/grafana/provisioning/dashboards/companion.yaml")
	if provider == "" {
		t.Fatal("the dashboard provisioning is not mounted")
	}
	dashDir, _ := testkit.Dig(testkit.ReadYAML(t, provider), "providers", "0", "options", "path").(string)
	if host := inContainer(t, graf, filepath.Join(dashDir, "companion.json")); host == "" {
		t.Errorf("the dashboard is not mounted under %s", dashDir)
	}
	home := composeEnv(graf)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if host := inContainer(t, graf, home); host == "" {
		t.Errorf("the home dashboard %s is not mounted", home)
	} else if _, err := os.Stat(host); err != nil {
		t.Errorf("home dashboard: %v", err)
	}
}

// TestComposeSettingsRun starts the service with the stack's settings and
// checks its probes and its shutdown within the stop grace period.
func TestComposeSettingsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service")
	}
	p := loadCompose(t)
	s := service(t, p, "companion")
	env := composeEnv(s)
	for k, v := range readDockerfile(t).env {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	args := readDockerfile(t).cmd
	if len(s.Command) > 0 {
		args = s.Command
	}
	runWith(t, args, env, nil, time.Duration(*s.StopGracePeriod))
}
