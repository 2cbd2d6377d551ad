package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/client"
	"github.com/companionhq/companion/internal/testkit"
)

func TestClientFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     clientFlags // thread "chat-*" for a fresh one
		wantRest []string
		wantJSON bool
		wantErr  string
	}{
		{name: "defaults", want: clientFlags{url: "http://127.0.0.1:4111", thread: "chat-*", personality: "friend"}},
		{name: "env", env: map[string]string{"COMPANION_URL": "http://svc:8080", "COMPANION_RESOURCE": "u1", "COMPANION_API_KEY": "k", "COMPANION_PERSONALITY": "guru"},
			want: clientFlags{url: "http://svc:8080", thread: "chat-*", resource: "u1", apiKey: "k", personality: "guru"}},
		{name: "flags beat env", args: []string{"--url", "https://a.example", "--resource", "u2", "--api-key", "k2", "--personality", "philosopher", "--thread", "t9"},
			env:  map[string]string{"COMPANION_URL": "http://svc:8080", "COMPANION_RESOURCE": "u1", "COMPANION_API_KEY": "k", "COMPANION_PERSONALITY": "guru"},
			want: clientFlags{url: "https://a.example", thread: "t9", resource: "u2", apiKey: "k2", personality: "philosopher"}},
		{name: "flags after the message", args: []string{"What's the weather in Berlin?", "--json", "-thread", "t1"},
			want: clientFlags{url: "http://127.0.0.1:4111", thread: "t1", personality: "friend"}, wantRest: []string{"What's the weather in Berlin?"}, wantJSON: true},
		{name: "bad personality", args: []string{"--personality", "pirate"}, wantErr: `personality "pirate" is not one of guru, wanderer, friend, philosopher`},
		{name: "bad env personality", env: map[string]string{"COMPANION_PERSONALITY": "Guru"}, wantErr: `personality "Guru" is not one of`},
		{name: "bad url", args: []string{"--url", "127.0.0.1:4111"}, wantErr: "must be http:// or https://"},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "usage"},
		{name: "help", args: []string{"-h"}, wantErr: "help"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asJSON bool
			f, rest, err := parseClientFlags("ask", "chat", "ask", tc.args, func(k string) string { return tc.env[k] }, io.Discard, io.Discard, func(fs *flag.FlagSet) {
				fs.BoolVar(&asJSON, "json", false, "")
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.thread == "chat-*" {
				if !strings.HasPrefix(f.thread, "chat-") || len(f.thread) != len("chat-")+12 {
					t.Fatalf("fresh thread id %q", f.thread)
				}
				if !f.fresh {
					t.Fatal("a fresh thread is not marked fresh")
				}
				f.thread, f.fresh = "chat-*", false
			}
			if f != tc.want || fmt.Sprint(rest) != fmt.Sprint(tc.wantRest) || asJSON != tc.wantJSON {
				t.Fatalf("got %+v %q json=%v, want %+v %q json=%v", f, rest, asJSON, tc.want, tc.wantRest, tc.wantJSON)
			}
		})
	}
	if a, b := newThreadID("chat"), newThreadID("chat"); a == b {
		t.Fatalf("two fresh thread ids are the same: %s", a)
	}
}

func TestSummarize(t *testing.T) {
	for in, want := range map[string]string{
		`{"temperature":3.2,"feelsLike":-0.4,"humidity":81,"windSpeed":14.8,"windGust":29.5,"conditions":"Overcast","location":"Berlin"}`: "3.2°C overcast in Berlin",
		`{"temperature":-1,"conditions":"Partly cloudy","location":"Reykjavík"}`:                                                          "-1°C partly cloudy in Reykjavík",
		`{"answer":42}`: `{"answer":42}`,
		`{"text":"` + strings.Repeat("a", 200) + `"}`: `{"text":"` + strings.Repeat("a", 91) + "…",
	} {
		if got := summarize([]byte(in)); got != want {
			t.Errorf("summarize(%s) = %q, want %q", in, got, want)
		}
	}
}

