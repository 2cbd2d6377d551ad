package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	_ "github.com/companionhq/companion/internal/testkit"
)

// script is a model that answers each call with the next scripted turn and
// records the requests it got.
type script struct {
	mu    sync.Mutex
	turns []turn
	reqs  []model.Request
}

// turn is one scripted answer: parts, then err (if any) instead of a finish.
type turn struct {
	parts []model.Part
	err   error
	// block, when set, makes the model wait for ctx to end after the parts.
	block bool
}

func (s *script) Provider() string { return "script" }
func (s *script) ID() string       { return "script-1" }

func (s *script) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Part, error] {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	var t turn
	if len(s.reqs) <= len(s.turns) {
		t = s.turns[len(s.reqs)-1]
	} else {
		t = turn{err: errors.New("script: no more turns")}
	}
	s.mu.Unlock()
	return func(yield func(model.Part, error) bool) {
		for _, p := range t.parts {
			if !yield(p, nil) {
				return
			}
		}
		if t.block {
			<-ctx.Done()
			yield(model.Part{}, ctx.Err())
			return
		}
		if t.err != nil {
			yield(model.Part{}, t.err)
		}
	}
}

func text(s string) model.Part { return model.Part{Kind: model.PartText, Text: s} }

func finish(reason string, in, out int) model.Part {
	return model.Part{Kind: model.PartFinish, Finish: &model.Finish{Reason: reason, Usage: model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}}}
}

func toolCall(id, name string, deltas ...string) []model.Part {
	ps := []model.Part{{Kind: model.PartToolCallStart, ToolCallID: id, ToolName: name}}
	for _, d := range deltas {
		ps = append(ps, model.Part{Kind: model.PartToolCallDelta, ToolCallID: id, Text: d})
	}
	return append(ps, model.Part{Kind: model.PartToolCallEnd, ToolCallID: id})
}

func parts(groups ...any) []model.Part {
	var out []model.Part
	for _, g := range groups {
		switch g := g.(type) {
		case model.Part:
			out = append(out, g)
		case []model.Part:
			out = append(out, g...)
		}
	}
	return out
}

// echoTool returns its args as its result, or fails, panics or returns
// what JSON cannot encode when they say so.
type echoTool struct {
	name    string
	started chan struct{} // receives once per call, when set
	release chan struct{} // calls wait for it, when set
	calls   atomic.Int32
}

