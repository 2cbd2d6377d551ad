package turn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	_ "github.com/companionhq/companion/internal/testkit"
)

const (
	generatePath = "/api/agents/companionAgent/generate"
	streamPath   = "/api/agents/companionAgent/stream"
)

// client is a test client of one service.
type client struct {
	t *testing.T
	*apptest.Service
}

func start(t *testing.T, databaseURL string, configure func(*app.Config)) client {
	t.Helper()
	svc := apptest.Start(t, func(c *app.Config) {
		c.Storage.DatabaseURL = databaseURL
		if configure != nil {
			configure(c)
		}
	})
	return client{t: t, Service: svc}
}

// reqBody is a run request.
func reqBody(thread, resource string, msgs ...api.Message) string {
	b, _ := json.Marshal(api.GenerateRequest{ThreadID: thread, ResourceID: resource, Messages: msgs})
	return string(b)
}

func user(text string) api.Message      { return api.Message{Role: "user", Content: text} }
func assistant(text string) api.Message { return api.Message{Role: "assistant", Content: text} }

func (c client) do(method, path, body string) (int, []byte) {
	c.t.Helper()
	res, b := c.Do(c.t, method, path, body)
	return res.StatusCode, b
}

// reply is what a client learns of a turn: the reply's text and id, and on
// generate the stored messages of the turn.
type reply struct {
	text, id string
	ui       []api.UIMessage
}

// turn sends body to generate or stream and returns the reply; it fails the
// test unless the answer is 200.
func (c client) turn(stream bool, body string) reply {
	c.t.Helper()
	if !stream {
		status, b := c.do("POST", generatePath, body)
		if status != 200 {
			c.t.Fatalf("generate: %d %s", status, b)
		}
		var g api.GenerateResponse
		if err := json.Unmarshal(b, &g); err != nil {
			c.t.Fatal(err)
		}
		ui := g.Response.UIMessages
		return reply{text: g.Text, id: ui[len(ui)-1].ID, ui: ui}
	}
	status, b := c.do("POST", streamPath, body)
	if status != 200 {
		c.t.Fatalf("stream: %d %s", status, b)
	}
	events, err := apitest.ReadSSE(strings.NewReader(string(b)))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := apitest.Check(events); err != nil {
		c.t.Fatalf("stream: %v", err)
	}
	var id string
	for _, ev := range events {
		if ev.Type == "step-start" {
			var p api.StepStartPayload
			_ = json.Unmarshal(ev.Payload, &p)
			id = p.MessageID
		}
		if ev.Type == "error" {
			c.t.Fatalf("stream error: %s", b)
		}
	}
	return reply{text: apitest.Text(events), id: id}
}

// messages reads every stored message of a thread, page by page.
func (c client) messages(thread, resource string) []api.UIMessage {
	c.t.Helper()
	var all []api.UIMessage
	for page := 0; ; page++ {
		status, b := c.do("GET", fmt.Sprintf("/api/memory/threads/%s/messages?resourceId=%s&page=%d&perPage=7", url.PathEscape(thread), url.QueryEscape(resource), page), "")
		if status != 200 {
			c.t.Fatalf("messages: %d %s", status, b)
		}
		var l api.MessageList
		if err := json.Unmarshal(b, &l); err != nil {
			c.t.Fatal(err)
		}
		all = append(all, l.Messages...)
		if !l.HasMore {
			if len(all) != l.Total {
				c.t.Fatalf("read %d messages, total says %d", len(all), l.Total)
			}
			return all
		}
	}
}

// expectError checks a JSON error body.
func expectError(t *testing.T, what string, status int, body []byte, wantStatus int, wantMsg string) {
	t.Helper()
	var e map[string]any
	if status != wantStatus || json.Unmarshal(body, &e) != nil || len(e) != 1 || !strings.Contains(fmt.Sprint(e["error"]), wantMsg) {
		t.Fatalf("%s: %d %s\nwant %d with an error containing %q", what, status, body, wantStatus, wantMsg)
	}
}

