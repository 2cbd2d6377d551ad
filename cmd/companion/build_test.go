package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestVersion: `companion version`, `--version` and `-version` print the
// version and commit.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		var out strings.Builder
		err := run(context.Background(), []string{arg}, func(string) string { return "" }, &out, io.Discard)
		if err != nil || !strings.HasPrefix(out.String(), "companion ") || !strings.Contains(out.String(), "(commit ") {
			t.Errorf("%s: %v %q", arg, err, out.String())
		}
	}
}

// TestVersionStamped builds the binary the way `make build` does and reads
// the stamp back.
func TestVersionStamped(t *testing.T) {
	bin := buildCompanion(t) // stamped as `make build` stamps it
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "companion v9.8.7-test (commit 0123abcd)\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestLogDurations: durations in the log are Go duration strings, not
// nanoseconds.
func TestLogDurations(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, done, logs := started(t, ctx, nil, "-lock-wait", "30s", "-shutdown-grace", "1m30s")
	cancel()
	<-done
	var listening map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == "listening" {
			listening = l
		}
	}
	if listening == nil {
		t.Fatalf("no listening line:\n%s", logs)
	}
	for field, want := range map[string]string{"lock_wait": "30s", "shutdown_grace": "1m30s"} {
		if got := listening[field]; got != want {
			t.Errorf("%s: %#v, want %q", field, got, want)
		}
	}
	// The same for a duration in a group.
	if got := readableDurations([]string{"g"}, slog.Duration("d", 1500*time.Microsecond)); got.Value.Kind() != slog.KindString || got.Value.String() != "1.5ms" {
		t.Errorf("got %v", got)
	}
}

// TestNoTestCodeLinked: the service links no test support: neither the
// testing package nor net/http/httptest (which go-vcr's packages would
// bring), nor any fake of fakes/.
func TestNoTestCodeLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the binary's packages with the go command")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		if p == "testing" || strings.HasPrefix(p, "testing/") || p == "net/http/httptest" ||
			strings.HasPrefix(p, "github.com/companionhq/companion/fakes/") {
			t.Errorf("the service links %s", p)
		}
	}
}