// chatting is a chat run in-process against a service: lines typed,
// interrupts sent and output read by the test.
type chatting struct {
	lines      chan string
	interrupts chan os.Signal
	out        *testkit.Buffer
	// done is closed when the chat has ended, with err.
	done      chan struct{}
	err       error
	closeOnce sync.Once
}

func startChat(t *testing.T, url, thread string) *chatting {
	t.Helper()
	c, err := client.New(url, "")
	if err != nil {
		t.Fatal(err)
	}
	cg := &chatting{lines: make(chan string), interrupts: make(chan os.Signal, 2), out: &testkit.Buffer{}, done: make(chan struct{})}
	ch := &chat{c: c, flags: clientFlags{url: url, thread: thread, resource: "u1", personality: api.PersonalityFriend},
		lines: cg.lines, interrupts: cg.interrupts, screen: screen{out: cg.out, notes: cg.out, cutShort: true}}
	go func() {
		defer close(cg.done)
		cg.err = ch.run(context.Background())
	}()
	t.Cleanup(func() {
		cg.closeOnce.Do(func() { close(cg.lines) })
		<-cg.done
	})
	return cg
}

// say types a line; it is taken at the next prompt.
func (cg *chatting) say(t *testing.T, line string) {
	t.Helper()
	select {
	case cg.lines <- line:
	case <-time.After(20 * time.Second):
		t.Fatalf("the chat did not come back to its prompt for %q:\n%s", line, cg.out)
	}
}

// waitFor waits until the output holds s.
func (cg *chatting) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(cg.out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the output never showed %q:\n%s", s, cg.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quit ends the input and waits for the chat to end.
func (cg *chatting) quit(t *testing.T) {
	t.Helper()
	cg.closeOnce.Do(func() { close(cg.lines) })
	<-cg.done
	if cg.err != nil {
		t.Fatalf("chat: %v", cg.err)
	}
}

func rolesOf(ms []api.UIMessage) string {
	var r []string
	for _, m := range ms {
		r = append(r, m.Role)
	}
	return strings.Join(r, " ")
}

// TestChatCommands: the slash commands, a tool call and a tool error, and
// plain output (no prompt, no colour) when neither end is a terminal.
func TestChatCommands(t *testing.T) {
	svc := apptest.Start(t, nil)
	cg := startChat(t, svc.URL, "t1")
	cg.say(t, "/help")
	cg.say(t, "/thread")
	cg.say(t, "/personality")
	cg.say(t, "/personality pirate")
	cg.say(t, "/personality guru")
	cg.say(t, "What's the weather in Berlin?")
	cg.say(t, "What's the weather in Atlantis?")
	cg.say(t, "/frobnicate")
	cg.say(t, "/new")
	cg.say(t, "Hello again.")
	cg.quit(t)
	out := cg.out.String()
	for _, want := range []string{
		"companion chat at " + svc.URL + ", as friend\n",
		"thread t1 (continue it later with --thread t1); /help for commands\n",
		"/personality NAME   answer as guru, wanderer, friend or philosopher\n",
		"thread t1\n",
		"personality friend (one of guru, wanderer, friend, philosopher)\n",
		`error: personality "pirate" is not one of guru, wanderer, friend, philosopher` + "\n",
		"personality guru\n",
		"⚙ weatherTool {\"location\":\"Berlin\"}\n→ 3.2°C overcast in Berlin\nThe sky speaks, and we listen. In Berlin it is 3.2°C",
		"⚙ weatherTool {\"location\":\"Atlantis\"}\n✗ weatherTool failed: no place named \"Atlantis\" was found\nThe sky speaks",
		"unknown command /frobnicate: /help lists them\n",
		"new thread chat-",
		// A new thread: nothing earlier to recall.
		"Breathe, and be still for a moment. You ask: \"Hello again.\" Like a river",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.Contains(out, "you>") {
		t.Errorf("colour or a prompt on output that is not a terminal:\n%s", out)
	}
	if t.Failed() {
		t.Log(out)
	}
	if got := rolesOf(messagesOf(t, svc.URL, "t1", "u1")); got != "user assistant user assistant" {
		t.Fatalf("thread t1 holds %s", got)
	}
}

// TestChatNotesAReplyCutShort: a reply that reached the output limit (the
// service caps each model call here) says so after its text.
func TestChatNotesAReplyCutShort(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.MaxOutputTokens = 5 })
	cg := startChat(t, svc.URL, "t1")
	cg.say(t, "Tell me a long story.")
	cg.quit(t)
	if out := cg.out.String(); !strings.Contains(out, "(cut short: the reply reached the output limit)\n") {
		t.Fatalf("no note of the limit:\n%s", out)
	}
}

