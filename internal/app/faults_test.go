package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
)

// TestBadIDsAreRefusedAtTheEdge: an id holding NUL or another control
// character, wherever a request carries one (path, query, body), is a 400
// that names the field, on both stores; before, PostgreSQL answered 503 to
// NUL and logged an error, which any caller could use to raise the 5xx
// rate. A query whose pairs are joined by ";" is refused, not read with
// the pair dropped.
func TestBadIDsAreRefusedAtTheEdge(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		svc := apptest.Start(t, func(c *app.Config) { c.Storage.DatabaseURL = db })
		if res, b := svc.Post(t, "/api/agents/companionAgent/generate", `{"threadId":"t","resourceId":"r","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
			t.Fatalf("a turn: %d %s", res.StatusCode, b)
		}
		threads := "/api/memory/threads"
		for _, tc := range []struct {
			method, path, body string
			field              string
		}{
			{"GET", threads + "/t%001?resourceId=r", "", "threadId"},
			{"GET", threads + "/t%001/messages?resourceId=r", "", "threadId"},
			{"PATCH", threads + "/t%001?resourceId=r", `{"title":"x"}`, "threadId"},
			{"DELETE", threads + "/t%001?resourceId=r", "", "threadId"},
			{"GET", threads + "/t%0A1?resourceId=r", "", "threadId"},
			{"GET", threads + "?resourceId=own%00er", "", "resourceId"},
			{"GET", threads + "/t?resourceId=own%00er", "", "resourceId"},
			{"GET", "/api/memory/usage?resourceId=own%00er", "", "resourceId"},
			{"POST", "/api/agents/companionAgent/generate", `{"threadId":"t\u0000","resourceId":"r","messages":[{"role":"user","content":"Hi"}]}`, "threadId"},
			{"POST", "/api/agents/companionAgent/generate", `{"threadId":"t","resourceId":"r\u0007","messages":[{"role":"user","content":"Hi"}]}`, "resourceId"},
			{"POST", "/api/agents/companionAgent/stream", `{"threadId":"t","resourceId":"r","messages":[{"id":"m\u0000","role":"user","content":"Hi"}]}`, "messages[0].id"},
		} {
			res, b := svc.Do(t, tc.method, tc.path, tc.body)
			if res.StatusCode != 400 || !strings.Contains(string(b), tc.field+" must not contain control characters") {
				t.Errorf("%s %s: %d %s, want 400 naming %s", tc.method, tc.path, res.StatusCode, b, tc.field)
			}
		}
		for _, tc := range []struct{ path, want string }{
			{threads + "?resourceId=r&orderBy=id;drop", "the query does not parse"},
			{threads + "?resourceId=r&sortDirection=bogus", "sortDirection must be"},
			{threads + "/t/messages?resourceId=r;x", "the query does not parse"},
		} {
			res, b := svc.Do(t, "GET", tc.path, "")
			if res.StatusCode != 400 || !strings.Contains(string(b), tc.want) {
				t.Errorf("GET %s: %d %s, want 400 saying %q", tc.path, res.StatusCode, b, tc.want)
			}
		}
	})
}

// TestDatabaseOutage: PostgreSQL crashes in the middle of a streamed turn.
// While it is down every route that needs it answers 503 with Retry-After
// (and /ready says so); once it is back the service answers again within
// seconds, and the thread whose turn the crash broke takes a new turn at
// once: its lease, left behind, names a presence that died with the
// crash. What the user sent before the crash is kept.
func TestDatabaseOutage(t *testing.T) {
	pg := pgtest.Private(t)
	svc := apptest.Start(t, func(c *app.Config) {
		c.Storage.DatabaseURL = pg.URL
		c.Model.FakeTokenDelay = 20 * time.Millisecond
		c.Storage.LockWait = 5 * time.Second
	})
	generate := func(thread, text string) (*http.Response, []byte) {
		return svc.Post(t, "/api/agents/companionAgent/generate",
			`{"threadId":"`+thread+`","resourceId":"r","messages":[{"role":"user","content":"`+text+`"}]}`)
	}
	if res, b := generate("before", "Hello"); res.StatusCode != 200 {
		t.Fatalf("a turn before the outage: %d %s", res.StatusCode, b)
	}
	res, err := http.Post(svc.URL+"/api/agents/companionAgent/stream", "application/json",
		strings.NewReader(`{"threadId":"mid","resourceId":"r","messages":[{"role":"user","content":"Tell me a long story."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream before the outage: %v", err)
		}
		if strings.Contains(line, `"type":"text"`) {
			break
		}
	}

	pg.Crash(t)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"type":"error"`) || !strings.Contains(string(rest), `"type":"run-finish"`) {
		t.Fatalf("the stream the outage broke ends with %.400s", rest)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/api/agents/companionAgent/generate", `{"threadId":"during","resourceId":"r","messages":[{"role":"user","content":"Hi"}]}`},
		{"POST", "/api/agents/companionAgent/stream", `{"threadId":"during","resourceId":"r","messages":[{"role":"user","content":"Hi"}]}`},
		{"GET", "/api/memory/threads?resourceId=r", ""},
		{"GET", "/api/memory/threads/before/messages?resourceId=r", ""},
		{"GET", "/api/memory/usage?resourceId=r", ""},
		{"GET", "/ready", ""},
	} {
		res, b := svc.Do(t, tc.method, tc.path, tc.body)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s during the outage: %d (Retry-After %q) %s, want 503 with Retry-After", tc.method, tc.path, res.StatusCode, res.Header.Get("Retry-After"), b)
		}
	}

	pg.Start(t)
	back := time.Now()
	for {
		res, b := generate("mid", "Are you still there?")
		if res.StatusCode == 200 {
			if !strings.Contains(string(b), `Earlier you mentioned: \"Tell me a long story.\"`) {
				t.Fatalf("the turn after the outage does not see the message sent before it: %s", b)
			}
			break
		}
		if res.StatusCode != 503 || time.Since(back) > 10*time.Second {
			t.Fatalf("a turn on the broken thread %s after the outage: %d %s", time.Since(back).Round(time.Millisecond), res.StatusCode, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the broken thread took a turn %s after the database was back", time.Since(back).Round(time.Millisecond))
	if res, b := svc.Do(t, "GET", "/ready", ""); res.StatusCode != 200 {
		t.Fatalf("/ready after the outage: %d %s", res.StatusCode, b)
	}
}

// TestSmallerFindings: the probe's smaller findings, each refused with a
// 4xx that says why. /chat held older messages to no rule (any role, any
// number); a body declared gzip-compressed was read as plain text, so a
// proxy that inflates it and this service would read two bodies.
func TestSmallerFindings(t *testing.T) {
	svc := apptest.Start(t, nil)
	chat := func(msgs string) (*http.Response, []byte) {
		return svc.Post(t, "/api/agents/companionAgent/chat", `{"id":"c1","resourceId":"r","messages":[`+msgs+`]}`)
	}
	msg := func(role, text string) string {
		return `{"id":"` + text + `","role":"` + role + `","parts":[{"type":"text","text":"` + text + `"}]}`
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = msg("user", fmt.Sprint("m", i))
	}
	for _, tc := range []struct {
		name, msgs, want string
	}{
		{"a tool message", msg("tool", "t") + "," + msg("user", "u"), `messages[0].role must be \"user\", \"assistant\" or \"system\", not \"tool\"`},
		{"an unknown role", msg("hacker", "h") + "," + msg("user", "u"), `not \"hacker\"`},
		{"too many messages", strings.Join(many, ","), "messages holds 101 messages, more than the limit of 100 (-max-messages)"},
	} {
		res, b := chat(tc.msgs)
		if res.StatusCode != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("chat with %s: %d %.300s, want 400 saying %s", tc.name, res.StatusCode, b, tc.want)
		}
	}
	if res, b := chat(msg("assistant", "a") + "," + msg("user", "u")); res.StatusCode != 200 {
		t.Errorf("a chat within the rules: %d %.300s", res.StatusCode, b)
	}

	body := `{"threadId":"enc","resourceId":"r","messages":[{"role":"user","content":"Hi"}]}`
	for _, tc := range []struct {
		encoding string
		status   int
	}{{"gzip", 415}, {"br", 415}, {"identity", 200}} {
		res, b := svc.DoHeader(t, "POST", "/api/agents/companionAgent/generate", body, http.Header{"Content-Encoding": {tc.encoding}})
		if res.StatusCode != tc.status || (tc.status == 415 && !strings.Contains(string(b), "send the body uncompressed")) {
			t.Errorf("a plain body declared %s: %d %s, want %d", tc.encoding, res.StatusCode, b, tc.status)
		}
	}
}
