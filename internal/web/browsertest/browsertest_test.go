// Package browsertest drives the web chat page in a real browser: Debian's
// Chromium (/usr/bin/chromium), headless, through playwright-core (pinned in
// package-lock.json), against the built service. The service runs the
// binaries of ./cmd/companion and ./fakes/cmd/fakes as processes, with an
// API key, the fake model slowed down so that a reply streams for a while,
// and the weather tool on the fake Open-Meteo. The scenarios are in
// chat.test.mjs; screenshots go to output/ (and, with -update, the desktop
// one to docs/web-chat.png).
//
// Without node (20 or newer), npm or Chromium the test is skipped, except
// under CI=true, where it fails. node_modules is installed with `npm ci`
// when it is missing or was installed from another package-lock.json, only
// with CI=true or COMPANION_INSTALL=1.
package browsertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

const (
	// apiKey and resource are the one line of the service's API key file.
	apiKey   = "browsertest-key-0123456789abcdef"
	resource = "browsertest-user"
	// chromium is Debian's package's browser.
	chromium = "/usr/bin/chromium"
	// tokenDelay paces the fake model: a reply of some 40 words streams for
	// about two seconds, time enough to see it grow and to stop it.
	tokenDelay = "50ms"
	// stampFile, inside node_modules, holds the SHA-256 of the
	// package-lock.json that node_modules was installed from.
	stampFile = ".package-lock.sha256"
)

func inCI() bool { return os.Getenv("CI") == "true" }

// unavailable skips the test, or fails it under CI=true, where every
// prerequisite must be there.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("%s (CI=true: run .ci/browser first)", msg)
	}
	t.Skipf("%s: the browser test is skipped (bash .ci/browser installs what it needs)", msg)
}

func TestWebChat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and drives Chromium")
	}
	requireTools(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	installModules(t, dir)

	root := filepath.Join(dir, "..", "..", "..")
	bin := buildBinaries(t, root)
	meteo := startFakeOpenMeteo(t, filepath.Join(bin, "fakes"))
	base, logs := startService(t, filepath.Join(bin, "companion"), meteo)

	out := filepath.Join(dir, "output")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"COMPANION_TEST_URL="+base,
		"COMPANION_TEST_API_KEY="+apiKey,
		"COMPANION_TEST_RESOURCE="+resource,
		"COMPANION_TEST_OUTPUT="+out,
		"COMPANION_TEST_CHROMIUM="+chromium,
		"NO_COLOR=1",
	)
	if testkit.Updating() {
		env = append(env, "COMPANION_TEST_DOCS_SCREENSHOT="+filepath.Join(root, "docs", "web-chat.png"))
	}
	if err := runNode(t, dir, env, "chat.test.mjs"); err != nil {
		t.Errorf("node --test chat.test.mjs: %v", err)
		t.Logf("the service's log (at most the last 60 lines):\n%s", logs.tail(60))
	}
	t.Logf("screenshots in %s", out)
}

// requireTools checks that node 20 or newer, npm and Chromium are there.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s is not on PATH", tool)
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		unavailable(t, "node --version failed: %v", err)
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		unavailable(t, "node %s is too old: playwright-core needs Node.js 20 or newer", v)
	}
	if _, err := os.Stat(chromium); err != nil {
		unavailable(t, "%s is missing (Debian's chromium package)", chromium)
	}
}

// installModules runs `npm ci` in dir when node_modules is missing or was
// installed from another package-lock.json, then records the lockfile's
// hash in node_modules.
func installModules(t *testing.T, dir string) {
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
	if !inCI() && os.Getenv("COMPANION_INSTALL") != "1" {
		unavailable(t, "%s is missing or was installed from another package-lock.json, and packages are installed only with CI=true or COMPANION_INSTALL=1",
			filepath.Join(dir, "node_modules"))
	}
	t.Logf("node_modules is missing or stale: npm ci in %s", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "npm ci failed: %v\n%s", err, out)
	}
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lockFile takes an exclusive lock on path and returns its release.
func lockFile(t *testing.T, path string) func() {
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

// buildBinaries builds companion and fakes from the module at root into a
// temporary folder.
func buildBinaries(t *testing.T, root string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not three folders up: %v", err)
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/companion", "./fakes/cmd/fakes")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startFakeOpenMeteo starts `fakes openmeteo` on a free loopback port and
// returns its base URL.
func startFakeOpenMeteo(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "openmeteo", "-addr", "127.0.0.1:0")
	found := make(chan string, 1)
	out := &lines{watch: func(line string) {
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
		t.Fatalf("the fake Open-Meteo printed no address within 15s\n%s", out.tail(20))
	}
	return ""
}

// startService starts `companion serve` on a free loopback port with a
// temporary SQLite database, an API key file with one key, the fake model
// paced by tokenDelay and the weather tool pointed at meteo; it returns
// the base URL once /health answers, and the service's log.
func startService(t *testing.T, bin, meteo string) (string, *lines) {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(dir, "api-keys.txt")
	if err := os.WriteFile(keys, []byte(apiKey+" "+resource+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve",
		"-addr", "127.0.0.1:0",
		"-database-url", "sqlite://"+filepath.Join(dir, "companion.db"),
		"-api-keys-file", keys,
		"-weather-geocoding-url", meteo,
		"-weather-forecast-url", meteo,
		"-fake-token-delay", tokenDelay,
		"-log-level", "info",
	)
	// The environment must not configure the service behind the flags' back.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPANION_") && !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := &lines{}
	listening := make(chan string, 1)
	logs.watch = func(line string) {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.Addr != "" {
			select {
			case listening <- l.Addr:
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
		t.Fatalf("companion serve exited before listening: %v\n%s", err, logs.tail(40))
	case <-time.After(30 * time.Second):
		t.Fatalf("companion serve did not listen within 30s\n%s", logs.tail(40))
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
			t.Fatalf("GET /health did not answer 200 within 15s (last error: %v)\n%s", err, logs.tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return base, logs
}

// start starts cmd and stops it when the test ends: SIGTERM, then SIGKILL
// after 10 seconds. The channel receives Wait's result.
func start(t *testing.T, cmd *exec.Cmd) <-chan error {
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

// runNode runs `node --test script` in dir, writing its output into the
// test log line by line as it comes.
func runNode(t *testing.T, dir string, env []string, script string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "--test-timeout=120000", script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	out := &lines{watch: func(line string) { t.Log(line) }}
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

// lines collects written text by lines; watch, when set, sees each
// complete line as it arrives.
type lines struct {
	mu      sync.Mutex
	partial []byte
	all     []string
	watch   func(string)
}

func (l *lines) Write(p []byte) (int, error) {
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

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(append(l.all, string(l.partial)), "\n")
}

// tail is the last n complete lines.
func (l *lines) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := l.all
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}