// TestChatStopsAReply: Ctrl-C in the middle of a reply cancels the run:
// "stopped", the prompt is back, nothing of the reply is stored, and the
// next turn answers both messages.
func TestChatStopsAReply(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 20 * time.Millisecond })
	cg := startChat(t, svc.URL, "t2")
	cg.say(t, "Tell me a long story about the sea.")
	cg.waitFor(t, "You asked:")
	cg.interrupts <- os.Interrupt
	cg.waitFor(t, "\nstopped\n")
	cg.say(t, "Are you still there?")
	cg.waitFor(t, `You asked: "Are you still there?" Earlier you mentioned: "Tell me a long story about the sea."`)
	cg.quit(t)
	out := cg.out.String()
	if strings.Count(out, "How are you feeling about it all?") != 1 {
		t.Fatalf("the stopped reply went on:\n%s", out)
	}
	if got := rolesOf(messagesOf(t, svc.URL, "t2", "u1")); got != "user user assistant" {
		t.Fatalf("the thread holds %s, want the stopped turn's message unanswered", got)
	}
}

// TestChatStopsBeforeTheFirstToken: a reply stopped before the service
// named its run is cancelled once the name comes; the prompt is back at
// once.
func TestChatStopsBeforeTheFirstToken(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) {
		c.Model.FakeFirstTokenDelay = 500 * time.Millisecond
		c.Model.FakeTokenDelay = 20 * time.Millisecond
	})
	cg := startChat(t, svc.URL, "t3")
	cg.say(t, "Tell me about the mountains.")
	time.Sleep(100 * time.Millisecond)
	cg.interrupts <- os.Interrupt
	cg.waitFor(t, "stopped\n")
	cg.say(t, "Are you still there?")
	cg.waitFor(t, `Earlier you mentioned: "Tell me about the mountains."`)
	cg.quit(t)
	if got := rolesOf(messagesOf(t, svc.URL, "t3", "u1")); got != "user user assistant" {
		t.Fatalf("the thread holds %s: the stopped run was not cancelled", got)
	}
}

// TestChatShowsErrors: a refused turn is an error line, and the chat goes
// on; Ctrl-C at the prompt quits.
func TestChatShowsErrors(t *testing.T) {
	svc := apptest.Start(t, nil)
	if _, err := (&client.Client{BaseURL: svc.URL}).Generate(context.Background(), api.GenerateRequest{ThreadID: "theirs", ResourceID: "u2",
		Messages: []api.Message{{Role: "user", Content: "Hi"}}}); err != nil {
		t.Fatal(err)
	}
	cg := startChat(t, svc.URL, "theirs")
	cg.say(t, "Hi")
	cg.waitFor(t, `error: thread "theirs" belongs to another resource (HTTP 403)`+"\n")
	cg.interrupts <- os.Interrupt
	<-cg.done
	if cg.err != nil {
		t.Fatal(cg.err)
	}

	// A service that is not there: the chat says so at once.
	err := run(context.Background(), []string{"chat", "--url", "http://127.0.0.1:1"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "cannot be reached") || exitCode(err) != 1 {
		t.Fatalf("chat with no service: %v", err)
	}
	if err := run(context.Background(), []string{"chat", "hello"}, func(string) string { return "" }, io.Discard, io.Discard); exitCode(err) != 2 {
		t.Fatalf("chat with an argument: %v", err)
	}
}

// breaker is a proxy in front of the service that breaks the first cuts
// event streams it forwards after `after` frames, as a dropped connection
// would.
type breaker struct {
	target     string
	after      int
	cuts, seen atomic.Int32
}

func (b *breaker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, b.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		panic(err)
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	maps.Copy(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") || b.seen.Add(1) > b.cuts.Load() {
		_, _ = io.Copy(w, res.Body)
		return
	}
	sc := bufio.NewScanner(res.Body)
	for frames := 0; frames < b.after && sc.Scan(); {
		_, _ = w.Write(append(sc.Bytes(), '\n'))
		if sc.Text() == "" {
			frames++
		}
	}
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// TestChatResumesABrokenStream: a reply whose stream breaks is resumed
// once, seamlessly; a second break is an error line, and the chat goes on.
func TestChatResumesABrokenStream(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = time.Millisecond })
	b := &breaker{target: svc.URL, after: 12}
	proxy := httptest.NewServer(b)
	defer proxy.Close()
	cg := startChat(t, proxy.URL, "t4")

	b.cuts.Store(1)
	cg.say(t, "Hi, I'm Sam.")
	cg.waitFor(t, `Hey, it's really good to hear from you! You asked: "Hi, I'm Sam." Honestly, I think you've got this, and I'm right here with you whatever happens. How are you feeling about it all?`+"\n")

	b.cuts.Store(4) // this turn's stream (the third) and its resumption (the fourth)
	cg.say(t, "Tell me about the sea.")
	cg.waitFor(t, "\nerror: the stream broke off before the run finished (after event 24): unexpected EOF\n")
	cg.quit(t)
	if n := b.seen.Load(); n != 4 {
		t.Fatalf("%d streams, want 2 turns' and one resumption each", n)
	}
}

