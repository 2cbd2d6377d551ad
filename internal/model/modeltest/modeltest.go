// Package modeltest is the conformance suite every model provider passes
// against the fake of its wire format (fakes/cohere, fakes/openai): plain
// reply, streamed tool-call arguments, two tools in one step, a second step
// from tool results, the length limit, usage, and the upstream faults the
// service must survive (429 with Retry-After, 500, 503, a timeout, a
// malformed chunk, a connection cut mid-stream, a refused connection, a
// client that goes away), with error messages fit for a client
// (CheckMessage).
//
// The fakes answer like internal/model/fake, so the suite knows the exact
// answer to expect: fake.Answer of the same request.
//
// RunCassettes runs the same scenarios on cassettes (internal/model/replay)
// recorded once from the fake, with no server at all.
package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
	"github.com/companionhq/companion/internal/model/replay"
)

// Harness is what a provider gives the suite.
type Harness struct {
	// Provider is the name the model reports.
	Provider string
	// Fake returns the fake upstream of the provider's wire format, with
	// opts (it must accept any non-empty key).
	Fake func(opts upstream.Options) (http.Handler, *upstream.Core)
	// New returns the provider's model aimed at the fake's base URL,
	// sending its requests with client (nil: a client of its own).
	New func(t *testing.T, baseURL string, client *http.Client) model.Model
	// Usage is the usage the provider reports for the fake's answer to
	// req; nil means the fake model's own (fake.Answer).
	Usage func(req model.Request) model.Usage
	// CheckFinish, when set, checks the rest of what the provider reports
	// at the end of the fake's answer to req (its metadata).
	CheckFinish func(req model.Request, fin *model.Finish) error
}

// Policy is the resilience policy of the suite: the service's rules with
// delays short enough for tests.
func Policy() model.Policy {
	return model.Policy{
		MaxAttempts: 3, RetryBudget: 2 * time.Second, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond,
		CallTimeout: 5 * time.Second, FirstTokenTimeout: 300 * time.Millisecond,
		Rand: func() float64 { return 0.5 },
	}
}

// System holds the instructions of the suite's requests; the fake model
// reads the personality from it.
const System = "You are companionAgent in friend mode."