func (t *echoTool) Name() string                { return t.name }
func (t *echoTool) Description() string         { return "echoes its arguments" }
func (t *echoTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t *echoTool) Run(ctx context.Context, args json.RawMessage) (any, error) {
	t.calls.Add(1)
	if t.started != nil {
		t.started <- struct{}{}
	}
	if t.release != nil {
		select {
		case <-t.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	if msg, ok := a["fail"].(string); ok {
		return nil, errors.New(msg)
	}
	if _, ok := a["panic"]; ok {
		panic("tool exploded")
	}
	if _, ok := a["unencodable"]; ok {
		return make(chan int), nil
	}
	return a, nil
}

type recorder struct {
	mu     sync.Mutex
	events []agent.Event
}

func (r *recorder) emit(ev agent.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

// names lists the recorded events' types, comma-separated.
func (r *recorder) names() string {
	var out []string
	for _, ev := range r.events {
		out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", ev), "agent."))
	}
	return strings.Join(out, ",")
}

// check verifies the rules a run's events keep, stated apart from the
// agent's code: text deltas concatenate to the reply's text; a call's
// input deltas to its arguments (unless they were not a JSON object, when
// the call failed); a call is reported before its outcome, which names it;
// steps open and close in order.
func (r *recorder) check(t *testing.T, res *agent.Result) {
	t.Helper()
	var text strings.Builder
	deltas := map[string]string{}
	called := map[string]agent.ToolCall{}
	failed := map[string]bool{}
	step := -1
	for i, ev := range r.events {
		switch e := ev.(type) {
		case agent.RunStarted:
			if i != 0 {
				t.Fatalf("RunStarted at %d", i)
			}
		case agent.StepStarted:
			if e.Index != step+1 {
				t.Fatalf("step %d started after step %d", e.Index, step)
			}
			step = e.Index
		case agent.StepFinished:
			if e.Index != step {
				t.Fatalf("step %d finished in step %d", e.Index, step)
			}
		case agent.TextDelta:
			text.WriteString(e.Text)
		case agent.ToolInputDelta:
			deltas[e.CallID] += e.Delta
		case agent.ToolCalled:
			called[e.Call.ID] = e.Call
		case agent.ToolFailed:
			failed[e.CallID] = true
		case agent.ToolReturned:
			c, ok := called[e.Result.CallID]
			if !ok || c.Name != e.Result.Tool || failed[c.ID] != e.Result.Failed() {
				t.Fatalf("outcome %+v does not answer a call %+v", e.Result, c)
			}
			// JSON's white space around the arguments does not count, and
			// none at all means {}.
			d := strings.Trim(deltas[c.ID], " \t\r\n")
			if d == "" {
				d = "{}"
			}
			if !e.Result.Failed() && d != string(c.Args) {
				t.Fatalf("the deltas of %s concatenate to %q, not to its args %s", c.ID, deltas[c.ID], c.Args)
			}
		}
	}
	if res != nil && text.String() != res.Text() {
		t.Fatalf("text deltas concatenate to %q, the reply is %q", text.String(), res.Text())
	}
}

func newAgent(t *testing.T, m model.Model, tools ...agent.Tool) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Model: m, Tools: tools, MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func input(msg string) agent.Input {
	return agent.Input{ThreadID: "t1", ResourceID: "u1", Personality: agent.Friend,
		Messages: []agent.Message{{Role: model.RoleUser, Content: msg}}}
}

func TestPlainReply(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("Hello"), text(" there"), finish(model.FinishStop, 10, 2))}}}
	rec := &recorder{}
	res, err := newAgent(t, m).Run(context.Background(), input("hi"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t, res)
	if got, want := rec.names(), "RunStarted,StepStarted,TextDelta,TextDelta,StepFinished"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if res.Text() != "Hello there" || res.FinishReason != model.FinishStop || len(res.Steps) != 1 {
		t.Fatalf("result %q %q %d steps", res.Text(), res.FinishReason, len(res.Steps))
	}
	if res.Usage != (model.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}) || res.Steps[0].Total != res.Usage {
		t.Fatalf("usage %+v", res.Usage)
	}
	start := rec.events[0].(agent.RunStarted)
	if len(res.TraceID) != 32 || start.TraceID != res.TraceID || start.RunID != res.RunID || start.ThreadID != "t1" || start.ResourceID != "u1" {
		t.Fatalf("traceId %q, start %+v", res.TraceID, start)
	}
	if len(res.Input) != 1 || res.Input[0].ID == "" || res.Input[0].Content != "hi" || res.ReplyID == "" ||
		rec.events[1].(agent.StepStarted).MessageID != res.ReplyID {
		t.Fatalf("input %+v, reply id %q", res.Input, res.ReplyID)
	}
	if len(res.Reply) != 1 || res.Reply[0].Role != model.RoleAssistant || res.Reply[0].Content != "Hello there" {
		t.Fatalf("reply %+v", res.Reply)
	}
}

func TestInstructions(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("ok"), finish(model.FinishStop, 1, 1))}}}
	in := input("hi")
	in.Personality = agent.Philosopher
	in.History = []model.Message{{Role: model.RoleUser, Content: "earlier"}, {Role: model.RoleAssistant, Content: "reply"}}
	in.Messages = append([]agent.Message{{Role: agent.RoleSystem, Content: "Answer in French."}}, in.Messages...)
	if _, err := newAgent(t, m).Run(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	req := m.reqs[0]
	if !strings.Contains(req.System, "philosopher mode") || !strings.HasSuffix(req.System, "Answer in French.") {
		t.Fatalf("system %q: want the personality, then the caller's instructions", req.System)
	}
	if len(req.Messages) != 3 || req.Messages[0].Content != "earlier" || req.Messages[2].Content != "hi" {
		t.Fatalf("messages %+v: want history then the new message, no system message", req.Messages)
	}
	if len(req.Tools) != 0 {
		t.Fatalf("tools %+v", req.Tools)
	}
}

func TestPersonalities(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range agent.Personalities() {
		got, err := agent.ParsePersonality(string(p))
		if err != nil || got != p {
			t.Fatalf("ParsePersonality(%q) = %q, %v", p, got, err)
		}
		ins := agent.Instructions(p, nil)
		if !strings.Contains(ins, "in "+string(p)+" mode") || seen[ins] {
			t.Fatalf("instructions of %s are not its own: %q", p, ins)
		}
		seen[ins] = true
	}
	if p, err := agent.ParsePersonality(""); err != nil || p != agent.Friend {
		t.Fatalf("empty personality = %q, %v; want friend", p, err)
	}
	if _, err := agent.ParsePersonality("pirate"); err == nil || !strings.Contains(err.Error(), "guru, wanderer, friend, philosopher") {
		t.Fatalf("pirate: %v", err)
	}
}

