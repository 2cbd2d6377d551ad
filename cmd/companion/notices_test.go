package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/client"
	"github.com/companionhq/companion/internal/testkit"
)

// disclosureLine is how the chat shows the service's ai-disclosure notice.
const disclosureLine = "[AI] You are talking to an AI companion, not a person.\n"

// TestChatShowsNotices: a new thread's first reply is preceded by the
// ai-disclosure notice, on a line of its own; the thread's next reply is
// not, and a new thread's first one is again.
func TestChatShowsNotices(t *testing.T) {
	svc := apptest.Start(t, nil)
	cg := startChat(t, svc.URL, "n1")
	cg.say(t, "Hi, I'm Sam.")
	cg.waitFor(t, "How are you feeling about it all?\n")
	cg.say(t, "What should I do this weekend?")
	cg.waitFor(t, `Earlier you mentioned: "Hi, I'm Sam."`)
	cg.say(t, "/new")
	cg.say(t, "Hello again.")
	cg.quit(t)
	out := cg.out.String()
	if n := strings.Count(out, disclosureLine); n != 2 {
		t.Fatalf("the disclosure shows %d times, want before the first reply of each thread:\n%s", n, out)
	}
	if !strings.Contains(out, "/help for commands\n"+disclosureLine+"Hey, it's really good to hear from you! You asked: \"Hi, I'm Sam.\"") {
		t.Errorf("the disclosure is not on its own line before the first reply:\n%s", out)
	}
	if !regexp.MustCompile(`new thread chat-[0-9a-f]{12}\n` + regexp.QuoteMeta(disclosureLine) + `Hey,`).MatchString(out) {
		t.Errorf("the new thread's first reply has no disclosure before it:\n%s", out)
	}
}

// trippedStream is the seed stream of a reply the crisis protocol stopped:
// the disclosure and the crisis referral in its start, the text the user
// must read, and the tripwire on its run-finish.
var trippedStream = []string{
	`{"type":"start","runId":"r1","payload":{"agentId":"companionAgent","threadId":"t1","resourceId":"u1","personality":"friend","traceId":"x",` +
		`"notices":[{"kind":"ai-disclosure","text":"You are talking to an AI companion, not a person."},` +
		`{"kind":"crisis-referral","text":"If you are thinking about suicide or hurting yourself, please reach out now: call or text 988."}]}}`,
	`{"type":"step-start","runId":"r1","payload":{"stepIndex":0,"stepType":"initial","messageId":"m1"}}`,
	`{"type":"text","runId":"r1","text":"I'm really sorry you're feeling this way."}`,
	`{"type":"step-finish","runId":"r1","payload":{"stepIndex":0,"finishReason":"other","usage":{"promptTokens":0,"completionTokens":0,"totalTokens":0}}}`,
	`{"type":"run-finish","runId":"r1","payload":{"finishReason":"other","usage":{"promptTokens":0,"completionTokens":0,"totalTokens":0},` +
		`"tripwire":true,"tripwireReason":"crisis: suicidal ideation"}}`,
}

// serveStream is a service that is healthy and streams events for every
// turn.
func serveStream(t *testing.T, events []string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/health":
			fmt.Fprint(w, `{"status":"ok"}`)
		case r.URL.Path == "/api/agents/companionAgent/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for i, e := range events {
				fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, e)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestChatShowsATrippedReply: the notices of a reply a safety check
// stopped come before it, each marked by its kind, and a note after it
// says it was stopped, and why.
func TestChatShowsATrippedReply(t *testing.T) {
	url := serveStream(t, trippedStream)
	cg := startChat(t, url, "t1")
	cg.say(t, "I want to kill myself")
	cg.quit(t)
	want := "/help for commands\n" + disclosureLine +
		"[help] If you are thinking about suicide or hurting yourself, please reach out now: call or text 988.\n" +
		"I'm really sorry you're feeling this way.\n" +
		"[safety] this reply was stopped: crisis: suicidal ideation\n"
	if out := cg.out.String(); !strings.HasSuffix(out, want) {
		t.Fatalf("got:\n%s\nwant it to end with:\n%s", out, want)
	}
}