func TestRecall(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		c.turn(false, reqBody("t", "sam", user("My name is Sam.")))
		r := c.turn(true, reqBody("t", "sam", user("What is a good hobby for me?")))
		if !strings.Contains(r.text, `Earlier you mentioned: "My name is Sam."`) {
			t.Fatalf("the reply does not recall the first turn: %s", r.text)
		}
	})
}

// TestClientHabits: over 10 turns, a client that sends only its newest
// message, one that resends the whole conversation as text, and one that
// resends it with message ids all leave each message stored exactly once,
// in order; every reply answers its own message and recalls the one before.
func TestClientHabits(t *testing.T) {
	habits := []struct {
		name string
		// next builds the request's messages from the conversation so far
		// (with the ids the service gave) and the new message.
		next func(convo []api.Message, msg api.Message) []api.Message
		ids  bool
	}{
		{"newest only", func(convo []api.Message, msg api.Message) []api.Message { return []api.Message{msg} }, false},
		{"whole conversation", func(convo []api.Message, msg api.Message) []api.Message {
			out := []api.Message{{Role: "system", Content: "Be brief."}}
			for _, m := range append(convo, msg) {
				out = append(out, api.Message{Role: m.Role, Content: m.Content})
			}
			return out
		}, false},
		{"whole conversation with ids", func(convo []api.Message, msg api.Message) []api.Message {
			return append(append([]api.Message{}, convo...), msg)
		}, true},
	}
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		for _, h := range habits {
			t.Run(h.name, func(t *testing.T) {
				c := start(t, db, nil)
				thread := "habit " + h.name
				var convo []api.Message
				for i := 1; i <= 10; i++ {
					msg := user(fmt.Sprintf("Turn %d: what do you think?", i))
					if h.ids {
						msg.ID = fmt.Sprint("client-", i)
					}
					r := c.turn(i%2 == 0, reqBody(thread, "r", h.next(convo, msg)...))
					if !strings.Contains(r.text, fmt.Sprintf(`You asked: "Turn %d: what do you think?"`, i)) {
						t.Fatalf("turn %d answers something else: %s", i, r.text)
					}
					if i > 1 && !strings.Contains(r.text, fmt.Sprintf(`Earlier you mentioned: "Turn %d: what do you think?"`, i-1)) {
						t.Fatalf("turn %d does not recall turn %d: %s", i, i-1, r.text)
					}
					if r.ui != nil && (len(r.ui) != 2 || (h.ids && r.ui[0].ID != msg.ID) || r.ui[1].ID != r.id) {
						t.Fatalf("turn %d: uiMessages %+v", i, r.ui)
					}
					convo = append(convo, msg, api.Message{ID: r.id, Role: "assistant", Content: r.text})
				}
				stored := c.messages(thread, "r")
				if len(stored) != 20 {
					t.Fatalf("the thread holds %d messages, want 20", len(stored))
				}
				for i, m := range stored {
					want := convo[i]
					if m.Role != want.Role || apitest.PartsText(m) != want.Content || m.Metadata.Pending {
						t.Fatalf("message %d is %s %q (pending %v), want %s %q", i, m.Role, apitest.PartsText(m), m.Metadata.Pending, want.Role, want.Content)
					}
					if want.ID != "" && m.ID != want.ID {
						t.Fatalf("message %d has id %s, want %s", i, m.ID, want.ID)
					}
				}
			})
		}
	})
}

