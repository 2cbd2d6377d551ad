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
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
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
	return model.Part{Kind: model.PartFinish, Finish: &model.Finish{Reason: reason, Usage: api.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}}}
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
	events []api.Event
}

func (r *recorder) emit(ev api.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

// decoded turns recorded events into what a client would read.
func (r *recorder) decoded(t *testing.T) []apitest.Event {
	t.Helper()
	var out []apitest.Event
	for _, ev := range r.events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var e apitest.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		e.Raw = string(b)
		out = append(out, e)
	}
	return out
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
		Messages: []api.Message{{Role: api.RoleUser, Content: msg}}}
}

func TestPlainReply(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("Hello"), text(" there"), finish(api.FinishStop, 10, 2))}}}
	rec := &recorder{}
	res, err := newAgent(t, m).Run(context.Background(), input("hi"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	events := rec.decoded(t)
	if err := apitest.Check(events); err != nil {
		t.Fatal(err)
	}
	if err := apitest.CheckAgainst(events, res.Response); err != nil {
		t.Fatal(err)
	}
	want := []string{"start", "step-start", "text", "text", "step-finish", "run-finish"}
	if got := apitest.Types(events); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	r := res.Response
	if r.Text != "Hello there" || r.FinishReason != api.FinishStop || len(r.Steps) != 1 {
		t.Fatalf("response %q %q %d steps", r.Text, r.FinishReason, len(r.Steps))
	}
	if r.Usage != (api.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}) || r.TotalUsage != r.Usage {
		t.Fatalf("usage %+v", r.Usage)
	}
	if len(r.TraceID) != 32 || r.Steps[0].TraceID != r.TraceID {
		t.Fatalf("traceId %q, step %q", r.TraceID, r.Steps[0].TraceID)
	}
	ui := r.Response.UIMessages
	if len(ui) != 2 || ui[0].Role != "user" || ui[1].Role != "assistant" || ui[1].Parts[0].Text != "Hello there" ||
		ui[1].Metadata.ThreadID != "t1" || ui[1].Metadata.ResourceID != "u1" {
		t.Fatalf("uiMessages %+v", ui)
	}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := apitest.CheckGenerateBody(body); err != nil {
		t.Fatal(err)
	}
}

