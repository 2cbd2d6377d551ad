package app_test

import (
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

// TestBadIDsAreRefusedAtTheEdge: an id holding NUL or another control
// character, wherever a request carries one (path, query, body), is a 400
// that names the field, on both stores; before, PostgreSQL answered 503 to
// NUL and logged an error, which any caller could use to raise the 5xx
// rate. A query whose pairs are joined by ";" is refused, not read with
// the pair dropped.
func TestBadIDsAreRefusedAtTheEdge(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		svc := apptest.Start(t, func(c *app.Config) { c.DatabaseURL = db })
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