// TestOwnership: a thread belongs to the resourceId that created it. Every
// endpoint refuses another resourceId, and one without a resourceId, with
// 403, and reads and changes nothing.
func TestOwnership(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		// Without titles: the test checks that no foreign request changed
		// the thread's title.
		c := start(t, db, func(c *app.Config) { c.Memory.Titles = false })
		secret := "My password hint is blue-elephant."
		c.turn(false, reqBody("private", "alice", user(secret)))
		before := c.messages("private", "alice")

		for _, who := range []struct{ name, rid, msg string }{
			{"another resource", "mallory", "belongs to another resource"},
			{"no resource", "", "belongs to a resource: send its resourceId"},
		} {
			q := ""
			if who.rid != "" {
				q = "?resourceId=" + who.rid
			}
			for _, ep := range []struct{ name, method, path, body string }{
				{"generate", "POST", generatePath, reqBody("private", who.rid, user("What is my password hint?"))},
				{"stream", "POST", streamPath, reqBody("private", who.rid, user("What is my password hint?"))},
				{"get thread", "GET", "/api/memory/threads/private" + q, ""},
				{"messages", "GET", "/api/memory/threads/private/messages" + q, ""},
				{"update", "PATCH", "/api/memory/threads/private" + q, `{"title":"pwned","metadata":{"x":1}}`},
				{"delete", "DELETE", "/api/memory/threads/private" + q, ""},
			} {
				status, b := c.do(ep.method, ep.path, ep.body)
				expectError(t, who.name+" "+ep.name, status, b, 403, who.msg)
				if strings.Contains(string(b), "blue-elephant") || strings.Contains(string(b), "alice") {
					t.Fatalf("%s %s leaks the thread: %s", who.name, ep.name, b)
				}
			}
		}
		// Nothing was read into another conversation, or changed.
		after := c.messages("private", "alice")
		if len(after) != len(before) || after[0].ID != before[0].ID {
			t.Fatalf("alice's thread changed: %d messages, was %d", len(after), len(before))
		}
		status, b := c.do("GET", "/api/memory/threads/private?resourceId=alice", "")
		var th api.Thread
		if status != 200 || json.Unmarshal(b, &th) != nil || th.Title != "" || len(th.Metadata) != 0 || th.ResourceID != "alice" {
			t.Fatalf("alice's thread: %d %s", status, b)
		}
		// Listing shows a resource its own threads only.
		c.turn(false, reqBody("mallory-thread", "mallory", user("Hello")))
		status, b = c.do("GET", "/api/memory/threads?resourceId=mallory&agentId=companionAgent", "")
		var list api.ThreadList
		if status != 200 || json.Unmarshal(b, &list) != nil || list.Total != 1 || len(list.Threads) != 1 || list.Threads[0].ID != "mallory-thread" {
			t.Fatalf("mallory's list: %d %s", status, b)
		}
		status, b = c.do("GET", "/api/memory/threads", "")
		expectError(t, "list without resourceId", status, b, 400, "resourceId is required")

		// A thread created without a resourceId is used without one.
		c.turn(false, reqBody("anon-thread", "", user("Hi")))
		status, b = c.do("POST", generatePath, reqBody("anon-thread", "mallory", user("Hi again")))
		expectError(t, "claiming an unowned thread", status, b, 403, "was created without a resourceId")
		if n := len(c.messages("anon-thread", "")); n != 2 {
			t.Fatalf("the unowned thread holds %d messages, want 2", n)
		}
	})
}

// TestConcurrentTurns: 20 requests on one thread at once, half generate,
// half stream. Turns wait for each other: every request is answered, every
// message is stored once, and each reply follows the message it answers.
func TestConcurrentTurns(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, func(c *app.Config) { c.Model.FakeTokenDelay = time.Millisecond })
		const n = 20
		apitest.TurnsAtOnce(t, n, "busy", "r", c.URL)
		apitest.CheckTurnsInOrder(t, c.messages("busy", "r"), n)
	})
}

