package turn_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

const memoryPath = "/api/memory"

// workingMemory reads the working memory a thread of resource sees.
func (c client) workingMemory(thread, resource string) api.WorkingMemory {
	c.t.Helper()
	status, b := c.do("GET", fmt.Sprintf("%s/threads/%s/working-memory?agentId=companionAgent&resourceId=%s", memoryPath, thread, url.QueryEscape(resource)), "")
	if status != 200 {
		c.t.Fatalf("working memory: %d %s", status, b)
	}
	var wm api.WorkingMemory
	if err := json.Unmarshal(b, &wm); err != nil {
		c.t.Fatal(err)
	}
	return wm
}

// generate sends one user message to thread as resource and returns the
// generate body.
func (c client) generate(thread, resource, text string) api.GenerateResponse {
	c.t.Helper()
	return c.generateBody(reqBody(thread, resource, user(text)))
}

// system is the instructions the model got in the first step of g.
func system(g api.GenerateResponse) string {
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	raw, _ := json.Marshal(g.Steps[0].Request.Body)
	_ = json.Unmarshal(raw, &body)
	if len(body.Messages) == 0 || body.Messages[0].Role != "system" {
		return ""
	}
	return body.Messages[0].Content
}

// TestWorkingMemory: "Remember ..." makes the model update working memory
// through its tool: tool events, never text, in the stream; the block is
// the resource's, shown to the model in every thread; Mastra's route reads
// it; a person's edit through the route is a new version, and an earlier
// version can be restored.
func TestWorkingMemory(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		wm := c.workingMemory("t1", "u1")
		if wm.WorkingMemory != nil || wm.Source != "resource" || wm.ThreadExists || wm.WorkingMemoryTemplate.Format != "markdown" ||
			!strings.Contains(string(wm.WorkingMemoryTemplate.Content), "About the user") {
			t.Fatalf("before anything is kept: %+v", wm)
		}

		status, b := c.do("POST", streamPath, reqBody("t1", "u1", user("Remember that my sister is called Ana.")))
		events, err := apitest.ReadSSE(strings.NewReader(string(b)))
		if status != 200 || err != nil {
			t.Fatalf("stream: %d %v", status, err)
		}
		if err := apitest.Check(events); err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, ev := range events {
			if ev.Type == "tool-call" && strings.Contains(string(ev.Payload), `"toolName":"updateWorkingMemory"`) {
				calls++
			}
		}
		text := apitest.Text(events)
		if calls != 1 || strings.Contains(text, "working_memory") || strings.Contains(text, "updateWorkingMemory") ||
			!strings.Contains(text, `I'll remember that: "my sister is called Ana".`) {
			t.Fatalf("%d calls of the tool; the text: %s", calls, text)
		}

		wm = c.workingMemory("t1", "u1")
		if wm.WorkingMemory == nil || !strings.Contains(*wm.WorkingMemory, "- my sister is called Ana") || !strings.Contains(*wm.WorkingMemory, "# About the user") ||
			wm.Version != 1 || !wm.ThreadExists {
			t.Fatalf("after the update: %+v", wm)
		}
		// Another thread of the resource: the model sees the block.
		g := c.generate("t2", "u1", "How are you?")
		if sys := system(g); !strings.Contains(sys, "<working_memory>") || !strings.Contains(sys, "- my sister is called Ana") {
			t.Fatalf("the model's instructions in another thread: %s", sys)
		}
		// Another resource's threads do not.
		if sys := system(c.generate("t3", "u2", "How are you?")); strings.Contains(sys, "Ana") {
			t.Fatalf("another resource's model sees: %s", sys)
		}

		// A person's edit, then the model's block restored.
		status, b = c.do("POST", memoryPath+"/threads/t2/working-memory?agentId=companionAgent", `{"workingMemory":"# About the user\n- Name: Sam\n","resourceId":"u1"}`)
		if status != 200 || !strings.Contains(string(b), `"success":true`) || !strings.Contains(string(b), `"version":2`) {
			t.Fatalf("update: %d %s", status, b)
		}
		status, b = c.do("GET", memoryPath+"/threads/t2/working-memory/versions?resourceId=u1", "")
		var vs api.WorkingMemoryVersions
		if status != 200 || json.Unmarshal(b, &vs) != nil || len(vs.Versions) != 2 || vs.Versions[0].Version != 2 || !strings.Contains(vs.Versions[1].WorkingMemory, "Ana") {
			t.Fatalf("versions: %d %s", status, b)
		}
		status, b = c.do("POST", memoryPath+"/threads/t2/working-memory/restore?resourceId=u1", `{"version":1}`)
		if status != 200 || !strings.Contains(string(b), "my sister is called Ana") || !strings.Contains(string(b), `"version":3`) {
			t.Fatalf("restore: %d %s", status, b)
		}
		// Refusals.
		for _, tc := range []struct {
			method, path, body string
			status             int
			want               string
		}{
			{"GET", memoryPath + "/threads/t1/working-memory?resourceId=u2", "", 403, "belongs to another resource"},
			{"POST", memoryPath + "/threads/t2/working-memory?resourceId=u1", `{"workingMemory":"` + strings.Repeat("x", 20000) + `"}`, 413, "more than its limit of 16384 (-working-memory-max-bytes)"},
			{"POST", memoryPath + "/threads/t2/working-memory?resourceId=u1", `{}`, 400, "workingMemory is required"},
			{"POST", memoryPath + "/threads/t2/working-memory/restore?resourceId=u1", `{"version":99}`, 404, "no version 99"},
		} {
			status, b := c.do(tc.method, tc.path, tc.body)
			if status != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%s %s: %d %.200s, want %d saying %q", tc.method, tc.path, status, b, tc.status, tc.want)
			}
		}
	})
}