func TestInstructions(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("ok"), finish(api.FinishStop, 1, 1))}}}
	in := input("hi")
	in.Personality = agent.Philosopher
	in.History = []model.Message{{Role: model.RoleUser, Content: "earlier"}, {Role: model.RoleAssistant, Content: "reply"}}
	in.Messages = append([]api.Message{{Role: api.RoleSystem, Content: "Answer in French."}}, in.Messages...)
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
		{parts: parts(toolCall("c1", "echo", `{"x":`, `1}`), finish(api.FinishToolCalls, 5, 3))},
		{parts: parts(text("done"), finish(api.FinishStop, 9, 1))},
	}}
	rec := &recorder{}
	res, err := newAgent(t, m, tool).Run(context.Background(), input("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	events := rec.decoded(t)
	if err := apitest.Check(events); err != nil {
		t.Fatal(err)
	}
	if err := apitest.CheckAgainst(events, res.Response); err != nil {
		t.Fatal(err)
	}
	want := "start,step-start,tool-call-input-streaming-start,tool-call-delta,tool-call-delta,tool-call-input-streaming-end,tool-call,tool-result,step-finish,step-start,text,step-finish,run-finish"
	if got := strings.Join(apitest.Types(events), ","); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	r := res.Response
	if len(r.Steps) != 2 || r.Steps[0].FinishReason != api.FinishToolCalls || r.Steps[1].StepType != api.StepToolResult {
		t.Fatalf("steps %+v", r.Steps)
	}
	if r.TotalUsage.InputTokens != 14 || r.Steps[1].TotalUsage.OutputTokens != 4 || r.Steps[0].TotalUsage.OutputTokens != 3 {
		t.Fatalf("usage %+v / %+v", r.TotalUsage, r.Steps[1].TotalUsage)
	}
	if string(r.ToolResults[0].Result) != `{"x":1}` || string(r.ToolCalls[0].Args) != `{"x":1}` {
		t.Fatalf("tool call %s result %s", r.ToolCalls[0].Args, r.ToolResults[0].Result)
	}
	// The second call sees the assistant's call and the tool's answer.
	second := m.reqs[1].Messages
	if n := len(second); n != 3 || second[1].ToolCalls[0].ID != "c1" || second[2].Role != model.RoleTool || second[2].Content != `{"x":1}` {
		t.Fatalf("second request %+v", second)
	}
	if len(res.Reply) != 3 {
		t.Fatalf("reply %+v", res.Reply)
	}
	parts := r.Response.UIMessages[1].Parts
	if len(parts) != 2 || parts[0].Type != "tool-echo" || parts[0].State != "output-available" || parts[1].Text != "done" {
		t.Fatalf("ui parts %+v", parts)
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
				{parts: parts(toolCall("c1", tc.tool, tc.args), finish(api.FinishToolCalls, 1, 1))},
				{parts: parts(text("sorry"), finish(api.FinishStop, 1, 1))},
			}}
			rec := &recorder{}
			res, err := newAgent(t, m, &echoTool{name: "echo"}).Run(context.Background(), input("go"), rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			events := rec.decoded(t)
			var errEv *apitest.Event
			for i := range events {
				if events[i].Type == api.EventError {
					errEv = &events[i]
				}
			}
			if errEv == nil || errEv.Error.Code != api.CodeToolError || errEv.Error.Message != tc.wantMsg {
				t.Fatalf("error event %+v, want TOOL_ERROR %q", errEv, tc.wantMsg)
			}
			// Bad arguments break one rule on purpose: their deltas are what
			// the model sent, the call's args the {} the tool was refused with.
			err = apitest.Check(events)
			if tc.name == "bad arguments" {
				if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "argsTextDelta of \"c1\" concatenate to {\"x\":, not to the args {}") {
					t.Fatalf("check: %v; want only the args of c1 to differ from their deltas", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			r := res.Response
			if r.Text != "sorry" || r.FinishReason != api.FinishStop {
				t.Fatalf("run did not go on: %q %q", r.Text, r.FinishReason)
			}
			if len(r.Warnings) != 1 || r.Warnings[0].Type != "tool-error" || r.Warnings[0].Message != tc.wantMsg {
				t.Fatalf("warnings %+v", r.Warnings)
			}
			var result map[string]string
			_ = json.Unmarshal(r.ToolResults[0].Result, &result)
			if !r.ToolResults[0].IsError || result["error"] != tc.wantMsg {
				t.Fatalf("tool result %+v", r.ToolResults[0])
			}
			if tm := m.reqs[1].Messages[2]; !tm.IsError || tm.Content != string(r.ToolResults[0].Result) {
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
		{parts: parts(toolCall("a", "echo", `{"n":1}`), toolCall("b", "echo", `{"n":2}`), finish(api.FinishToolCalls, 1, 1))},
		{parts: parts(text("both"), finish(api.FinishStop, 1, 1))},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec := &recorder{}
	res, err := newAgent(t, m, tool).Run(ctx, input("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Response.ToolResults) != 2 || res.Response.ToolResults[0].ToolCallID != "a" || res.Response.ToolResults[1].ToolCallID != "b" {
		t.Fatalf("results %+v: want both, in call order", res.Response.ToolResults)
	}
	if err := apitest.Check(rec.decoded(t)); err != nil {
		t.Fatal(err)
	}
}

// TestCallsClosedByFinish: calls the model never closes, with or without
// ids, are complete when it finishes, and each runs with its own arguments.
func TestCallsClosedByFinish(t *testing.T) {
	open := func(id, args string) []model.Part {
		return []model.Part{{Kind: model.PartToolCallStart, ToolName: "echo", ToolCallID: id}, {Kind: model.PartToolCallDelta, ToolCallID: id, Text: args}}
	}
	m := &script{turns: []turn{
		{parts: parts(open("", `{"n":1}`), open("", `{"n":2}`), open("c3", `{"n":3}`), finish(api.FinishToolCalls, 1, 1))},
		{parts: parts(text("all three"), finish(api.FinishStop, 1, 1))},
	}}
	rec := &recorder{}
	res, err := newAgent(t, m, &echoTool{name: "echo"}).Run(context.Background(), input("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if err := apitest.Check(rec.decoded(t)); err != nil {
		t.Fatal(err)
	}
	r := res.Response
	if len(r.ToolResults) != 3 || r.ToolCalls[0].ToolCallID == r.ToolCalls[1].ToolCallID || r.ToolCalls[2].ToolCallID != "c3" {
		t.Fatalf("calls %+v", r.ToolCalls)
	}
	for i, tr := range r.ToolResults {
		if want := fmt.Sprintf(`{"n":%d}`, i+1); tr.IsError || string(tr.Result) != want {
			t.Errorf("result %d: %s, want %s", i, tr.Result, want)
		}
	}
}

func TestMaxSteps(t *testing.T) {
	loop := turn{parts: parts(toolCall("", "echo", `{}`), finish(api.FinishToolCalls, 1, 1))}
	m := &script{turns: []turn{loop, loop, loop, loop}}
	in := input("go")
	in.MaxSteps = 2 // lowers the agent's 3
	res, err := newAgent(t, m, &echoTool{name: "echo"}).Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Response
	if len(r.Steps) != 2 || r.FinishReason != api.FinishToolCalls {
		t.Fatalf("%d steps, finish %q", len(r.Steps), r.FinishReason)
	}
	if len(r.Warnings) != 1 || r.Warnings[0].Type != "max-steps" {
		t.Fatalf("warnings %+v", r.Warnings)
	}
	if r.ToolCalls[0].ToolCallID == "" || r.ToolCalls[0].ToolCallID == r.ToolCalls[1].ToolCallID {
		t.Fatalf("missing call ids must be made up, uniquely: %+v", r.ToolCalls)
	}
}

func TestMaxOutputTokens(t *testing.T) {
	tests := []struct{ agentMax, reqMax, want int }{
		{0, 0, 0}, {0, 7, 7}, {10, 0, 10}, {10, 7, 7}, {10, 20, 10},
	}
	for _, tc := range tests {
		m := &script{turns: []turn{{parts: parts(text("x"), finish(api.FinishLength, 1, 1))}}}
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
		if res.Response.FinishReason != api.FinishLength {
			t.Errorf("finish %q", res.Response.FinishReason)
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
		{"after a tool round", []turn{{parts: parts(toolCall("c", "echo", `{}`), finish(api.FinishToolCalls, 1, 1))}, {err: upstream}}},
		{"stream ends without finish", []turn{{parts: parts(text("cut"))}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			res, err := newAgent(t, &script{turns: tc.turns}, &echoTool{name: "echo"}).Run(context.Background(), input("go"), rec.emit)
			var re *agent.RunError
			if res != nil || !errors.As(err, &re) || re.Code != api.CodeModelError {
				t.Fatalf("got %v, %v; want a MODEL_ERROR RunError", res, err)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("%v does not wrap the model error", err)
			}
			events := rec.decoded(t)
			if err := apitest.Check(events); err != nil {
				t.Fatal(err)
			}
			n := len(events)
			if events[n-2].Type != api.EventError || events[n-2].Error.Code != api.CodeModelError || !strings.HasPrefix(events[n-2].Error.Message, "script model failed: ") {
				t.Fatalf("second to last event %+v", events[n-2])
			}
			if !strings.Contains(events[n-1].Raw, `"finishReason":"error"`) {
				t.Fatalf("last event %s", events[n-1].Raw)
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
		if !errors.As(err, &re) || re.Code != api.CodeCancelled {
			t.Fatalf("got %v, want CANCELLED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not stop when its context ended")
	}
}

func TestEmitFailureStopsRun(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("a"), text("b"), text("c"), finish(api.FinishStop, 1, 3))}}}
	gone := errors.New("client gone")
	n := 0
	_, err := newAgent(t, m).Run(context.Background(), input("x"), func(ev api.Event) error {
		n++
		if ev.Type == api.EventText {
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