// busy starts a story on thread as resource, streamed, and returns once
// its first event has come: the thread is busy until the stream, read from
// rd, has ended.
func (c client) busy(thread, resource string) (*http.Response, *bufio.Reader) {
	c.t.Helper()
	res, err := http.Post(c.URL+streamPath, "application/json", strings.NewReader(reqBody(thread, resource, user("Tell me a story."))))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { res.Body.Close() })
	rd := bufio.NewReader(res.Body)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "id: 1") {
		c.t.Fatalf("first event: %q %v", line, err)
	}
	return res, rd
}

// TestBusyThread: with no lock wait, a turn that comes while another runs
// is refused with 409 and a JSON error, and stores nothing.
func TestBusyThread(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, func(c *app.Config) { c.Storage.LockWait = 0; c.Model.FakeTokenDelay = 20 * time.Millisecond })
		_, rd := c.busy("t", "r")
		status, b := c.do("POST", generatePath, reqBody("t", "r", user("Are you there?")))
		expectError(t, "a second turn", status, b, 409, `thread "t" is busy with another turn`)
		if _, err := io.Copy(io.Discard, rd); err != nil {
			t.Fatal(err)
		}
		stored := c.messages("t", "r")
		if len(stored) != 2 || apitest.PartsText(stored[0]) != "Tell me a story." {
			t.Fatalf("the thread holds %d messages", len(stored))
		}
		c.turn(false, reqBody("t", "r", user("Are you there?")))
	})
}

// TestForeignRequestDoesNotWait: a request on another resource's busy
// thread is refused at once, not after waiting in the thread's queue for
// the turn in progress (a minute here), and stores nothing.
func TestForeignRequestDoesNotWait(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, func(c *app.Config) { c.Storage.LockWait = time.Minute; c.Model.FakeTokenDelay = time.Second })
		res, rd := c.busy("t", "r")
		// The request goes from a goroutine, which must not fail the test:
		// the test goroutine checks its answer.
		type answer struct {
			status int
			body   []byte
			err    error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := http.Post(c.URL+generatePath, "application/json", strings.NewReader(reqBody("t", "intruder", user("Whose thread is this?"))))
			if err != nil {
				done <- answer{err: err}
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			done <- answer{res.StatusCode, b, err}
		}()
		select {
		case a := <-done:
			if a.err != nil {
				t.Fatal(a.err)
			}
			expectError(t, "a foreign turn on a busy thread", a.status, a.body, 403, `thread "t" belongs to another resource`)
		case <-time.After(30 * time.Second): // the story takes more than a minute
			t.Fatal("the foreign request waited for the thread")
		}
		if status, b := c.do("POST", "/api/agents/companionAgent/runs/"+res.Header.Get("X-Run-Id")+"/cancel?resourceId=r", ""); status != 200 {
			t.Fatalf("cancelling the story: %d %s", status, b)
		}
		if _, err := io.Copy(io.Discard, rd); err != nil {
			t.Fatal(err)
		}
		if stored := c.messages("t", "r"); len(stored) != 1 || apitest.PartsText(stored[0]) != "Tell me a story." {
			t.Fatalf("the thread holds %d messages, want the owner's 1", len(stored))
		}
	})
}