// TestWorkingMemoryUpdatesAtOnce: two threads of one resource whose turns
// update working memory at the same time lose neither update.
func TestWorkingMemoryUpdatesAtOnce(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, func(c *app.Config) { c.Model.FakeTokenDelay = 5 * time.Millisecond })
		facts := []string{"my sister is called Ana", "I have a dog named Max", "I start a new job on Monday", "I do not eat meat"}
		var wg sync.WaitGroup
		for i, f := range facts {
			wg.Go(func() { c.generate(fmt.Sprint("at-once-", i), "u1", "Remember that "+f+".") })
		}
		wg.Wait()
		wm := c.workingMemory("at-once-0", "u1")
		for _, f := range facts {
			if wm.WorkingMemory == nil || !strings.Contains(*wm.WorkingMemory, "- "+f) {
				t.Fatalf("working memory lost %q:\n%v", f, wm.WorkingMemory)
			}
		}
	})
}

// TestWorkingMemorySchema: with a JSON Schema, the model's updates are
// merged into the object: what it leaves out is kept.
func TestWorkingMemorySchema(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "user.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"name":{"type":"string"},"notes":{"type":"array","items":{"type":"string"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, apptest.SQLiteURL(t), func(c *app.Config) { c.Memory.WorkingMemoryTemplateFile = schema })
	if wm := c.workingMemory("s1", "u1"); wm.WorkingMemoryTemplate.Format != "json" || string(wm.WorkingMemoryTemplate.Content) != `{"name":"","notes":[]}` {
		t.Fatalf("the template: %+v %s", wm, wm.WorkingMemoryTemplate.Content)
	}
	if status, b := c.do("POST", memoryPath+"/threads/s1/working-memory?resourceId=u1", `{"workingMemory":"{\"name\":\"Sam\"}"}`); status != 200 {
		t.Fatalf("update: %d %s", status, b)
	}
	c.generate("s1", "u1", "Remember that I love jazz.")
	c.generate("s2", "u1", "Remember that I run on Sundays.")
	wm := c.workingMemory("s2", "u1")
	if wm.WorkingMemory == nil || *wm.WorkingMemory != `{"name":"Sam","notes":["I love jazz","I run on Sundays"]}` {
		t.Fatalf("merged: %v", *wm.WorkingMemory)
	}
	if status, b := c.do("POST", memoryPath+"/threads/s1/working-memory?resourceId=u1", `{"workingMemory":"not json"}`); status != 400 || !strings.Contains(string(b), "must be a JSON object") {
		t.Fatalf("a block that is not JSON: %d %s", status, b)
	}
}

