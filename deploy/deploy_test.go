// Package deploy's tests prove what can be proven of the deployment files
// without a container engine or a cluster: the Kubernetes manifests decode
// strictly into the official API types and build with kustomize, the
// compose file loads with the compose-spec loader, every file the stack
// mounts exists, the configuration files point at each other's names and
// ports, the image's command, ports and environment are the service's own
// flags and defaults, the service built from this tree starts and stops
// cleanly with each file's settings, and `make run` and `make fakes` serve
// at the port they are given.
//
// The package holds tests only, so that their large dependencies
// (k8s.io/api, kustomize, compose-go) never reach the service's binary.
package deploy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/testkit"
)

// companionBinary builds ./cmd/companion once for the package's tests,
// stamped as the image is.
func companionBinary(t *testing.T) string {
	t.Helper()
	dir := testkit.Build(t, "..", "-X main.version=v0.0.0-deploy-test -X main.commit=deploytest", "./cmd/companion")
	return filepath.Join(dir, "companion")
}

// flagInfo is one flag of `companion serve`, as its help tells.
type flagInfo struct {
	name, env, def string
}

var flagLine = regexp.MustCompile(`^  -([a-z0-9-]+)(?: [a-z]+)?$`)
var envRef = regexp.MustCompile(`\(\$([A-Z0-9_]+)\)`)
var defaultRef = regexp.MustCompile(`\(default "?([^")]*)"?\)$`)

var helpFlags struct {
	once  sync.Once
	flags map[string]flagInfo
	err   error
}

// serveFlags reads `companion serve -h`: every flag, its variable and its
// default.
func serveFlags(t *testing.T) map[string]flagInfo {
	t.Helper()
	bin := companionBinary(t)
	helpFlags.once.Do(func() {
		out, err := exec.Command(bin, "serve", "-h").CombinedOutput()
		if err != nil {
			helpFlags.err = fmt.Errorf("companion serve -h: %v\n%s", err, out)
			return
		}
		flags := map[string]flagInfo{}
		var cur string
		for _, line := range strings.Split(string(out), "\n") {
			if m := flagLine.FindStringSubmatch(line); m != nil {
				cur = m[1]
				flags[cur] = flagInfo{name: cur}
				continue
			}
			if cur == "" || !strings.HasPrefix(line, "    \t") {
				continue
			}
			f := flags[cur]
			if m := envRef.FindStringSubmatch(line); m != nil {
				f.env = m[1]
			}
			if m := defaultRef.FindStringSubmatch(line); m != nil {
				f.def = m[1]
			}
			flags[cur] = f
		}
		if len(flags) < 30 || flags["addr"].env != "COMPANION_ADDR" || flags["addr"].def == "" {
			helpFlags.err = fmt.Errorf("could not read the flags from companion serve -h:\n%s", out)
		}
		helpFlags.flags = flags
	})
	if helpFlags.err != nil {
		t.Fatal(helpFlags.err)
	}
	return helpFlags.flags
}

// readmeVariables are the environment variables of the README's
// configuration table.
func readmeVariables(t *testing.T) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	for _, line := range strings.Split(readmeSection(t, "## Configuration"), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(cells[2], -1) {
			vars[m[1]] = true
		}
	}
	return vars
}

// knownVariables are the variables the service reads: those of the
// README's configuration table (TestReadmeConfiguration checks that every
// flag's variable is there) and OpenTelemetry's standard OTEL_* ones.
func knownVariables(t *testing.T) func(string) bool {
	t.Helper()
	readme := readmeVariables(t)
	return func(name string) bool {
		return readme[name] || strings.HasPrefix(name, "OTEL_")
	}
}

// checkSettings checks one deployment's environment and arguments against
// the service: known variables, known flags after a known command.
func checkSettings(t *testing.T, where string, env map[string]string, args []string) {
	t.Helper()
	known := knownVariables(t)
	for k := range env {
		if !known(k) {
			t.Errorf("%s: $%s is not a setting of the service", where, k)
		}
	}
	if len(args) > 0 {
		if args[0] != "serve" {
			t.Errorf("%s: the image runs %q, not serve", where, args[0])
		}
		flags := serveFlags(t)
		for _, a := range args[1:] {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") {
				if _, ok := flags[name]; !ok {
					t.Errorf("%s: -%s is not a flag of companion serve", where, name)
				}
			}
		}
	}
}

// port is the port of a host:port address.
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}

