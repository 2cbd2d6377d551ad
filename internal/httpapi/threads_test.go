package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

func TestThreadsAPI(t *testing.T) {
	// Without titles: the scenarios check the titles the requests set.
	svc := apptest.Start(t, func(c *app.Config) { c.Memory.Titles = false })
	run := func(thread, resource, msg string) {
		t.Helper()
		b := fmt.Sprintf(`{"threadId":%q,"resourceId":%q,"messages":[{"role":"user","content":%q}]}`, thread, resource, msg)
		if res, body := svc.Post(t, generatePath, b); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	}
	for i := range 3 {
		run(fmt.Sprint("thread-", i), "u1", "Hello")
	}
	run("thread-1", "u1", "Again") // thread-1 is the most recently active
	run("with space/and slash", "u1", "Hi")
	run("other", "u2", "Hi")

	threads := "/api/memory/threads"
	scenarios := []scenario{
		{name: "list", method: "GET", path: threads + "?resourceId=u1&agentId=companionAgent", status: 200,
			want: []string{`"total":4`, `"page":0`, `"perPage":100`, `"hasMore":false`}},
		{name: "list a page", method: "GET", path: threads + "?resourceId=u1&page=1&perPage=3", status: 200,
			want: []string{`"total":4`, `"page":1`, `"perPage":3`, `"hasMore":false`, `"id":"thread-0"`}},
		{name: "list: first page has more", method: "GET", path: threads + "?resourceId=u1&perPage=3", status: 200, want: []string{`"hasMore":true`}},
		{name: "list without resourceId", method: "GET", path: threads, status: 400,
			error: "resourceId is required: threads are listed per resource, e.g. ?resourceId=user-1"},
		{name: "list for another agent", method: "GET", path: threads + "?resourceId=u1&agentId=otherAgent", status: 404,
			error: `agent "otherAgent" not found: the only agent is companionAgent`},
		{name: "negative page", method: "GET", path: threads + "?resourceId=u1&page=-1", status: 400, error: `page must be a whole number from 0, not "-1"`},
		{name: "page not a number", method: "GET", path: threads + "?resourceId=u1&page=two", status: 400, error: `page must be a whole number from 0, not "two"`},
		{name: "perPage zero", method: "GET", path: threads + "?resourceId=u1&perPage=0", status: 400, error: `perPage must be a whole number from 1 to 1000, not "0"`},
		{name: "perPage too big", method: "GET", path: threads + "?resourceId=u1&perPage=1001", status: 400, error: `perPage must be a whole number from 1 to 1000, not "1001"`},
		{name: "bad orderBy", method: "GET", path: threads + "?resourceId=u1&orderBy=title", status: 400, error: `orderBy must be "createdAt" or "updatedAt", not "title"`},
		{name: "bad sortDirection", method: "GET", path: threads + "?resourceId=u1&sortDirection=up", status: 400, error: `sortDirection must be "DESC" or "ASC", not "up"`},
		{name: "get", method: "GET", path: threads + "/thread-0?resourceId=u1", status: 200,
			want: []string{`"id":"thread-0"`, `"resourceId":"u1"`, `"title":""`, `"metadata":{}`, `"createdAt":"`, `"updatedAt":"`}},
		{name: "get an escaped id", method: "GET", path: threads + "/with%20space%2Fand%20slash?resourceId=u1", status: 200, want: []string{`"id":"with space/and slash"`}},
		{name: "get a missing thread", method: "GET", path: threads + "/nope?resourceId=u1", status: 404, error: `thread "nope" not found`},
		{name: "messages", method: "GET", path: threads + "/thread-1/messages?resourceId=u1", status: 200,
			want: []string{`"total":4`, `"hasMore":false`, `"role":"user"`, `"text":"Again"`}},
		{name: "messages page", method: "GET", path: threads + "/thread-1/messages?resourceId=u1&page=1&perPage=3", status: 200,
			want: []string{`"total":4`, `"page":1`, `"hasMore":false`, `"role":"assistant"`}},
		{name: "messages of a missing thread", method: "GET", path: threads + "/nope/messages?resourceId=u1", status: 404, error: `thread "nope" not found`},
		{name: "messages: bad perPage", method: "GET", path: threads + "/thread-1/messages?resourceId=u1&perPage=x", status: 400, error: `perPage must be a whole number from 1 to 1000, not "x"`},
		{name: "update", method: "PATCH", path: threads + "/thread-2?resourceId=u1", body: `{"title":"Hello thread","metadata":{"topic":"greetings","n":1}}`, status: 200,
			want: []string{`"title":"Hello thread"`, `"metadata":{"n":1,"topic":"greetings"}`}},
		{name: "update: nothing to change", method: "PATCH", path: threads + "/thread-2?resourceId=u1", body: `{}`, status: 400, error: `nothing to change: send "title" or "metadata"`},
		{name: "update: metadata not an object", method: "PATCH", path: threads + "/thread-2?resourceId=u1", body: `{"metadata":[1]}`, status: 400,
			error: `metadata must be a JSON object, e.g. {"topic": "travel"}`},
		{name: "update: title not a string", method: "PATCH", path: threads + "/thread-2?resourceId=u1", body: `{"title":5}`, status: 400, error: `title must be a string, not a number`},
		{name: "update: another owner", method: "PATCH", path: threads + "/thread-2?resourceId=u1", body: `{"title":"x","resourceId":"u2"}`, status: 400,
			error: `resourceId cannot be changed: a thread belongs to the resource that created it`},
		{name: "update: not JSON", method: "PATCH", path: threads + "/thread-2?resourceId=u1", body: `{`, status: 400},
		{name: "update a missing thread", method: "PATCH", path: threads + "/nope?resourceId=u1", body: `{"title":"x"}`, status: 404, error: `thread "nope" not found`},
		{name: "delete a missing thread", method: "DELETE", path: threads + "/nope?resourceId=u1", status: 404, error: `thread "nope" not found`},
		{name: "wrong method", method: "PUT", path: threads + "/thread-0", status: 405, error: `method PUT is not allowed on /api/memory/threads/thread-0: use GET, PATCH, DELETE`},
		{name: "thread id too long", method: "GET", path: threads + "/" + strings.Repeat("x", 300) + "?resourceId=u1", status: 400, error: `threadId is longer than 256 bytes, the limit (-max-id-bytes)`},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			res, b := svc.Do(t, sc.method, sc.path, sc.body)
			if res.StatusCode != sc.status {
				t.Fatalf("status %d, want %d\n%s", res.StatusCode, sc.status, b)
			}
			if sc.error != "" {
				var e map[string]any
				if err := json.Unmarshal(b, &e); err != nil || len(e) != 1 || e["error"] != sc.error {
					t.Fatalf("body %s\nwant {\"error\": %q}", b, sc.error)
				}
			}
			for _, w := range sc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("body lacks %s\n%s", w, b)
				}
			}
		})
	}

	list := func(query string) []string {
		t.Helper()
		res, b := svc.Do(t, "GET", threads+"?resourceId=u1"+query, "")
		var l api.ThreadList
		if res.StatusCode != 200 || json.Unmarshal(b, &l) != nil {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		var ids []string
		for _, th := range l.Threads {
			ids = append(ids, th.ID)
		}
		return ids
	}
	if got := strings.Join(list(""), ","); got != "with space/and slash,thread-2,thread-1,thread-0" {
		t.Errorf("newest first: %s", got)
	}
	if got := strings.Join(list("&sortDirection=asc"), ","); got != "thread-0,thread-1,thread-2,with space/and slash" {
		t.Errorf("oldest first: %s", got)
	}
	// thread-2 was updated last (PATCH), thread-1 had the last turn before it.
	if got := strings.Join(list("&orderBy=updatedAt"), ","); got != "thread-2,with space/and slash,thread-1,thread-0" {
		t.Errorf("by activity: %s", got)
	}

	// Delete removes the thread and its messages; the id can start afresh.
	res, b := svc.Do(t, "DELETE", threads+"/thread-1?resourceId=u1", "")
	if res.StatusCode != 200 || string(b) != `{"result":"Thread deleted"}`+"\n" {
		t.Fatalf("delete: %d %s", res.StatusCode, b)
	}
	if res, _ := svc.Do(t, "GET", threads+"/thread-1/messages?resourceId=u1", ""); res.StatusCode != 404 {
		t.Fatalf("messages after delete: %d", res.StatusCode)
	}
	run("thread-1", "u2", "Mine now")
	res, b = svc.Do(t, "GET", threads+"/thread-1/messages?resourceId=u2", "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"total":2`) {
		t.Fatalf("re-created thread: %d %s", res.StatusCode, b)
	}
}

func TestReady(t *testing.T) {
	svc := apptest.Start(t, nil)
	if res, b := svc.Do(t, "GET", "/ready", ""); res.StatusCode != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("ready: %d %s", res.StatusCode, b)
	}
	// With the database closed, the service is not ready.
	_ = svc.App.Close()
	res, b := svc.Do(t, "GET", "/ready", "")
	if res.StatusCode != 503 || !strings.Contains(string(b), "not ready: the database does not answer") {
		t.Fatalf("ready without a database: %d %s", res.StatusCode, b)
	}
}