// importBody is a save-messages body.
func importBody(msgs ...api.SavedMessage) string {
	b, _ := json.Marshal(api.SaveMessages{Messages: msgs})
	return string(b)
}

func saved(id, thread, resource, role, text, at string) api.SavedMessage {
	content, _ := json.Marshal(text)
	return api.SavedMessage{ID: id, ThreadID: thread, ResourceID: resource, Role: role, Content: content, CreatedAt: at}
}

// TestImportSearchRecall: a history imported through save-messages is
// searchable at once, with its dates; a new thread's turn recalls it and
// the model refers to it; importing it again stores nothing twice.
func TestImportSearchRecall(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		history := importBody(
			saved("m1", "past-1", "u1", "user", "We adopted a golden retriever puppy and named him Max.", "2026-03-02T10:00:00Z"),
			saved("m2", "past-1", "u1", "assistant", "Congratulations on your new puppy!", "2026-03-02T10:00:05Z"),
			saved("m3", "past-2", "u1", "user", "My favourite band is Radiohead.", "2026-04-10T09:00:00Z"),
			saved("m4", "past-3", "u2", "user", "I also have a puppy called Rex.", "2026-04-11T09:00:00Z"),
		)
		status, b := c.do("POST", memoryPath+"/save-messages?agentId=companionAgent", history)
		if status != 200 || strings.Count(string(b), `"id":`) != 4 {
			t.Fatalf("save-messages: %d %s", status, b)
		}
		if status, b := c.do("POST", memoryPath+"/save-messages?agentId=companionAgent", history); status != 200 || !strings.Contains(string(b), `"messages":[]`) {
			t.Fatalf("saving again: %d %s", status, b)
		}
		if n := len(c.messages("past-1", "u1")); n != 2 {
			t.Fatalf("past-1 holds %d messages after two imports", n)
		}

		status, b = c.do("GET", memoryPath+"/search?agentId=companionAgent&resourceId=u1&searchQuery="+url.QueryEscape("How is my puppy doing?"), "")
		var sr api.SearchResponse
		if status != 200 || json.Unmarshal(b, &sr) != nil || sr.Count != 2 || sr.SearchScope != "resource" || sr.SearchType != "text" || sr.Query != "How is my puppy doing?" {
			t.Fatalf("search: %d %s", status, b)
		}
		found := false
		for _, r := range sr.Results {
			if r.ID == "m1" {
				found = true
				if r.CreatedAt != "2026-03-02T10:00:00Z" || r.ThreadID != "past-1" || len(r.Context.After) == 0 || r.Context.After[0].ID != "m2" {
					t.Fatalf("the result: %+v", r)
				}
			}
		}
		if !found {
			t.Fatalf("search did not find the message about the puppy: %s", b)
		}
		for _, r := range sr.Results {
			if r.ID == "m4" {
				t.Fatalf("search found another resource's message: %s", b)
			}
		}

		g := c.generate("now", "u1", "Any ideas for a weekend with my puppy?")
		sys := system(g)
		if !strings.Contains(sys, "From earlier conversations with the user") || !strings.Contains(sys, "On 2 March 2026") ||
			!strings.Contains(sys, `the user said: "We adopted a golden retriever puppy and named him Max."`) {
			t.Fatalf("the model's instructions: %s", sys)
		}
		if !strings.Contains(g.Text, `You told me before: "We adopted a golden retriever puppy and named him Max."`) {
			t.Fatalf("the reply: %s", g.Text)
		}

		for _, tc := range []struct {
			method, path, body string
			status             int
			want               string
		}{
			{"GET", memoryPath + "/search?searchQuery=puppy", "", 400, "resourceId is required"},
			{"GET", memoryPath + "/search?resourceId=u1", "", 400, "searchQuery is required"},
			{"GET", memoryPath + "/search?resourceId=u1&searchQuery=puppy&limit=0", "", 400, "limit must be a whole number from 1 to 100"},
			{"POST", memoryPath + "/save-messages", importBody(saved("x1", "past-3", "u1", "user", "Mine now", "")), 403, "belongs to another resource"},
			{"POST", memoryPath + "/save-messages", importBody(saved("x2", "", "u1", "user", "No thread", "")), 400, "1 of the 1 messages lack a threadId or a resourceId"},
			{"POST", memoryPath + "/save-messages", importBody(saved("x3", "t", "u1", "tool", "x", "")), 400, `role must be \"user\" or \"assistant\"`},
			{"POST", memoryPath + "/save-messages", importBody(saved("x4", "t", "u1", "user", "x", "yesterday")), 400, "createdAt must be an RFC 3339 time"},
		} {
			status, b := c.do(tc.method, tc.path, tc.body)
			if status != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%s %s: %d %.300s, want %d saying %s", tc.method, tc.path, status, b, tc.status, tc.want)
			}
		}
	})
}

