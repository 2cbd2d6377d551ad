// Package testkit holds helpers shared by the project's tests.
//
// It registers the -update flag, so `go test ./... -update` works in every
// package: a test binary that does not know a flag given to `go test ./...`
// fails. Every package with tests imports testkit, if only for that.
package testkit

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/companionhq/companion/internal/testkit/throwaway"
)

// update is registered once per test binary; flag state is how `go test`
// hands options to tests, so this is the one package-level variable we keep.
var update = flag.Bool("update", false, "rewrite golden files with the output the tests produce")

// Updating reports whether the test run was asked to rewrite golden files.
func Updating() bool { return *update }

// Golden compares got with the file at path. With -update it rewrites the
// file instead. A missing file fails the test with a hint to run -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run `go test ./... -update` to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run `go test ./... -update` and review the diff):\n%s", path, Diff(want, got))
	}
}

// Diff returns a short line diff of want and got: the first lines that differ.
func Diff(want, got []byte) string {
	w := bytes.Split(want, []byte("\n"))
	g := bytes.Split(got, []byte("\n"))
	var out bytes.Buffer
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b []byte
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if bytes.Equal(a, b) {
			continue
		}
		if i < len(w) {
			out.WriteString("- " + string(a) + "\n")
		}
		if i < len(g) {
			out.WriteString("+ " + string(b) + "\n")
		}
		if shown++; shown == 10 {
			out.WriteString("...\n")
			break
		}
	}
	return out.String()
}

// Buffer collects output written from several goroutines, such as a
// server's log or a child process's output, for a test to read.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// InCI reports whether the tests run in CI (CI=true), where every
// prerequisite must be there.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable fails the test under CI=true, where what it needs must be
// there, and skips it anywhere else; the message says what is missing, and
// setup how to provide it.
func Unavailable(t testing.TB, missing, setup string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s: required in CI (CI=true; %s)", missing, setup)
	}
	t.Skipf("skipping: %s (%s)", missing, setup)
}

// FreeAddr is a loopback host:port nothing listens on (a moment ago; see
// throwaway.FreePort).
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := throwaway.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// LoggedAddr is the address in line when line is the service's JSON log
// line with message msg and an "addr" (as "listening" and "serving
// metrics" are): services under test listen on port 0 and say where.
func LoggedAddr(line []byte, msg string) (string, bool) {
	var l struct{ Msg, Addr string }
	if json.Unmarshal(line, &l) != nil || l.Msg != msg || l.Addr == "" {
		return "", false
	}
	return l.Addr, true
}

// ReadYAML reads the YAML file at path as a map, failing the test when it
// cannot.
func ReadYAML(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// Dig walks what ReadYAML (or encoding/json) decoded along keys: map keys,
// and list indexes as numbers. A missing key or index gives nil.
func Dig(v any, keys ...string) any {
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// builds are the folders Build made, by its arguments: each set is built
// once per test binary, however many tests ask for it.
var builds sync.Map // string -> *build

type build struct {
	once sync.Once
	dir  string
	err  error
}

// Build builds the packages pkgs (as go build names them, from the folder
// dir) with ldflags into a folder removed when the test binary exits, and
// returns the folder; the binaries are named after their packages. The same
// arguments give the same folder, built once.
func Build(t testing.TB, dir, ldflags string, pkgs ...string) string {
	t.Helper()
	key := strings.Join(append([]string{dir, ldflags}, pkgs...), "\x00")
	v, _ := builds.LoadOrStore(key, &build{})
	b := v.(*build)
	b.once.Do(func() {
		if b.dir, b.err = throwaway.TempDir("build"); b.err != nil {
			return
		}
		args := []string{"build", "-o", b.dir + string(filepath.Separator)}
		if ldflags != "" {
			args = append(args, "-ldflags", ldflags)
		}
		cmd := exec.Command("go", append(args, pkgs...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.dir
}
