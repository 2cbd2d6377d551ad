package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/client"
)

// disclosure is the service's default ai-disclosure notice.
var disclosure = api.Notice{Kind: api.NoticeAIDisclosure, Text: "You are talking to an AI companion, not a person."}

// TestNotices: a new thread's first reply starts with the ai-disclosure
// notice, in the stream's start and in the generate body; the next turn of
// the thread has none, and neither run tripped.
func TestNotices(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	stream := func(thread, text string) []client.Event {
		t.Helper()
		return streamAll(t, c, turn(thread, text))
	}

	evs := stream("n1", "Hi, I'm Sam.")
	if evs[0].Type != api.EventStart {
		t.Fatalf("the first event is %s", evs[0].Type)
	}
	if got := evs[0].Notices(); !reflect.DeepEqual(got, []api.Notice{disclosure}) {
		t.Fatalf("the first reply's notices: %+v", got)
	}
	for _, ev := range evs[1:] {
		if ev.Notices() != nil {
			t.Fatalf("a %s event has notices", ev.Type)
		}
	}
	last := evs[len(evs)-1]
	if reason, tripped := last.Tripwire(); tripped || reason != "" {
		t.Fatalf("an ordinary reply tripped: %q", reason)
	}

	evs = stream("n1", "How are you?")
	if got := evs[0].Notices(); got != nil {
		t.Fatalf("the second reply of a thread has notices: %+v", got)
	}

	res, err := c.Generate(ctx, turn("n2", "Hi, I'm Sam."))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Notices, []api.Notice{disclosure}) || res.Tripwire || res.TripwireReason != "" {
		t.Fatalf("generate on a new thread: notices %+v, tripwire %v %q", res.Notices, res.Tripwire, res.TripwireReason)
	}
	res, err = c.Generate(ctx, turn("n2", "How are you?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Notices == nil || len(res.Notices) != 0 {
		t.Fatalf("generate's notices are %#v, want an empty array", res.Notices)
	}
}

// tripped is the seed stream of a run a safety processor stopped: the
// crisis referral as a notice of its start, the text the user must see,
// and a run-finish with the tripwire.
var tripped = []string{
	`{"type":"start","runId":"r1","payload":{"agentId":"companionAgent","threadId":"t1","resourceId":"u1","personality":"friend","traceId":"x",` +
		`"notices":[{"kind":"ai-disclosure","text":"You are talking to an AI companion, not a person."},` +
		`{"kind":"crisis-referral","text":"If you are thinking about suicide or hurting yourself, please reach out now: call or text 988."}]}}`,
	`{"type":"step-start","runId":"r1","payload":{"stepIndex":0,"stepType":"initial","messageId":"m1"}}`,
	`{"type":"text","runId":"r1","text":"I'm really sorry you're feeling this way."}`,
	`{"type":"step-finish","runId":"r1","payload":{"stepIndex":0,"finishReason":"other","usage":{"promptTokens":0,"completionTokens":0,"totalTokens":0}}}`,
	`{"type":"run-finish","runId":"r1","payload":{"finishReason":"other","usage":{"promptTokens":0,"completionTokens":0,"totalTokens":0},` +
		`"cost":{"total":0,"currency":"USD"},"tripwire":true,"tripwireReason":"crisis: suicidal ideation"}}`,
}