// hostPort is the host and port of a URL, with the scheme's default port.
func hostPort(t *testing.T, raw string) (string, int) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("URL %q: %v", raw, err)
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443", "postgres": "5432", "postgresql": "5432", "redis": "6379"}[u.Scheme]
	}
	n, _ := strconv.Atoi(p)
	return u.Hostname(), n
}

// duration parses a Go duration; empty is zero.
func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// setting is a variable's value in env, else the flag's default.
func setting(t *testing.T, env map[string]string, flag string) string {
	t.Helper()
	f := serveFlags(t)[flag]
	if v, ok := env[f.env]; ok {
		return v
	}
	return f.def
}

// runWith starts the service built from this tree with a deployment's
// arguments and environment. Only what points outside the test is
// replaced: the listen addresses by loopback ones on ports the service picks, the database by a
// SQLite file, and Redis and the OTLP endpoint are dropped; files the
// deployment mounts come from files. Then it checks the probes: /health and
// /ready answer 200, /metrics is served where the deployment says, nothing
// is logged as an error; on SIGTERM /ready turns 503 while /health still
// answers, and the process exits 0 within limit.
func runWith(t *testing.T, args []string, env map[string]string, files map[string]string, limit time.Duration) {
	t.Helper()
	dir := t.TempDir()
	run := map[string]string{}
	for k, v := range env {
		run[k] = v
	}
	for path, content := range files {
		local := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "_"))
		if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		for k, v := range run {
			if v == path {
				run[k] = local
			}
		}
	}
	// Port 0: the service picks free ports as it listens and logs them (a
	// port found free beforehand may be taken by another test meanwhile).
	run["COMPANION_ADDR"] = "127.0.0.1:0"
	_, ownMetrics := run["COMPANION_METRICS_ADDR"]
	if ownMetrics {
		run["COMPANION_METRICS_ADDR"] = "127.0.0.1:0"
	}
	run["COMPANION_DATABASE_URL"] = "sqlite://" + filepath.Join(dir, "companion.db")
	delete(run, "COMPANION_REDIS_URL")
	delete(run, "OTEL_EXPORTER_OTLP_ENDPOINT")
	delete(run, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")

	cmd := exec.Command(companionBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range run {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var log testkit.Buffer
	// The API's address from the "listening" line, and the metrics
	// listener's from "serving metrics" when it has its own.
	// They are set once, before listening is closed.
	var apiAddr, metricsAddr string
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		var api, metrics string
		once := sync.Once{}
		for sc.Scan() {
			fmt.Fprintln(&log, sc.Text())
			if a, ok := testkit.LoggedAddr(sc.Bytes(), "listening"); ok {
				api = a
			}
			if a, ok := testkit.LoggedAddr(sc.Bytes(), "serving metrics"); ok {
				metrics = a
			}
			if !ownMetrics {
				metrics = api
			}
			if api != "" && metrics != "" {
				once.Do(func() {
					apiAddr, metricsAddr = api, metrics
					close(listening)
				})
			}
		}
		exited <- cmd.Wait()
	}()
	logs := log.String
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("the service exited at start with these settings: %v\n%s", err, logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("the service did not start listening:\n%s", logs())
	}

	get := func(addr, path string) int {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	for path, want := range map[string]int{"/health": 200, "/ready": 200} {
		if got := get(apiAddr, path); got != want {
			t.Errorf("GET %s: %d, want %d\n%s", path, got, want, logs())
		}
	}
	if got := get(metricsAddr, "/metrics"); got != 200 {
		t.Errorf("GET /metrics on %s: %d\n%s", metricsAddr, got, logs())
	}

	if strings.Contains(logs(), `"level":"ERROR"`) {
		t.Errorf("errors in the log:\n%s", logs())
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	delay := duration(t, run["COMPANION_SHUTDOWN_DELAY"])
	if delay > 0 {
		// While the delay runs, /ready says 503 and /health still 200.
		deadline := time.Now().Add(delay)
		var ready int
		for time.Now().Before(deadline) {
			if ready = get(apiAddr, "/ready"); ready == 503 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ready != 503 || get(apiAddr, "/health") != 200 {
			t.Errorf("after SIGTERM, within the shutdown delay: /ready %d (want 503), /health %d (want 200)", ready, get(apiAddr, "/health"))
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, logs())
		}
	case <-time.After(limit):
		t.Errorf("still running %v after SIGTERM, longer than the deployment waits\n%s", limit, logs())
	}
	if d := time.Since(start); d < delay {
		t.Errorf("exited %v after SIGTERM, before the shutdown delay of %v", d, delay)
	}
}