// TestHistoryWindow: the model sees the last N stored messages, a tool
// round counting as the messages it is made of, never a tool result cut
// from its call.
func TestHistoryWindow(t *testing.T) {
	tests := []struct {
		window int
		// want is the roles the model sees before the new message.
		want string
	}{
		{20, "user assistant tool assistant"},
		{3, "assistant tool assistant"},
		{2, "assistant"}, // the tool result without its call is dropped
		{1, "assistant"},
		{0, ""},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("window ", tc.window), func(t *testing.T) {
			c := start(t, apptest.SQLiteURL(t), func(c *app.Config) { c.Storage.HistoryWindow = tc.window })
			c.turn(false, reqBody("t", "r", user("What's the weather in Berlin?")))
			status, b := c.do("POST", generatePath, reqBody("t", "r", user("Thanks!")))
			if status != 200 {
				t.Fatalf("%d %s", status, b)
			}
			var g struct {
				Steps []struct {
					Request struct {
						Body struct {
							Messages []struct{ Role string } `json:"messages"`
						} `json:"body"`
					} `json:"request"`
				} `json:"steps"`
			}
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatal(err)
			}
			msgs := g.Steps[0].Request.Body.Messages
			var roles []string
			for _, m := range msgs[1 : len(msgs)-1] { // without the instructions and the new message
				roles = append(roles, m.Role)
			}
			if got := strings.Join(roles, " "); got != tc.want {
				t.Fatalf("the model saw %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNothingNewToAnswer: resending a conversation that is stored and
// answered is refused with 409; nothing is stored twice.
func TestNothingNewToAnswer(t *testing.T) {
	c := start(t, apptest.SQLiteURL(t), nil)
	r := c.turn(false, reqBody("t", "r", user("Hello")))
	status, b := c.do("POST", generatePath, reqBody("t", "r", user("Hello"), assistant(r.text)))
	expectError(t, "an answered conversation", status, b, 409, "already holds every message of the request")
	status, b = c.do("POST", generatePath, reqBody("t", "r", api.Message{ID: r.ui[0].ID, Role: "user", Content: "Hello"}))
	expectError(t, "an answered message by id", status, b, 409, "already holds every message of the request")
	if n := len(c.messages("t", "r")); n != 2 {
		t.Fatalf("the thread holds %d messages, want 2", n)
	}
	status, b = c.do("POST", generatePath, reqBody("t", "r", api.Message{ID: "x", Role: "user", Content: "a"}, api.Message{ID: "x", Role: "user", Content: "b"}))
	expectError(t, "repeated ids", status, b, 400, `messages[1].id "x" repeats messages[0].id`)
	status, b = c.do("POST", generatePath, reqBody("t", "r", user("nul \x00 byte")))
	expectError(t, "a NUL character", status, b, 400, "must not contain NUL characters")
}

// TestDisconnectMidStream: a client that leaves mid-stream cancels the run;
// its message stays, pending, no partial reply is stored, and the next turn
// answers both.
func TestDisconnectMidStream(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		// Without a grace period to resume in, a broken stream cancels its run.
		c := start(t, db, func(c *app.Config) { c.Model.FakeTokenDelay = 20 * time.Millisecond; c.Server.ResumeGrace = 0 })
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", c.URL+streamPath, strings.NewReader(reqBody("t", "r", user("Tell me a long story."))))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(res.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, `"type":"text"`) {
				break
			}
		}
		cancel()
		res.Body.Close()
		// The next turn waits for the cancelled one to let go of the thread.
		r := c.turn(false, reqBody("t", "r", user("Are you still there?")))
		if len(r.ui) != 3 || apitest.PartsText(r.ui[0]) != "Tell me a long story." {
			t.Fatalf("the turn answers %+v", r.ui)
		}
		stored := c.messages("t", "r")
		var got []string
		for _, m := range stored {
			got = append(got, m.Role)
			if m.Metadata.Pending {
				t.Fatalf("message %q still pending", apitest.PartsText(m))
			}
		}
		if strings.Join(got, " ") != "user user assistant" {
			t.Fatalf("the thread holds %v", got)
		}
	})
}

// TestOneConnection: on PostgreSQL a turn holds one connection, and that is
// all it needs: with a pool of one, a turn and a delete (which waits for the
// thread's turn) both finish.
func TestOneConnection(t *testing.T) {
	c := start(t, pgtest.URL(t)+"&pool_max_conns=1", nil)
	c.turn(false, reqBody("t", "r", user("Hello")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "DELETE", c.URL+"/api/memory/threads/t?resourceId=r", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("delete: %d %s", res.StatusCode, b)
	}
	if status, b := c.do("GET", "/api/memory/threads/t?resourceId=r", ""); status != 404 {
		t.Fatalf("the thread after its delete: %d %s", status, b)
	}
}