// TestScreenNotices: on a terminal each kind of notice has its style (the
// crisis referral stands out); a kind the client does not know is marked
// by its name; a text of several lines is indented under its label; a
// tripped reply without a reason still says it was stopped; ask's notes
// (stderr) get the notices and the tripwire, its output the reply alone.
func TestScreenNotices(t *testing.T) {
	start := func(ns ...api.Notice) client.Event {
		return client.Event{ID: 1, Event: api.Event{Type: api.EventStart, RunID: "r1", Payload: api.StartPayload{Notices: ns}}}
	}
	text := client.Event{ID: 2, Event: api.Event{Type: api.EventText, RunID: "r1", Text: "Take care."}}
	finish := func(reason string) client.Event {
		return client.Event{ID: 3, Event: api.Event{Type: api.EventRunFinish, RunID: "r1",
			Payload: api.RunFinishPayload{FinishReason: "other", Tripwire: true, TripwireReason: reason}}}
	}

	out := &testkit.Buffer{}
	s := screen{out: out, notes: out, color: true}
	for _, ev := range []client.Event{start(
		api.Notice{Kind: api.NoticeAIDisclosure, Text: "You are talking to an AI."},
		api.Notice{Kind: api.NoticeBreakReminder, Text: "Time for a break."},
		api.Notice{Kind: api.NoticeCrisisReferral, Text: "Call 988."},
	), text, finish("crisis: self harm")} {
		if e := s.show(ev); e != nil {
			t.Fatal(e)
		}
	}
	want := styleDim + "[AI] You are talking to an AI." + styleReset + "\n" +
		styleYellow + "[break] Time for a break." + styleReset + "\n" +
		styleBold + "[help] Call 988." + styleReset + "\n" +
		"Take care.\n" +
		styleYellow + "[safety] this reply was stopped: crisis: self harm" + styleReset + "\n"
	if got := out.String(); got != want {
		t.Fatalf("on a terminal:\n%q\nwant\n%q", got, want)
	}

	out = &testkit.Buffer{}
	s = screen{out: out, notes: out}
	for _, ev := range []client.Event{start(api.Notice{Kind: "quiet-hours", Text: "It is late.\nSleep well."}), text, finish("")} {
		s.show(ev)
	}
	want = "[quiet-hours] It is late.\n              Sleep well.\nTake care.\n[safety] this reply was stopped by a safety check\n"
	if got := out.String(); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}

	// As ask shows a reply: the reply alone on out.
	stdout, stderr := &testkit.Buffer{}, &testkit.Buffer{}
	s = screen{out: stdout, notes: stderr}
	for _, ev := range []client.Event{start(api.Notice{Kind: api.NoticeCrisisReferral, Text: "Call 988."}), text, finish("crisis: self harm")} {
		s.show(ev)
	}
	s.endLine()
	if stdout.String() != "Take care.\n" || stderr.String() != "[help] Call 988.\n[safety] this reply was stopped: crisis: self harm\n" {
		t.Fatalf("stdout %q, stderr %q", stdout, stderr)
	}
}

// TestAskShowsNotices: `companion ask` writes the notices on stderr, before
// the reply on stdout.
func TestAskShowsNotices(t *testing.T) {
	url := serveStream(t, trippedStream)
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"ask", "--url", url, "--thread", "t1", "I want to kill myself"}, func(string) string { return "" }, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "I'm really sorry you're feeling this way.\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
	if want := disclosureLine + "[help] If you are thinking about suicide or hurting yourself, please reach out now: call or text 988.\n" +
		"[safety] this reply was stopped: crisis: suicidal ideation\n"; stderr.String() != want {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
}
