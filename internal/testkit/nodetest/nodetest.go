// Package nodetest runs the tests that drive the service from Node: the
// JavaScript clients (internal/clienttest) and the browser test of the web
// chat (internal/web/browsertest). It builds the binaries, starts the fake
// Open-Meteo and the service as processes, installs a folder's pinned npm
// packages when allowed, and runs `node --test`.
package nodetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// stampFile, inside node_modules, holds the SHA-256 of the
// package-lock.json that node_modules was installed from (.ci/lib.sh's
// npm_ci_stamped writes the same file).
const stampFile = ".package-lock.sha256"

// Suite names a test that needs Node, for its messages.
type Suite struct {
	// What is skipped, e.g. "the JavaScript client tests".
	What string
	// Setup is what installs the prerequisites, e.g. ".ci/node".
	Setup string
}

// Unavailable skips the test, or fails it under CI=true (testkit.Unavailable).
func (s Suite) Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	testkit.Unavailable(t, fmt.Sprintf(format, args...)+" ("+s.What+")",
		"make test runs "+s.Setup+" first; COMPANION_INSTALL=1 make test installs what it needs")
}

// RequireNode checks that node 20 or newer and npm are on PATH.
func (s Suite) RequireNode(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			s.Unavailable(t, "%s is not on PATH", tool)
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		s.Unavailable(t, "node --version failed: %v", err)
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		s.Unavailable(t, "node %s is too old: Node.js 20 or newer is needed", v)
	}
}

// InstallModules runs `npm ci` in dir when node_modules is missing or was
// installed from another package-lock.json (only with CI=true or
// COMPANION_INSTALL=1), then records the lockfile's hash in node_modules.
func (s Suite) InstallModules(t testing.TB, dir string) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", stampFile)
	installed := func() bool {
		got, err := os.ReadFile(stamp)
		return err == nil && strings.TrimSpace(string(got)) == want
	}
	if installed() {
		return
	}
	// Two test processes must not install into one folder at once.
	unlock := lockFile(t, filepath.Join(dir, ".npm-ci.lock"))
	defer unlock()
	if installed() {
		return
	}
	if !testkit.InCI() && os.Getenv("COMPANION_INSTALL") != "1" {
		s.Unavailable(t, "%s is missing or was installed from another package-lock.json, and packages are installed only with CI=true or COMPANION_INSTALL=1",
			filepath.Join(dir, "node_modules"))
	}
	t.Logf("node_modules is missing or stale: npm ci in %s", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.Unavailable(t, "npm ci failed: %v\n%s", err, out)
	}
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lockFile takes an exclusive lock on path and returns its release.
func lockFile(t testing.TB, path string) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// BuildBinaries builds companion and fakes from the module at root into a
// temporary folder and returns it.
func BuildBinaries(t testing.TB, root string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	return testkit.Build(t, root, "", "./cmd/companion", "./fakes/cmd/fakes")
}

// StartFakeOpenMeteo starts `fakes openmeteo` on a free loopback port and
// returns its base URL.
func StartFakeOpenMeteo(t testing.TB, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "openmeteo", "-addr", "127.0.0.1:0")
	found := make(chan string, 1)
	out := &Lines{watch: func(line string) {
		if base, ok := strings.CutPrefix(line, "openmeteo listening on "); ok {
			select {
			case found <- base:
			default:
			}
		}
	}}
	cmd.Stdout = out
	cmd.Stderr = out
	start(t, cmd)
	select {
	case base := <-found:
		return base
	case <-time.After(15 * time.Second):
		t.Fatalf("the fake Open-Meteo printed no address within 15s\n%s", out.Tail(20))
	}
	return ""
}

// StartService starts `companion serve` on a free loopback port with a
// temporary SQLite database, an API key file with one key (apiKey, acting
// for resource; with apiKey "", no file and authentication off), the
// weather tool pointed at meteo, and extra flags; it returns the base URL
// once /health answers, and the service's log.
func StartService(t testing.TB, bin, meteo, apiKey, resource string, extra ...string) (string, *Lines) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"serve",
		"-addr", "127.0.0.1:0",
		"-database-url", "sqlite://" + filepath.Join(dir, "companion.db"),
		"-weather-geocoding-url", meteo,
		"-weather-forecast-url", meteo,
		"-log-level", "info",
	}
	if apiKey != "" {
		keys := filepath.Join(dir, "api-keys.txt")
		if err := os.WriteFile(keys, []byte(apiKey+" "+resource+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-api-keys-file", keys)
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	// The environment must not configure the service behind the flags' back.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPANION_") && !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := &Lines{}
	listening := make(chan string, 1)
	logs.watch = func(line string) {
		if a, ok := testkit.LoggedAddr([]byte(line), "listening"); ok {
			select {
			case listening <- a:
			default:
			}
		}
	}
	cmd.Stdout = logs
	cmd.Stderr = logs
	exited := start(t, cmd)

	var base string
	select {
	case addr := <-listening:
		base = "http://" + addr
	case err := <-exited:
		t.Fatalf("companion serve exited before listening: %v\n%s", err, logs.Tail(40))
	case <-time.After(30 * time.Second):
		t.Fatalf("companion serve did not listen within 30s\n%s", logs.Tail(40))
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(base + "/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /health did not answer 200 within 15s (last error: %v)\n%s", err, logs.Tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return base, logs
}

// start starts cmd and stops it when the test ends: SIGTERM, then SIGKILL
// after 10 seconds. The channel receives Wait's result.
func start(t testing.TB, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return exited
}

// RunNode runs `node --test script` in dir, writing its output into the
// test log line by line as it comes.
func RunNode(t testing.TB, dir string, env []string, script string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "--test-timeout=120000", script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	out := &Lines{watch: func(line string) { t.Log(line) }}
	cmd.Stdout = out
	cmd.Stderr = out
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("still running after 5 minutes: %w", err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("exit status %d: %s", exit.ExitCode(), summary(out.String()))
	}
	return err
}

// failLine picks the failing tests' names out of the spec reporter's output.
var failLine = regexp.MustCompile(`^\s*✖ (.+?)(?: \(\d[\d.]*ms\))?$`)

// summary names the failed node tests, or says where to look.
func summary(out string) string {
	seen := map[string]bool{}
	var failed []string
	for _, l := range strings.Split(out, "\n") {
		m := failLine.FindStringSubmatch(l)
		if m == nil || seen[m[1]] || m[1] == "failing tests:" {
			continue
		}
		seen[m[1]] = true
		failed = append(failed, m[1])
	}
	if len(failed) == 0 {
		return "see the output above"
	}
	return "failed: " + strings.Join(failed, "; ")
}

// Lines collects written text by lines; watch, when set, sees each
// complete line as it arrives.
type Lines struct {
	mu      sync.Mutex
	partial []byte
	all     []string
	watch   func(string)
}

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(l.partial[:i]), "\r")
		l.partial = l.partial[i+1:]
		l.all = append(l.all, line)
		if l.watch != nil {
			l.watch(line)
		}
	}
	return len(p), nil
}

func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(append(l.all, string(l.partial)), "\n")
}

// Count is the number of complete lines so far.
func (l *Lines) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// Since is the lines after the first from, at most the last n of them.
func (l *Lines) Since(from, n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := l.all[from:]
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

// Tail is the last n lines.
func (l *Lines) Tail(n int) string { return l.Since(0, n) }