// waitForTitle waits until the service has titled thread (titles are made
// after the first exchange, off the reply's path).
func waitForTitle(t *testing.T, url, thread, resource string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(url + "/api/memory/threads/" + thread + "?resourceId=" + resource)
		if err != nil {
			t.Fatal(err)
		}
		var th api.Thread
		err = json.NewDecoder(res.Body).Decode(&th)
		res.Body.Close()
		if err == nil && th.Title != "" {
			return th.Title
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %s was not titled: %d %v", thread, res.StatusCode, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestChatMemory: /memory shows what the companion knows, /memory add and
// /memory set change it, /search finds past messages with their date and
// thread, /forget erases everything once "yes" is typed, and not before.
func TestChatMemory(t *testing.T) {
	svc := apptest.Start(t, nil)
	cg := startChat(t, svc.URL, "t1")
	cg.say(t, "/memory")
	cg.waitFor(t, "nothing kept yet: the companion fills this in as it learns about you (/memory add TEXT adds a line)\n")
	cg.say(t, "Remember that my sister is called Ana.")
	cg.waitFor(t, "⚙ updateWorkingMemory (noting what it learned of you)\n→ noted (version 1)\n")
	cg.say(t, "/memory")
	cg.waitFor(t, "- Things to avoid (topics, words, reminders):\n- my sister is called Ana\n(version 1, changed ")
	cg.say(t, "/memory add Likes: the sea")
	cg.waitFor(t, "kept (version 2)\n")
	cg.say(t, "/memory")
	cg.waitFor(t, "- my sister is called Ana\n- Likes: the sea\n(version 2, changed ")
	cg.say(t, "/memory set")
	cg.waitFor(t, "type what the companion should know of you; a line with only . ends it (Ctrl-C keeps what it knows)\n")
	for _, l := range []string{"# About me", "  - Sister: Ana", "."} {
		cg.say(t, l)
	}
	cg.waitFor(t, "kept (version 3)\n")
	cg.say(t, "/memory")
	cg.waitFor(t, "# About me\n  - Sister: Ana\n(version 3, changed ")
	// Ctrl-C while typing a new block keeps the old one.
	cg.say(t, "/memory set")
	cg.say(t, "- nothing")
	cg.interrupts <- os.Interrupt
	cg.waitFor(t, "nothing changed\n")
	cg.say(t, "/memory set One line.")
	cg.waitFor(t, "kept (version 4)\n")
	cg.say(t, "/memory add")
	cg.waitFor(t, "error: /memory add needs the text to add, such as /memory add Likes: the sea\n")
	cg.say(t, "/memory frobnicate")
	cg.waitFor(t, "unknown command /memory frobnicate: /memory shows it, /memory add TEXT and /memory set change it\n")

	title := waitForTitle(t, svc.URL, "t1", "u1")
	cg.say(t, "/new")
	cg.say(t, "/search sister")
	cg.waitFor(t, "2 messages found for \"sister\", best first:\n")
	cg.waitFor(t, fmt.Sprintf(" in %q (thread t1)\n   you: Remember that my sister is called Ana.\n", title))
	cg.waitFor(t, "(/thread ID goes on with a thread)\n")
	cg.say(t, "/search zebra")
	cg.waitFor(t, "nothing found for \"zebra\"\n")
	cg.say(t, "/search")
	cg.waitFor(t, "error: /search needs the words to look for, such as /search sister\n")
	cg.say(t, "/thread t1")
	cg.waitFor(t, "thread t1\n")

	// Anything but yes keeps it all.
	cg.say(t, "/forget")
	cg.waitFor(t, "This erases everything kept about u1: every thread, every message, and what the companion knows of you (a safety setting the operator made, such as a minor's mark, stays). It cannot be undone. Type yes to go on.\n")
	cg.say(t, "no")
	cg.waitFor(t, "nothing was forgotten\n")
	if got := rolesOf(messagesOf(t, svc.URL, "t1", "u1")); got != "user assistant" {
		t.Fatalf("after a /forget declined, thread t1 holds %q", got)
	}
	cg.say(t, "/forget")
	cg.say(t, "yes")
	cg.waitFor(t, "forgotten: 1 thread, ")
	cg.waitFor(t, " messages, and what the companion knew of you\nnew thread chat-")
	cg.say(t, "/memory")
	cg.say(t, "/search sister")
	cg.quit(t)
	out := cg.out.String()
	if !strings.HasSuffix(out, "nothing kept yet: the companion fills this in as it learns about you (/memory add TEXT adds a line)\nnothing found for \"sister\"\n") {
		t.Fatalf("after /forget, memory and search are not empty:\n%s", out)
	}
	if !regexp.MustCompile(`\n1\. \d{4}-\d\d-\d\d \d\d:\d\d in "`).MatchString(out) {
		t.Errorf("a search result has no date:\n%s", out)
	}
	res, err := http.Get(svc.URL + "/api/memory/threads/t1?resourceId=u1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("after /forget, GET thread t1: %d, want 404", res.StatusCode)
	}
}

// TestChatForgetNeedsAResource: /forget without --resource says how to
// name one; the end of the input at its question quits, erasing nothing.
func TestChatForgetNeedsAResource(t *testing.T) {
	svc := apptest.Start(t, nil)
	c, err := client.New(svc.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	out := &testkit.Buffer{}
	ch := &chat{c: c, flags: clientFlags{url: svc.URL, thread: "t1", personality: api.PersonalityFriend},
		lines: lines, interrupts: make(chan os.Signal), screen: screen{out: out, notes: out}}
	lines <- "/forget"
	close(lines)
	if err := ch.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "error: /forget erases the memory of the resource the chat is for: start the chat with --resource (or COMPANION_RESOURCE)\n") {
		t.Fatalf("no word of --resource:\n%s", out)
	}

	if _, err := c.Generate(context.Background(), api.GenerateRequest{ThreadID: "t2", ResourceID: "u1", Messages: []api.Message{{Role: "user", Content: "Hi"}}}); err != nil {
		t.Fatal(err)
	}
	lines = make(chan string, 4)
	out = &testkit.Buffer{}
	ch = &chat{c: c, flags: clientFlags{url: svc.URL, thread: "t2", resource: "u1", personality: api.PersonalityFriend},
		lines: lines, interrupts: make(chan os.Signal), screen: screen{out: out, notes: out}}
	lines <- "/forget"
	close(lines)
	if err := ch.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "Type yes to go on.\nnothing was forgotten\n") {
		t.Fatalf("the end of the input at the question:\n%s", out)
	}
	if got := rolesOf(messagesOf(t, svc.URL, "t2", "u1")); got != "user assistant" {
		t.Fatalf("thread t2 holds %q", got)
	}
}