func TestToolRound(t *testing.T) {
	tool := &echoTool{name: "echo"}
	m := &script{turns: []turn{
		{parts: parts(toolCall("c1", "echo", `{"x":`, `1}`), finish(model.FinishToolCalls, 5, 3))},
		{parts: parts(text("done"), finish(model.FinishStop, 9, 1))},
	}}
	rec := &recorder{}
	res, err := newAgent(t, m, tool).Run(context.Background(), input("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t, res)
	want := "RunStarted,StepStarted,ToolInputStarted,ToolInputDelta,ToolInputDelta,ToolInputEnded,ToolCalled,ToolReturned,StepFinished,StepStarted,TextDelta,StepFinished"
	if got := rec.names(); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	if len(res.Steps) != 2 || res.Steps[0].FinishReason != model.FinishToolCalls || res.Steps[1].Kind != agent.StepToolResult {
		t.Fatalf("steps %+v", res.Steps)
	}
	if res.Usage.InputTokens != 14 || res.Steps[1].Total.OutputTokens != 4 || res.Steps[0].Total.OutputTokens != 3 {
		t.Fatalf("usage %+v / %+v", res.Usage, res.Steps[1].Total)
	}
	if string(res.Steps[0].Results[0].Output) != `{"x":1}` || string(res.Steps[0].Calls[0].Args) != `{"x":1}` {
		t.Fatalf("tool call %s result %s", res.Steps[0].Calls[0].Args, res.Steps[0].Results[0].Output)
	}
	// The second call sees the assistant's call and the tool's answer.
	second := m.reqs[1].Messages
	if n := len(second); n != 3 || second[1].ToolCalls[0].ID != "c1" || second[2].Role != model.RoleTool || second[2].Content != `{"x":1}` {
		t.Fatalf("second request %+v", second)
	}
	if len(res.Reply) != 3 || len(res.Steps[0].Messages) != 2 || len(res.Steps[1].Messages) != 1 {
		t.Fatalf("reply %+v", res.Reply)
	}
}

func TestToolErrors(t *testing.T) {
	tests := []struct {
		name, tool, args, wantMsg string
	}{
		{"tool fails", "echo", `{"fail":"the sky fell"}`, "echo failed: the sky fell"},
		{"unknown tool", "nope", `{}`, `nope failed: no tool named "nope" is available`},
		{"bad arguments", "echo", `{"x":`, "echo failed: the model sent arguments that are not a JSON object"},
		{"tool panics", "echo", `{"panic":true}`, "echo failed: the tool failed inside the service"},
		{"result not encodable", "echo", `{"unencodable":true}`, "echo failed: its result could not be encoded: json: unsupported type: chan int"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &script{turns: []turn{
				{parts: parts(toolCall("c1", tc.tool, tc.args), finish(model.FinishToolCalls, 1, 1))},
				{parts: parts(text("sorry"), finish(model.FinishStop, 1, 1))},
			}}
			rec := &recorder{}
			res, err := newAgent(t, m, &echoTool{name: "echo"}).Run(context.Background(), input("go"), rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			rec.check(t, res)
			var failed *agent.ToolFailed
			for _, ev := range rec.events {
				if f, ok := ev.(agent.ToolFailed); ok {
					failed = &f
				}
			}
			if failed == nil || failed.CallID != "c1" || failed.Message != tc.wantMsg {
				t.Fatalf("failure %+v, want %q", failed, tc.wantMsg)
			}
			if res.Text() != "sorry" || res.FinishReason != model.FinishStop {
				t.Fatalf("run did not go on: %q %q", res.Text(), res.FinishReason)
			}
			if len(res.Warnings) != 1 || res.Warnings[0].Kind != "tool-error" || res.Warnings[0].Message != tc.wantMsg {
				t.Fatalf("warnings %+v", res.Warnings)
			}
			tr := res.Steps[0].Results[0]
			var result map[string]string
			_ = json.Unmarshal(tr.Output, &result)
			if !tr.Failed() || tr.Error != tc.wantMsg || result["error"] != tc.wantMsg {
				t.Fatalf("tool result %+v", tr)
			}
			if tm := m.reqs[1].Messages[2]; !tm.IsError || tm.Content != string(tr.Output) {
				t.Fatalf("model was not told: %+v", tm)
			}
		})
	}
}

func TestToolsRunConcurrently(t *testing.T) {
	// Each call waits until both have started: run one at a time, they would
	// never finish.
	tool := &echoTool{name: "echo", started: make(chan struct{}, 2), release: make(chan struct{})}
	go func() {
		<-tool.started
		<-tool.started
		close(tool.release)
	}()
	m := &script{turns: []turn{
		{parts: parts(toolCall("a", "echo", `{"n":1}`), toolCall("b", "echo", `{"n":2}`), finish(model.FinishToolCalls, 1, 1))},
		{parts: parts(text("both"), finish(model.FinishStop, 1, 1))},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec := &recorder{}
	res, err := newAgent(t, m, tool).Run(ctx, input("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Steps[0].Results
	if len(rs) != 2 || rs[0].CallID != "a" || rs[1].CallID != "b" {
		t.Fatalf("results %+v: want both, in call order", rs)
	}
	rec.check(t, res)
}

// TestCallsClosedByFinish: calls the model never closes, with or without
// ids, are complete when it finishes, and each runs with its own arguments.
func TestCallsClosedByFinish(t *testing.T) {
	open := func(id, args string) []model.Part {
		return []model.Part{{Kind: model.PartToolCallStart, ToolName: "echo", ToolCallID: id}, {Kind: model.PartToolCallDelta, ToolCallID: id, Text: args}}
	}
	m := &script{turns: []turn{
		{parts: parts(open("", `{"n":1}`), open("", `{"n":2}`), open("c3", `{"n":3}`), finish(model.FinishToolCalls, 1, 1))},
		{parts: parts(text("all three"), finish(model.FinishStop, 1, 1))},
	}}
	rec := &recorder{}
	res, err := newAgent(t, m, &echoTool{name: "echo"}).Run(context.Background(), input("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t, res)
	calls, results := res.Steps[0].Calls, res.Steps[0].Results
	if len(results) != 3 || calls[0].ID == calls[1].ID || calls[2].ID != "c3" {
		t.Fatalf("calls %+v", calls)
	}
	for i, tr := range results {
		if want := fmt.Sprintf(`{"n":%d}`, i+1); tr.Failed() || string(tr.Output) != want {
			t.Errorf("result %d: %s, want %s", i, tr.Output, want)
		}
	}
}

func TestMaxSteps(t *testing.T) {
	loop := turn{parts: parts(toolCall("", "echo", `{}`), finish(model.FinishToolCalls, 1, 1))}
	m := &script{turns: []turn{loop, loop, loop, loop}}
	in := input("go")
	in.MaxSteps = 2 // lowers the agent's 3
	res, err := newAgent(t, m, &echoTool{name: "echo"}).Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 || res.FinishReason != model.FinishToolCalls {
		t.Fatalf("%d steps, finish %q", len(res.Steps), res.FinishReason)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Kind != "max-steps" {
		t.Fatalf("warnings %+v", res.Warnings)
	}
	if a, b := res.Steps[0].Calls[0].ID, res.Steps[1].Calls[0].ID; a == "" || a == b {
		t.Fatalf("missing call ids must be made up, uniquely: %q, %q", a, b)
	}
}

func TestMaxOutputTokens(t *testing.T) {
	tests := []struct{ agentMax, reqMax, want int }{
		{0, 0, 0}, {0, 7, 7}, {10, 0, 10}, {10, 7, 7}, {10, 20, 10},
	}
	for _, tc := range tests {
		m := &script{turns: []turn{{parts: parts(text("x"), finish(model.FinishLength, 1, 1))}}}
		a, err := agent.New(agent.Config{Model: m, MaxOutputTokens: tc.agentMax})
		if err != nil {
			t.Fatal(err)
		}
		in := input("x")
		in.MaxOutputTokens = tc.reqMax
		res, err := a.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.reqs[0].MaxOutputTokens; got != tc.want {
			t.Errorf("agent %d, request %d: model got %d, want %d", tc.agentMax, tc.reqMax, got, tc.want)
		}
		if res.FinishReason != model.FinishLength {
			t.Errorf("finish %q", res.FinishReason)
		}
	}
}

func TestModelFailure(t *testing.T) {
	upstream := &model.Error{Kind: model.KindUnavailable, Provider: "script", Message: "overloaded (HTTP 503)"}
	tests := []struct {
		name  string
		turns []turn
	}{
		{"before any output", []turn{{err: upstream}}},
		{"mid-stream", []turn{{parts: parts(text("half")), err: upstream}}},
		{"after a tool round", []turn{{parts: parts(toolCall("c", "echo", `{}`), finish(model.FinishToolCalls, 1, 1))}, {err: upstream}}},
		{"stream ends without finish", []turn{{parts: parts(text("cut"))}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			res, err := newAgent(t, &script{turns: tc.turns}, &echoTool{name: "echo"}).Run(context.Background(), input("go"), rec.emit)
			var re *agent.RunError
			if res != nil || !errors.As(err, &re) || re.Kind != agent.FailedModel {
				t.Fatalf("got %v, %v; want a model failure", res, err)
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Provider != "script" {
				t.Fatalf("%v does not wrap the model error", err)
			}
			rec.check(t, nil)
			// The run's end is not an event: the caller reports the failure.
			if _, ok := rec.events[len(rec.events)-1].(agent.StepFinished); ok && tc.name != "after a tool round" {
				t.Fatalf("a failed step finished: %s", rec.names())
			}
		})
	}
}

func TestCancellationStopsTools(t *testing.T) {
	tool := &echoTool{name: "echo", started: make(chan struct{}, 1), release: make(chan struct{})}
	m := &script{turns: []turn{{parts: toolCall("c", "echo", `{}`), block: true}}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tool.started
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := newAgent(t, m, tool).Run(ctx, input("go"), nil)
		done <- err
	}()
	select {
	case err := <-done:
		var re *agent.RunError
		if !errors.As(err, &re) || re.Kind != agent.FailedCancelled {
			t.Fatalf("got %v, want a cancelled run", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not stop when its context ended")
	}
}

func TestEmitFailureStopsRun(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("a"), text("b"), text("c"), finish(model.FinishStop, 1, 3))}}}
	gone := errors.New("client gone")
	n := 0
	_, err := newAgent(t, m).Run(context.Background(), input("x"), func(ev agent.Event) error {
		n++
		if _, ok := ev.(agent.TextDelta); ok {
			return gone
		}
		return nil
	})
	if !errors.Is(err, gone) {
		t.Fatalf("got %v, want the emit error", err)
	}
	if n != 3 {
		t.Fatalf("%d emits: the run must stop at the first failure", n)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := agent.New(agent.Config{}); err == nil {
		t.Fatal("no model: want an error")
	}
	m := &script{}
	if _, err := agent.New(agent.Config{Model: m, Tools: []agent.Tool{&echoTool{name: "a"}, &echoTool{name: "a"}}}); err == nil {
		t.Fatal("duplicate tools: want an error")
	}
	if _, err := agent.New(agent.Config{Model: m, MaxSteps: -1}); err == nil {
		t.Fatal("negative limit: want an error")
	}
}

// BenchmarkRun is one run on the fake model, with the weather tool's
// stand-in: a tool round and a reply.
func BenchmarkRun(b *testing.B) {
	m := &script{}
	a, err := agent.New(agent.Config{Model: m, Tools: []agent.Tool{&echoTool{name: "echo"}}, MaxSteps: 3})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.turns = []turn{
			{parts: parts(toolCall("c1", "echo", `{"x":`, `1}`), finish(model.FinishToolCalls, 5, 3))},
			{parts: parts(text("Hello"), text(" there"), finish(model.FinishStop, 9, 2))},
		}
		m.reqs = nil
		if _, err := a.Run(context.Background(), input("go"), func(agent.Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunContextAndTools: a run's Context follows the instructions, and its
// Tools are offered beside the agent's and run like them.
func TestRunContextAndTools(t *testing.T) {
	m := &script{turns: []turn{
		{parts: parts(toolCall("c1", "remember", `{"fact":`, `"a dog"}`), finish(model.FinishToolCalls, 5, 3))},
		{parts: parts(text("Noted."), finish(model.FinishStop, 9, 2))},
	}}
	own := &echoTool{name: "remember"}
	in := input("Remember I have a dog")
	in.Context = []string{"<working_memory>\n- Name: Sam\n</working_memory>", "  ", "Recalled: you like dogs."}
	in.Tools = []agent.Tool{own}
	res, err := newAgent(t, m, &echoTool{name: "weatherTool"}).Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if own.calls.Load() != 1 || res.Text() != "Noted." {
		t.Fatalf("the run's tool ran %d times; text %q", own.calls.Load(), res.Text())
	}
	req := m.reqs[0]
	if !strings.HasSuffix(req.System, "\n\n<working_memory>\n- Name: Sam\n</working_memory>\n\nRecalled: you like dogs.") {
		t.Fatalf("system %q", req.System)
	}
	var names []string
	for _, s := range req.Tools {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "weatherTool,remember" {
		t.Fatalf("tools on offer %v", names)
	}
	// Another run of the same agent is offered its own tools only.
	m2 := &script{turns: []turn{{parts: parts(text("ok"), finish(model.FinishStop, 1, 1))}}}
	a := newAgent(t, m2, &echoTool{name: "weatherTool"})
	if _, err := a.Run(context.Background(), input("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if len(m2.reqs[0].Tools) != 1 {
		t.Fatalf("a later run is offered %d tools", len(m2.reqs[0].Tools))
	}
}
