package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	"github.com/companionhq/companion/internal/memory/sqlite"
	"github.com/companionhq/companion/internal/testkit"
)

// TestMemoryEndToEnd runs the real binary: two processes sharing one
// PostgreSQL, and a process killed with SIGKILL in the middle of a stream.
func TestMemoryEndToEnd(t *testing.T) {
	bin := buildCompanion(t)
	t.Run("scale out", func(t *testing.T) { testScaleOut(t, bin) })
	t.Run("kill -9 mid-stream", func(t *testing.T) {
		t.Run("sqlite", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data", "companion.db")
			testKill(t, bin, "sqlite://"+path)
			// The file is whole: the store opens it, and SQLite finds
			// nothing wrong in it.
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var ok string
			if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
				t.Fatalf("integrity check: %q %v", ok, err)
			}
		})
		t.Run("postgres", func(t *testing.T) { testKill(t, bin, pgtest.URL(t)) })
	})
}

// proc is a running companion process.
type proc struct {
	cmd  *exec.Cmd
	url  string
	logs *logLines
	done chan struct{}
}

func startProc(t *testing.T, bin string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &logLines{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			if a, ok := testkit.LoggedAddr(sc.Bytes(), "listening"); ok {
				addr <- a
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		t.Fatalf("the process exited before listening:\n%s", p.logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("the process did not listen:\n%s", p.logs)
	}
	return p
}

func (p *proc) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	res, err := http.Post(p.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func (p *proc) messages(t *testing.T, thread, resource string) []api.UIMessage {
	t.Helper()
	return messagesOf(t, p.url, thread, resource)
}

// messagesOf reads a thread's messages from the service at url.
func messagesOf(t *testing.T, url, thread, resource string) []api.UIMessage {
	t.Helper()
	res, err := http.Get(url + "/api/memory/threads/" + thread + "/messages?resourceId=" + resource)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var l api.MessageList
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil || res.StatusCode != 200 {
		t.Fatalf("messages of %s: %d %v", thread, res.StatusCode, err)
	}
	return l.Messages
}

func turnBody(thread, resource, text string) string {
	b, _ := json.Marshal(api.GenerateRequest{ThreadID: thread, ResourceID: resource, Messages: []api.Message{{Role: "user", Content: text}}})
	return string(b)
}

// testScaleOut: a thread started on one process continues on the other,
// and turns sent to both at once never interleave.
func testScaleOut(t *testing.T, bin string) {
	db := pgtest.URL(t)
	env := []string{"COMPANION_DATABASE_URL=" + db, "COMPANION_FAKE_TOKEN_DELAY=1ms"}
	a, b := startProc(t, bin, env...), startProc(t, bin, env...)

	if status, body := a.post(t, "/api/agents/companionAgent/generate", turnBody("sam", "u", "My name is Sam.")); status != 200 {
		t.Fatalf("turn on A: %d %s", status, body)
	}
	status, body := b.post(t, "/api/agents/companionAgent/generate", turnBody("sam", "u", "What is a good hobby for me?"))
	if status != 200 || !strings.Contains(string(body), `Earlier you mentioned: \"My name is Sam.\"`) {
		t.Fatalf("turn on B does not recall the turn on A: %d %s", status, body)
	}

	const n = 20
	apitest.TurnsAtOnce(t, n, "shared", "u", a.url, b.url)
	apitest.CheckTurnsInOrder(t, b.messages(t, "shared", "u"), n)
}

// testKill: SIGKILL in the middle of a stream leaves the database
// consistent: after a restart the thread reads back with the user's message
// and no half-written reply, and the next turn works. With the lock wait at
// 5 s, far below the 30 s a lease lasts, the next turn is answered only if
// the dead instance let go of the thread at once (on PostgreSQL, its
// leases die with its connections).
func testKill(t *testing.T, bin, db string) {
	env := []string{"COMPANION_DATABASE_URL=" + db, "COMPANION_FAKE_TOKEN_DELAY=30ms", "COMPANION_LOCK_WAIT=5s"}
	p := startProc(t, bin, env...)
	res, err := http.Post(p.url+"/api/agents/companionAgent/stream", "application/json", strings.NewReader(turnBody("k", "r", "Tell me a long story.")))
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(res.Body)
	texts := 0
	for texts < 3 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if strings.Contains(line, `"type":"text"`) {
			texts++
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	res.Body.Close()

	p = startProc(t, bin, env...)
	stored := p.messages(t, "k", "r")
	if len(stored) != 1 || stored[0].Role != "user" || apitest.PartsText(stored[0]) != "Tell me a long story." || !stored[0].Metadata.Pending {
		t.Fatalf("after the kill the thread holds %+v, want the user's message, pending", stored)
	}
	status, body := p.post(t, "/api/agents/companionAgent/generate", turnBody("k", "r", "Are you still there?"))
	if status != 200 || !strings.Contains(string(body), `Earlier you mentioned: \"Tell me a long story.\"`) {
		t.Fatalf("the next turn: %d %s", status, body)
	}
	var roles []string
	for _, m := range p.messages(t, "k", "r") {
		if m.Metadata.Pending {
			t.Fatalf("message %q still pending", apitest.PartsText(m))
		}
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, " ") != "user user assistant" {
		t.Fatalf("the thread holds %v", roles)
	}
}