// WeatherTool is the tool the suite offers.
func WeatherTool() model.ToolSpec {
	return model.ToolSpec{Name: "weatherTool", Description: "Get current weather for a location",
		Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"City name"}},"required":["location"]}`)}
}

// Result is what one call streamed.
type Result struct {
	Parts []model.Part
	Err   error
}

// Text concatenates the text parts.
func (r Result) Text() string {
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Kind == model.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Finish is the finish part, nil when there was none.
func (r Result) Finish() *model.Finish {
	for _, p := range r.Parts {
		if p.Kind == model.PartFinish {
			return p.Finish
		}
	}
	return nil
}

// Call is one tool call as the parts streamed it.
type Call struct {
	ID, Name string
	Deltas   []string
	Ended    bool
}

// Calls gathers the tool calls, in order.
func (r Result) Calls() []*Call {
	var out []*Call
	byID := map[string]*Call{}
	for _, p := range r.Parts {
		switch p.Kind {
		case model.PartToolCallStart:
			c := &Call{ID: p.ToolCallID, Name: p.ToolName}
			if p.Text != "" {
				c.Deltas = append(c.Deltas, p.Text)
			}
			byID[p.ToolCallID] = c
			out = append(out, c)
		case model.PartToolCallDelta:
			if c := byID[p.ToolCallID]; c != nil {
				c.Deltas = append(c.Deltas, p.Text)
			}
		case model.PartToolCallEnd:
			if c := byID[p.ToolCallID]; c != nil {
				c.Ended = true
			}
		}
	}
	return out
}

// Args is the concatenation of the call's deltas.
func (c *Call) Args() string { return strings.Join(c.Deltas, "") }

// Collect runs one call of m.
func Collect(ctx context.Context, m model.Model, req model.Request) Result {
	var r Result
	for p, err := range m.Stream(ctx, req) {
		if err != nil {
			r.Err = err
			break
		}
		r.Parts = append(r.Parts, p)
		if p.Kind == model.PartFinish {
			break
		}
	}
	return r
}

// env is one scenario's model and what the suite sees of its server.
type env struct {
	t     *testing.T
	h     Harness
	seen  observer
	model model.Model
}

// observer is what the suite sees of a server: when each request came, and
// when its client went away.
type observer interface {
	started() []time.Time
	WaitCancelled(ctx context.Context, n int) (time.Time, bool)
}

// fakeSeen observes a fake, or a replayer through its watch.
type fakeSeen struct{ *upstream.Core }

func (f fakeSeen) started() []time.Time {
	var out []time.Time
	for _, e := range f.Exchanges() {
		out = append(out, e.Started)
	}
	return out
}

// starter starts one model of a scenario: on a fake with opts, or on its
// cassettes, under policy p.
type starter func(t *testing.T, opts upstream.Options, p model.Policy) env

// onFake starts the model on a fake with opts. With rec set, its exchanges
// are recorded to cassettes in rec(t).
func (h Harness) onFake(rec func(t *testing.T) string) starter {
	return func(t *testing.T, opts upstream.Options, p model.Policy) env {
		t.Helper()
		handler, core := h.Fake(opts)
		srv := httptest.NewServer(handler)
		t.Cleanup(srv.Close)
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		m := h.New(t, srv.URL, client)
		if m.Provider() != h.Provider {
			t.Fatalf("the model reports provider %q, want %q", m.Provider(), h.Provider)
		}
		if rec != nil {
			r, err := replay.NewRecorder(rec(t), replay.Source{Provider: m.Provider(), Model: m.ID()}, client.Transport, Key)
			if err != nil {
				t.Fatal(err)
			}
			r.OnError = func(err error) { t.Errorf("recording: %v", err) }
			client.Transport = r
		}
		return env{t: t, h: h, seen: fakeSeen{core}, model: model.Resilient(m, p)}
	}
}

// onCassettes starts the model on the cassettes in dir(t), with no server.
func (h Harness) onCassettes(dir func(t *testing.T) string) starter {
	return func(t *testing.T, _ upstream.Options, p model.Policy) env {
		t.Helper()
		r, err := replay.Open(dir(t), replay.Options{Provider: h.Provider})
		if err != nil {
			t.Fatal(err)
		}
		if r.Cassettes() == 0 {
			t.Fatalf("no cassettes in %s: record them with %s=1", dir(t), RecordEnv)
		}
		watch := upstream.NewCore(upstream.Options{})
		m := h.New(t, "http://replay.invalid", &http.Client{Transport: watch.Watch(r)})
		return env{t: t, h: h, seen: fakeSeen{watch}, model: model.Resilient(m, p)}
	}
}

// RecordEnv is the variable that makes RunCassettes record its cassettes
// again from the fake, when set to 1.
const RecordEnv = "MODELTEST_RECORD"

// RunCassettes runs the scenarios on cassettes kept under dir, one
// directory per model a scenario starts (dir/<scenario>/<n>), with no
// server: the models' requests are answered by a replay.Replayer, the
// recorded timing kept. With MODELTEST_RECORD=1 it records them first, from
// the fake. A refused connection has no exchange to record: that scenario
// runs on the fakes only.
func RunCassettes(t *testing.T, h Harness, dir string) {
	record := os.Getenv(RecordEnv) == "1"
	count := map[string]int{}
	next := func(t *testing.T) string {
		name := t.Name()
		if _, rest, ok := strings.Cut(name, "/"); ok {
			name = rest
		}
		d := filepath.Join(dir, filepath.FromSlash(name), strconv.Itoa(count[t.Name()]))
		count[t.Name()]++
		return d
	}
	var start starter
	if record {
		start = h.onFake(func(t *testing.T) string {
			d := next(t)
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			return d
		})
	} else {
		start = h.onCassettes(next)
	}
	h.run(t, start, true)
}

func ask(text string, max int) model.Request {
	return model.Request{System: System, Messages: []model.Message{{Role: model.RoleUser, Content: text}},
		Tools: []model.ToolSpec{WeatherTool()}, MaxOutputTokens: max}
}

// Run runs every scenario against h's fake.
func Run(t *testing.T, h Harness) { h.run(t, h.onFake(nil), false) }

// run runs every scenario on models that startWith gives; cassettes tells that
// they answer from cassettes, which hold no refused connection.
func (h Harness) run(t *testing.T, startWith starter, cassettes bool) {
	policy := Policy()
	begin := func(t *testing.T, opts upstream.Options) env { t.Helper(); return startWith(t, opts, policy) }
	t.Run("plain reply", func(t *testing.T) {
		e := begin(t, upstream.Options{})
		req := ask("How do I start my day well?", 0)
		r := Collect(context.Background(), e.model, req)
		e.wantAnswer(r, req)
	})
	t.Run("tool call with streamed arguments", func(t *testing.T) {
		e := begin(t, upstream.Options{})
		req := ask("What's the weather in Berlin?", 0)
		r := Collect(context.Background(), e.model, req)
		e.wantAnswer(r, req)
		calls := r.Calls()
		if len(calls) != 1 || calls[0].Name != "weatherTool" || calls[0].ID == "" || !calls[0].Ended {
			t.Fatalf("calls %+v, want one ended weatherTool call with an id", calls)
		}
		if len(calls[0].Deltas) < 2 || calls[0].Args() != `{"location":"Berlin"}` {
			t.Errorf("arguments streamed as %q, want several deltas of {\"location\":\"Berlin\"}", calls[0].Deltas)
		}
	})
	t.Run("two tools in one step", func(t *testing.T) {
		e := begin(t, upstream.Options{})
		req := ask("What's the weather in Paris and Tokyo?", 0)
		r := Collect(context.Background(), e.model, req)
		e.wantAnswer(r, req)
		calls := r.Calls()
		if len(calls) != 2 || calls[0].ID == calls[1].ID || calls[0].Args() != `{"location":"Paris"}` || calls[1].Args() != `{"location":"Tokyo"}` {
			t.Fatalf("calls %+v", calls)
		}
		for _, c := range calls {
			if !c.Ended {
				t.Errorf("call %s never ended", c.ID)
			}
		}
	})
	t.Run("multi-step", func(t *testing.T) {
		e := begin(t, upstream.Options{})
		first := ask("What's the weather in Berlin?", 0)
		r1 := Collect(context.Background(), e.model, first)
		calls := r1.Calls()
		if r1.Err != nil || len(calls) != 1 {
			t.Fatalf("first step: %v, %d calls", r1.Err, len(calls))
		}
		second := first
		second.Messages = append(second.Messages,
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: calls[0].ID, Name: calls[0].Name, Args: json.RawMessage(calls[0].Args())}}},
			model.Message{Role: model.RoleTool, ToolCallID: calls[0].ID, ToolName: calls[0].Name,
				Content: `{"temperature":3.2,"feelsLike":-0.4,"humidity":81,"windSpeed":14.8,"windGust":29.5,"conditions":"Overcast","location":"Berlin"}`})
		r2 := Collect(context.Background(), e.model, second)
		e.wantAnswer(r2, second)
		if !strings.Contains(r2.Text(), "Berlin") {
			t.Errorf("the second step does not answer from the result: %q", r2.Text())
		}
	})
	t.Run("length", func(t *testing.T) {
		e := begin(t, upstream.Options{})
		req := ask("Tell me a long story about the sea.", 3)
		r := Collect(context.Background(), e.model, req)
		e.wantAnswer(r, req)
		if f := r.Finish(); f == nil || f.Reason != model.FinishLength {
			t.Fatalf("finish %+v, want length", f)
		}
	})
	t.Run("usage", func(t *testing.T) {
		e := begin(t, upstream.Options{})
		req := ask("And what about tomorrow?", 0)
		req.Messages = append([]model.Message{{Role: model.RoleUser, Content: "Hi!"}, {Role: model.RoleAssistant, Content: "Hello, friend."}}, req.Messages...)
		r := Collect(context.Background(), e.model, req)
		e.wantAnswer(r, req)
		// wantAnswer compared the whole usage with the expected one, cached
		// input included where the provider reports it there.
		f := r.Finish()
		if f == nil || f.Usage.InputTokens == 0 || f.Usage.OutputTokens == 0 ||
			f.Usage.TotalTokens != f.Usage.InputTokens+f.Usage.OutputTokens {
			t.Fatalf("usage %+v: want input, output and their total", f)
		}
		if f.ResponseID == "" {
			t.Errorf("no response id")
		}
	})
	t.Run("429 with Retry-After", func(t *testing.T) {
		e := begin(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultStatus, Status: 429, RetryAfter: "0.2"}}})
		req := ask("Hello?", 0)
		r := Collect(context.Background(), e.model, req)
		e.wantAnswer(r, req)
		ex := e.seen.started()
		if len(ex) != 2 {
			t.Fatalf("%d requests, want 2 (one retry)", len(ex))
		}
		if gap := ex[1].Sub(ex[0]); gap < 200*time.Millisecond {
			t.Errorf("retried after %v, before the 200ms Retry-After", gap)
		}
		// A rate limit that outlasts the retries is a 503 with the cause.
		e2 := begin(t, upstream.Options{Faults: repeat(upstream.Fault{Kind: upstream.FaultStatus, Status: 429, RetryAfter: "0"}, 5)})
		r2 := Collect(context.Background(), e2.model, req)
		e2.wantError(r2, model.KindUnavailable, 429, "rate limiting")
		if n := len(e2.seen.started()); n != Policy().MaxAttempts {
			t.Errorf("%d requests, want %d", n, Policy().MaxAttempts)
		}
	})
	// A server error that passes is retried; one that lasts gives up.
	for _, tc := range []struct {
		status, fails int
		kind          model.ErrorKind
		text          string
	}{
		{500, 1, model.KindUpstream, "gave up after 3 attempts"},
		{503, 2, model.KindUnavailable, "overloaded"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			fault := upstream.Fault{Kind: upstream.FaultStatus, Status: tc.status}
			e := begin(t, upstream.Options{Faults: repeat(fault, tc.fails)})
			req := ask("Hello?", 0)
			r := Collect(context.Background(), e.model, req)
			e.wantAnswer(r, req)
			if n := len(e.seen.started()); n != tc.fails+1 {
				t.Errorf("%d requests, want %d", n, tc.fails+1)
			}
			e2 := begin(t, upstream.Options{Faults: repeat(fault, 5)})
			e2.wantError(Collect(context.Background(), e2.model, req), tc.kind, tc.status, tc.text)
		})
	}
	t.Run("timeout", func(t *testing.T) {
		e := begin(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultHang}}})
		start := time.Now()
		r := Collect(context.Background(), e.model, ask("Hello?", 0))
		e.wantError(r, model.KindTimeout, 0, "first-token timeout")
		if d := time.Since(start); d > time.Second {
			t.Errorf("the timeout took %v", d)
		}
		e.wantCancelled(0, time.Now())
		// A stream that stalls after its first token meets the call timeout.
		p := Policy()
		p.CallTimeout = 300 * time.Millisecond
		e2 := startWith(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultHang, After: 2}}}, p)
		r2 := Collect(context.Background(), e2.model, ask("Hello?", 0))
		e2.wantError(r2, model.KindTimeout, 0, "call timeout")
		if len(r2.Parts) == 0 {
			t.Errorf("no parts before the stall")
		}
	})
	t.Run("malformed chunk", func(t *testing.T) {
		e := begin(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultMalformed, After: 2}}})
		r := Collect(context.Background(), e.model, ask("Hello?", 0))
		e.wantError(r, model.KindUpstream, 0, "malformed")
		if len(r.Parts) == 0 {
			t.Errorf("no parts before the malformed chunk")
		}
		if n := len(e.seen.started()); n != 1 {
			t.Errorf("%d requests: a failure after the first token must not be retried", n)
		}
	})
	t.Run("connection cut mid-stream", func(t *testing.T) {
		e := begin(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultCut, After: 2}}})
		r := Collect(context.Background(), e.model, ask("Hello?", 0))
		e.wantError(r, model.KindUpstream, 0, "broke off")
		if len(r.Parts) == 0 {
			t.Errorf("no parts before the cut")
		}
		if n := len(e.seen.started()); n != 1 {
			t.Errorf("%d requests: a failure after the first token must not be retried", n)
		}
		// Cut before the first token: a connection error, retried.
		e2 := begin(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultCut}}})
		req := ask("Hello?", 0)
		e2.wantAnswer(Collect(context.Background(), e2.model, req), req)
	})
	t.Run("connection refused", func(t *testing.T) {
		if cassettes {
			t.Skip("a refused connection has no exchange to record")
		}
		// Nothing listens at the address of a server that has closed.
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		m := h.New(t, srv.URL, nil)
		r := Collect(context.Background(), model.Resilient(m, Policy()), ask("Hello?", 0))
		var me *model.Error
		if !errors.As(r.Err, &me) || me.Kind != model.KindUnavailable || !me.Temporary ||
			!strings.HasPrefix(me.Message, "the provider refused the connection; gave up after 3 attempts") {
			t.Fatalf("error %#v, want a refused connection, retried", r.Err)
		}
		if err := CheckMessage(me.Message); err != nil {
			t.Error(err)
		}
		if host := strings.TrimPrefix(srv.URL, "http://"); strings.Contains(me.Message, host) || !strings.Contains(me.Error(), host) {
			t.Errorf("message %q shows the address, or the cause %q lacks it", me.Message, me.Error())
		}
		if !errors.Is(r.Err, syscall.ECONNREFUSED) {
			t.Errorf("error %v does not wrap ECONNREFUSED", r.Err)
		}
	})
	t.Run("client disconnect", func(t *testing.T) {
		// The fake stalls after a few tokens, so that it is still answering
		// when the client goes, however slow the machine.
		stall := upstream.Options{TokenDelay: 5 * time.Millisecond, Faults: []upstream.Fault{{Kind: upstream.FaultHang, After: 4}}}
		e := begin(t, stall)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var cancelledAt time.Time
		n := 0
		for _, err := range e.model.Stream(ctx, ask("How do I start my day well?", 0)) {
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("after the cancel: %v, want context.Canceled", err)
				}
				break
			}
			if n++; n == 2 {
				cancelledAt = time.Now()
				cancel()
			}
		}
		e.wantCancelled(0, cancelledAt)
		// A consumer that stops reading cancels the upstream request too.
		e2 := begin(t, stall)
		var stoppedAt time.Time
		for range e2.model.Stream(context.Background(), ask("How do I start my day well?", 0)) {
			stoppedAt = time.Now()
			break
		}
		e2.wantCancelled(0, stoppedAt)
	})
}

func repeat(f upstream.Fault, n int) []upstream.Fault {
	out := make([]upstream.Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// wantAnswer checks that r is the fake model's answer to req: the same
// text, tool calls, finish reason and usage.
func (e env) wantAnswer(r Result, req model.Request) {
	e.t.Helper()
	if r.Err != nil {
		e.t.Fatalf("the call failed: %v", r.Err)
	}
	want := Result{Parts: fake.Answer(req)}
	wantUsage := want.Finish().Usage
	if e.h.Usage != nil {
		wantUsage = e.h.Usage(req)
	}
	if got, w := r.Text(), want.Text(); got != w {
		e.t.Errorf("text %q, want %q", got, w)
	}
	gc, wc := r.Calls(), want.Calls()
	if len(gc) != len(wc) {
		e.t.Fatalf("%d tool calls, want %d", len(gc), len(wc))
	}
	for i := range gc {
		if gc[i].Name != wc[i].Name || gc[i].Args() != wc[i].Args() {
			e.t.Errorf("call %d: %s%s, want %s%s", i, gc[i].Name, gc[i].Args(), wc[i].Name, wc[i].Args())
		}
	}
	gf, wf := r.Finish(), want.Finish()
	if gf == nil {
		e.t.Fatal("no finish")
	}
	if gf.Reason != wf.Reason {
		e.t.Errorf("finish reason %q, want %q", gf.Reason, wf.Reason)
	}
	if gf.Usage != wantUsage {
		e.t.Errorf("usage %+v, want %+v", gf.Usage, wantUsage)
	}
	if gf.ProviderMetadata == nil || gf.ProviderMetadata["finishReason"] == nil {
		e.t.Errorf("provider metadata %v lacks the provider's finishReason", gf.ProviderMetadata)
	}
	if e.h.CheckFinish != nil {
		if err := e.h.CheckFinish(req, gf); err != nil {
			e.t.Error(err)
		}
	}
}

// wantError checks that r failed with a model error of kind (and status,
// when not 0) whose message contains text and no secret.
func (e env) wantError(r Result, kind model.ErrorKind, status int, text string) {
	e.t.Helper()
	var me *model.Error
	if !errors.As(r.Err, &me) {
		e.t.Fatalf("error %v (%T), want a *model.Error", r.Err, r.Err)
	}
	if me.Kind != kind || (status != 0 && me.Status != status) || !strings.Contains(me.Message, text) {
		e.t.Errorf("error kind %v status %d %q, want kind %v status %d containing %q", me.Kind, me.Status, me.Message, kind, status, text)
	}
	if err := CheckMessage(me.Message); err != nil {
		e.t.Error(err)
	}
	if r.Finish() != nil {
		e.t.Errorf("a failed call also finished")
	}
}

// wantCancelled checks that the fake saw exchange n's client go away
// within 100ms of since.
func (e env) wantCancelled(n int, since time.Time) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	at, ok := e.seen.WaitCancelled(ctx, n)
	if !ok {
		e.t.Fatal("the fake never saw the request cancelled")
	}
	if d := at.Sub(since); d > 100*time.Millisecond {
		e.t.Errorf("the fake saw the cancellation %v after it happened, want within 100ms", d)
	}
}

// Key is the API key the suite's models should use.
const Key = "test-key-0123456789"
