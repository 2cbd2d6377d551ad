package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/client"
	_ "github.com/companionhq/companion/internal/testkit"
)

func newClient(t *testing.T, url, key string) *client.Client {
	t.Helper()
	c, err := client.New(url, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func turn(thread, text string) api.GenerateRequest {
	return api.GenerateRequest{
		ThreadID:       thread,
		ResourceID:     "u1",
		Messages:       []api.Message{{Role: api.RoleUser, Content: text}},
		RuntimeContext: &api.RuntimeContext{Metadata: api.RuntimeMetadata{Personality: api.PersonalityGuru}},
	}
}

// readAll reads a stream to its end.
func readAll(t *testing.T, s *client.Stream) ([]client.Event, error) {
	t.Helper()
	var evs []client.Event
	for ev, err := range s.Events() {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func textOf(evs []client.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == api.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// checkIDs checks that the events are numbered 1, 2, 3... without a gap or
// a repeat, and end with run-finish.
func checkIDs(t *testing.T, evs []client.Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d (%s) has id %d", i, ev.Type, ev.ID)
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != api.EventRunFinish {
		t.Fatalf("the stream does not end with run-finish: %d events", len(evs))
	}
}

func TestGenerate(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.Generate(ctx, turn("g1", "How do I start my day well?"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, `You ask: "How do I start my day well?"`) || res.FinishReason != api.FinishStop || res.RunID == "" {
		t.Fatalf("generate: %+v", res)
	}
	body, err := c.GenerateBody(ctx, turn("g2", "How do I start my day well?"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw["text"] == nil || raw["steps"] == nil || raw["usage"] == nil {
		t.Fatalf("the raw body is not the generate body: %v\n%s", err, body)
	}
}

func TestStreamDecodesEveryEvent(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	s, err := c.Stream(ctx, turn("w1", "What's the weather in Berlin?"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, evs)
	if s.RunID() == "" || s.LastEventID() != int64(len(evs)) || s.Resumed() != 0 {
		t.Fatalf("run %q, last id %d of %d, resumed %d", s.RunID(), s.LastEventID(), len(evs), s.Resumed())
	}
	var args strings.Builder
	seen := map[string]bool{}
	for _, ev := range evs {
		seen[ev.Type] = true
		if ev.RunID != s.RunID() {
			t.Fatalf("event %d names run %q", ev.ID, ev.RunID)
		}
		switch p := ev.Payload.(type) {
		case api.StartPayload:
			if p.ThreadID != "w1" || p.ResourceID != "u1" || p.Personality != api.PersonalityGuru {
				t.Fatalf("start: %+v", p)
			}
		case api.ToolCallDeltaPayload:
			args.WriteString(p.ArgsTextDelta)
		case api.ToolCall:
			if p.ToolName != "weatherTool" || string(p.Args) != `{"location":"Berlin"}` || args.String() != string(p.Args) {
				t.Fatalf("tool call %+v after deltas %q", p, args.String())
			}
		case api.ToolResult:
			var r struct {
				Temperature float64 `json:"temperature"`
				Location    string  `json:"location"`
			}
			if err := json.Unmarshal(p.Result, &r); err != nil || p.IsError || r.Location != "Berlin" {
				t.Fatalf("tool result %+v", p)
			}
		case api.RunFinishPayload:
			if p.FinishReason != api.FinishStop || p.Usage.TotalTokens == 0 {
				t.Fatalf("run-finish %+v", p)
			}
		case nil:
			if ev.Type != api.EventText {
				t.Fatalf("a %s event without a payload", ev.Type)
			}
		case api.StepStartPayload, api.StepFinishPayload, api.ToolCallStreamingStartPayload, api.ToolCallStreamingEndPayload:
		default:
			t.Fatalf("a %s event with payload %T", ev.Type, p)
		}
	}
	for _, typ := range []string{api.EventStart, api.EventStepStart, api.EventToolCallInputStreamingStart, api.EventToolCallDelta,
		api.EventToolCallInputStreamingEnd, api.EventToolCall, api.EventToolResult, api.EventText, api.EventStepFinish, api.EventRunFinish} {
		if !seen[typ] {
			t.Errorf("no %s event", typ)
		}
	}
	// The same turn on a fresh thread, by generate: the same text.
	res, err := c.Generate(ctx, turn("w2", "What's the weather in Berlin?"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(evs) != res.Text {
		t.Fatalf("stream text %q, generate text %q", textOf(evs), res.Text)
	}
}

func TestToolErrorEvent(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	s, err := c.Stream(context.Background(), turn("a1", "What's the weather in Atlantis?"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == api.EventError {
			p, ok := ev.Payload.(api.ToolErrorPayload)
			if !ok || p.ToolName != "weatherTool" || ev.Error == nil || ev.Error.Code != api.CodeToolError || !strings.Contains(ev.Error.Message, "Atlantis") {
				t.Fatalf("tool error event: %+v %+v", ev, ev.Error)
			}
			return
		}
	}
	t.Fatal("no error event")
}

func TestServiceErrors(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	noThread := api.GenerateRequest{Messages: []api.Message{{Role: api.RoleUser, Content: "Hi"}}}
	_, genErr := c.Generate(ctx, noThread)
	_, streamErr := c.Stream(ctx, noThread)
	for _, err := range []error{genErr, streamErr} {
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !strings.HasPrefix(e.Message, "threadId is required") {
			t.Fatalf("got %v, want the service's 400", err)
		}
		if !strings.HasSuffix(err.Error(), "(HTTP 400)") {
			t.Fatalf("error text %q", err)
		}
	}
	// Another resource's thread.
	if _, err := c.Generate(ctx, turn("owned", "Hi")); err != nil {
		t.Fatal(err)
	}
	other := turn("owned", "Hi again")
	other.ResourceID = "u2"
	var e *client.Error
	if _, err := c.Generate(ctx, other); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Fatalf("got %v, want 403", err)
	}
	// An unknown run.
	if err := c.Cancel(ctx, "no-such-run", "u1"); !errors.As(err, &e) || e.Status != http.StatusNotFound || !strings.Contains(e.Message, "not found") {
		t.Fatalf("cancel of an unknown run: %v", err)
	}
	if _, err := c.Resume(ctx, "no-such-run", "u1", 3); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("resume of an unknown run: %v", err)
	}
	// Nobody there.
	dead := newClient(t, "http://127.0.0.1:1", "")
	if err := dead.Health(ctx); err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Fatalf("health of nothing: %v", err)
	}
	if _, err := client.New("127.0.0.1:4111", ""); err == nil {
		t.Fatal("a URL without a scheme was accepted")
	}
}

// TestNotTheServicesError: an answer that is not the service's JSON (a
// proxy's page) still gives its status and a message.
func TestNotTheServicesError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "upstream unavailable", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL, "").Generate(context.Background(), turn("t", "Hi"))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Message != "Bad Gateway: upstream unavailable" || e.RetryAfter != 7*time.Second {
		t.Fatalf("got %#v", err)
	}
}

func TestAPIKey(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("k3y-for-alice alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(c *app.Config) { c.Auth.APIKeysFile = keys })
	ctx := context.Background()
	req := api.GenerateRequest{ThreadID: "t", Messages: []api.Message{{Role: api.RoleUser, Content: "Hi"}}}
	var e *client.Error
	if _, err := newClient(t, svc.URL, "").Generate(ctx, req); !errors.As(err, &e) || e.Status != http.StatusUnauthorized || !strings.Contains(e.Message, "no credential") {
		t.Fatalf("without a key: %v", err)
	}
	if _, err := newClient(t, svc.URL, "wrong").Generate(ctx, req); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Fatalf("with a wrong key: %v", err)
	}
	c := newClient(t, svc.URL, "k3y-for-alice")
	s, err := c.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := evs[0].Payload.(api.StartPayload); !ok || p.ResourceID != "alice" {
		t.Fatalf("the run is not alice's: %+v", evs[0])
	}
	// The credential's resource is the run's: resume and cancel need no
	// resourceId.
	if _, err := c.Resume(ctx, s.RunID(), "", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, s.RunID(), ""); err != nil {
		t.Fatal(err)
	}
}

// TestCancel: a run cancelled in the middle of its reply ends its stream
// with CANCELLED and run-finish, and none of the reply is stored.
func TestCancel(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 20 * time.Millisecond })
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	s, err := c.Stream(ctx, turn("c1", "Tell me a long story about the sea, the wind and the mountains."))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []client.Event
	cancelled := false
	for ev, err := range s.Events() {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Type == api.EventText && !cancelled {
			cancelled = true
			if err := c.Cancel(ctx, s.RunID(), "u1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := len(evs)
	if n < 2 || evs[n-2].Type != api.EventError || evs[n-2].Error.Code != api.CodeCancelled {
		t.Fatalf("the stream does not end with CANCELLED: %+v", evs[n-2:])
	}
	if p := evs[n-1].Payload.(api.RunFinishPayload); p.FinishReason != api.FinishError {
		t.Fatalf("run-finish %+v", p)
	}
	// Cancelling again answers the same.
	if err := c.Cancel(ctx, s.RunID(), "u1"); err != nil {
		t.Fatal(err)
	}
}

// TestResume: a run's stream resumed after an id gives the events after it.
func TestResume(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	s, err := c.Stream(ctx, turn("r1", "What's the weather in Berlin?"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := readAll(t, s)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Resume(ctx, s.RunID(), "u1", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rest, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(all)-10 || rest[0].ID != 11 || rest[0].Type != all[10].Type || textOf(rest) != textOf(all[10:]) {
		t.Fatalf("resumed after 10: %d events from id %d, want %d", len(rest), rest[0].ID, len(all)-10)
	}
}

// cutter is a proxy in front of the service that breaks the first cuts
// event streams it forwards after after events, in the middle of the next
// frame, as a dropped connection would.
type cutter struct {
	target string
	after  int
	cuts   int32
	cut    atomic.Int32
}

func (p *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
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
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") || p.cut.Add(1) > p.cuts {
		_, _ = io.Copy(w, res.Body)
		return
	}
	rd := bufio.NewReader(res.Body)
	for frames := 0; ; {
		var frame bytes.Buffer
		for {
			line, err := rd.ReadString('\n')
			frame.WriteString(line)
			if err != nil {
				return
			}
			if line == "\n" {
				break
			}
		}
		if frames == p.after {
			_, _ = w.Write(frame.Bytes()[:frame.Len()/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(frame.Bytes())
		w.(http.Flusher).Flush()
		frames++
	}
}

// TestStreamResumesAfterABreak: a stream that breaks mid-reply is resumed
// once, and its events go on without a gap or a repeat.
func TestStreamResumesAfterABreak(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 2 * time.Millisecond })
	p := &cutter{target: svc.URL, after: 15, cuts: 1}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	c := newClient(t, proxy.URL, "")
	ctx := context.Background()
	s, err := c.Stream(ctx, turn("b1", "What's the weather in Berlin?"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, evs)
	if s.Resumed() != 1 || p.cut.Load() != 2 {
		t.Fatalf("resumed %d times through %d streams", s.Resumed(), p.cut.Load())
	}
	res, err := c.Generate(ctx, turn("b2", "What's the weather in Berlin?"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(evs) != res.Text {
		t.Fatalf("the resumed stream's text %q differs from %q", textOf(evs), res.Text)
	}
}

// TestStreamBrokenTwice: past MaxResumes the break is the stream's error.
func TestStreamBrokenTwice(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 2 * time.Millisecond })
	proxy := httptest.NewServer(&cutter{target: svc.URL, after: 5, cuts: 2})
	defer proxy.Close()
	c := newClient(t, proxy.URL, "")
	s, err := c.Stream(context.Background(), turn("b3", "Tell me about the sea."))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := readAll(t, s)
	if !errors.Is(err, client.ErrBroken) || s.Resumed() != 1 || len(evs) != 10 {
		t.Fatalf("got %d events, resumed %d, error %v", len(evs), s.Resumed(), err)
	}
	checkIDs(t, append(evs, client.Event{ID: 11, Event: api.Event{Type: api.EventRunFinish}}))
}

// TestStreamContextEnds: a stream whose context ends yields the context's
// error, not a break.
func TestStreamContextEnds(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 50 * time.Millisecond })
	c := newClient(t, svc.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.Stream(ctx, turn("x1", "Tell me about the sea."))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for ev, err := range s.Events() {
		if err != nil {
			if !errors.Is(err, context.Canceled) || s.Resumed() != 0 {
				t.Fatalf("got %v after %d resumes", err, s.Resumed())
			}
			return
		}
		if ev.Type == api.EventText {
			cancel()
		}
	}
	t.Fatal("the stream ended without the context's error")
}