// serveEvents is a service whose stream answers the events given, and
// whose generate answers body.
func serveEvents(t *testing.T, events []string, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/stream"):
			w.Header().Set("Content-Type", "text/event-stream")
			for i, e := range events {
				fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, e)
			}
		case strings.HasSuffix(r.URL.Path, "/generate"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestTripwire: the notices of a tripped run's start, its text, and the
// tripwire and its reason on its run-finish; in the generate body too.
func TestTripwire(t *testing.T) {
	url := serveEvents(t, tripped, `{"text":"I'm really sorry you're feeling this way.","finishReason":"other","runId":"r1",`+
		`"tripwire":true,"tripwireReason":"crisis: suicidal ideation",`+
		`"notices":[{"kind":"crisis-referral","text":"Call or text 988."}]}`)
	c := newClient(t, url, "")
	evs := streamAll(t, c, turn("t1", "I want to kill myself"))
	want := []api.Notice{disclosure, {Kind: api.NoticeCrisisReferral,
		Text: "If you are thinking about suicide or hurting yourself, please reach out now: call or text 988."}}
	if got := evs[0].Notices(); !reflect.DeepEqual(got, want) {
		t.Fatalf("notices %+v", got)
	}
	if p, ok := evs[0].Payload.(api.StartPayload); !ok || p.ThreadID != "t1" || !reflect.DeepEqual(p.Notices, want) {
		t.Fatalf("start payload %#v", evs[0].Payload)
	}
	if got := textOf(evs); got != "I'm really sorry you're feeling this way." {
		t.Fatalf("text %q", got)
	}
	for _, ev := range evs[:len(evs)-1] {
		if _, tripped := ev.Tripwire(); tripped {
			t.Fatalf("a %s event tripped", ev.Type)
		}
	}
	finish := evs[len(evs)-1]
	if reason, tripped := finish.Tripwire(); !tripped || reason != "crisis: suicidal ideation" {
		t.Fatalf("run-finish tripwire %v %q", tripped, reason)
	}
	if p, ok := finish.Payload.(api.RunFinishPayload); !ok || p.FinishReason != "other" || !p.Tripwire || p.TripwireReason != "crisis: suicidal ideation" {
		t.Fatalf("run-finish payload %#v", finish.Payload)
	}

	res, err := c.Generate(context.Background(), turn("t1", "I want to kill myself"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Tripwire || res.TripwireReason != "crisis: suicidal ideation" ||
		!reflect.DeepEqual(res.Notices, []api.Notice{{Kind: api.NoticeCrisisReferral, Text: "Call or text 988."}}) {
		t.Fatalf("generate %+v", res)
	}
}

// TestNoticesAbsent: a start without notices (or with an empty array) and
// a run-finish without the tripwire decode as before; a notice of a kind
// this client does not know is kept as it came.
func TestNoticesAbsent(t *testing.T) {
	events := []string{
		`{"type":"start","runId":"r2","payload":{"agentId":"companionAgent","threadId":"t2","resourceId":"u1","personality":"friend","traceId":"x"}}`,
		`{"type":"text","runId":"r2","text":"Hello."}`,
		`{"type":"run-finish","runId":"r2","payload":{"finishReason":"stop","usage":{"promptTokens":1,"completionTokens":1,"totalTokens":2}}}`,
	}
	for _, start := range []string{events[0],
		strings.Replace(events[0], `"traceId":"x"`, `"traceId":"x","notices":[]`, 1),
		strings.Replace(events[0], `"traceId":"x"`, `"traceId":"x","notices":null`, 1),
	} {
		evs := streamOf(t, append([]string{start}, events[1:]...))
		if got := evs[0].Notices(); len(got) != 0 {
			t.Fatalf("notices %+v of %s", got, start)
		}
		if p, ok := evs[0].Payload.(api.StartPayload); !ok || p.ThreadID != "t2" {
			t.Fatalf("start %#v", evs[0].Payload)
		}
		if _, tripped := evs[2].Tripwire(); tripped {
			t.Fatal("an ordinary run-finish tripped")
		}
		if p, ok := evs[2].Payload.(api.RunFinishPayload); !ok || p.FinishReason != api.FinishStop || p.Usage.TotalTokens != 2 {
			t.Fatalf("run-finish %#v", evs[2].Payload)
		}
	}
	evs := streamOf(t, append([]string{strings.Replace(events[0], `"traceId":"x"`, `"traceId":"x","notices":[{"kind":"quiet-hours","text":"It is late."}]`, 1)}, events[1:]...))
	if got := evs[0].Notices(); !reflect.DeepEqual(got, []api.Notice{{Kind: "quiet-hours", Text: "It is late."}}) {
		t.Fatalf("notices %+v", got)
	}
	// An event without a payload has neither.
	if evs[1].Notices() != nil {
		t.Fatal("a text event has notices")
	}
	if _, tripped := evs[1].Tripwire(); tripped {
		t.Fatal("a text event tripped")
	}
}

// streamOf reads a stream of events served as they are given.
func streamOf(t *testing.T, events []string) []client.Event {
	t.Helper()
	return streamAll(t, newClient(t, serveEvents(t, events, ""), ""), turn("t2", "Hi"))
}

// streamAll streams req through c to its end, checks the events' ids and
// returns them.
func streamAll(t *testing.T, c *client.Client, req api.GenerateRequest) []client.Event {
	t.Helper()
	s, err := c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, evs)
	return evs
}