// TestTitles: a thread gets a title after its first exchange, off the
// reply's path; a title its owner set first wins.
func TestTitles(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		c.generate("titled", "u1", "How do I start my day well, with coffee or tea?")
		title := func(thread string) string {
			status, b := c.do("GET", memoryPath+"/threads/"+thread+"?resourceId=u1", "")
			var th api.Thread
			if status != 200 || json.Unmarshal(b, &th) != nil {
				t.Fatalf("thread: %d %s", status, b)
			}
			return th.Title
		}
		deadline := time.Now().Add(10 * time.Second)
		for title("titled") == "" {
			if time.Now().After(deadline) {
				t.Fatal("the thread got no title")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := title("titled"); got != "How do I start my day" {
			t.Fatalf("title %q", got)
		}
		// A second exchange keeps the title; a chosen one is never replaced.
		c.generate("titled", "u1", "And in the evening?")
		if status, b := c.do("PATCH", memoryPath+"/threads/titled?resourceId=u1", `{"title":"Mornings"}`); status != 200 {
			t.Fatalf("rename: %d %s", status, b)
		}
		c.generate("chosen", "u1", "Hello there, friend")
		if status, b := c.do("PATCH", memoryPath+"/threads/chosen?resourceId=u1", `{"title":"My own title"}`); status != 200 {
			t.Fatalf("rename: %d %s", status, b)
		}
		time.Sleep(200 * time.Millisecond)
		if got := title("titled"); got != "Mornings" {
			t.Fatalf("after a rename: %q", got)
		}
		if got := title("chosen"); got != "My own title" {
			t.Fatalf("a title set at once: %q", got)
		}
	})
}

// TestEraseResource: DELETE /api/memory/resources/{id} erases everything
// kept about the resource, and nothing of another's.
func TestEraseResource(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		for _, r := range []string{"gone", "kept"} {
			c.generate(r+"-1", r, "Remember that my dog is called Max.")
			c.generate(r+"-2", r, "Tell me about my dog.")
		}
		status, b := c.do("DELETE", memoryPath+"/resources/gone", "")
		var erased api.ResourceErased
		if status != 200 || json.Unmarshal(b, &erased) != nil || erased.Threads != 2 || erased.Messages < 4 || erased.WorkingMemories < 1 || erased.UsageRows < 1 {
			t.Fatalf("erase: %d %s", status, b)
		}
		status, b = c.do("GET", memoryPath+"/threads?resourceId=gone", "")
		if status != 200 || !strings.Contains(string(b), `"total":0`) {
			t.Fatalf("threads after the erasure: %d %s", status, b)
		}
		if wm := c.workingMemory("gone-1", "gone"); wm.WorkingMemory != nil {
			t.Fatalf("working memory after the erasure: %s", *wm.WorkingMemory)
		}
		status, b = c.do("GET", memoryPath+"/search?resourceId=gone&searchQuery=dog", "")
		if status != 200 || !strings.Contains(string(b), `"count":0`) {
			t.Fatalf("search after the erasure: %d %s", status, b)
		}
		status, b = c.do("GET", memoryPath+"/usage?resourceId=gone", "")
		if status != 200 || !strings.Contains(string(b), `"days":[]`) {
			t.Fatalf("usage after the erasure: %d %s", status, b)
		}
		if wm := c.workingMemory("kept-1", "kept"); wm.WorkingMemory == nil || len(c.messages("kept-2", "kept")) != 2 {
			t.Fatal("the other resource lost its memory")
		}
		_, metrics := c.do("GET", "/metrics", "")
		if !strings.Contains(string(metrics), "companion_resource_erasures_total 1") {
			t.Fatal("/metrics does not count the erasure")
		}
	})
}
