//go:build linux

package proc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnnounced(t *testing.T) {
	if u, ok := AnnouncedByService(`{"time":"x","level":"INFO","msg":"listening","addr":"127.0.0.1:4111"}`); !ok || u != "http://127.0.0.1:4111" {
		t.Errorf("service: %q %v", u, ok)
	}
	if _, ok := AnnouncedByService(`{"msg":"request","addr":"127.0.0.1:4111"}`); ok {
		t.Error("service: a request log line taken for the listening one")
	}
	if u, ok := AnnouncedByFakes("openai listening on http://127.0.0.1:8092"); !ok || u != "http://127.0.0.1:8092" {
		t.Errorf("fakes: %q %v", u, ok)
	}
}

// TestEnv: the service's and the providers' settings of the caller's
// environment do not reach the child; what the harness adds does.
func TestEnv(t *testing.T) {
	t.Setenv("COMPANION_ADDR", "127.0.0.1:1")
	t.Setenv("OPENAI_API_KEY", "secret")
	env := strings.Join(Env("OPENAI_API_KEY=bench"), "\n")
	if strings.Contains(env, "COMPANION_ADDR") || strings.Contains(env, "secret") || !strings.Contains(env, "OPENAI_API_KEY=bench") {
		t.Errorf("environment: %s", env)
	}
}

// TestStart: a child that announces its URL is running once Start
// returns, its output is in the log, and Stop ends it; one that exits
// before announcing is an error that shows its log.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	announce := func(line string) (string, bool) { return strings.CutPrefix(line, "at ") }
	p, err := Start(context.Background(), "sh", filepath.Join(dir, "ok.log"), announce, Env(), "/bin/sh", "-c", "echo hello; echo at http://x; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != "http://x" {
		t.Errorf("URL %q", p.URL)
	}
	if exited, _ := p.Exited(); exited {
		t.Error("exited before Stop")
	}
	p.Stop()
	if exited, _ := p.Exited(); !exited {
		t.Error("running after Stop")
	}
	if b, _ := os.ReadFile(p.Log); !strings.Contains(string(b), "hello") {
		t.Errorf("log: %q", b)
	}
	_, err = Start(context.Background(), "sh", filepath.Join(dir, "fail.log"), announce, Env(), "/bin/sh", "-c", "echo broken; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("a child that exits first: %v", err)
	}
}
