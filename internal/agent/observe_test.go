package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/telemetry/telemetrytest"
	_ "github.com/companionhq/companion/internal/testkit"
)

// traced runs the agent once with an in-memory span exporter and returns
// the result, the error and the spans.
func traced(t *testing.T, m model.Model, content bool, obs agent.Observer, tools ...agent.Tool) (*agent.Result, error, tracetest.SpanStubs) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a, err := agent.New(agent.Config{Model: m, Tools: tools, MaxSteps: 3, Tracer: tp.Tracer("test"), TraceContent: content, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), input("go"), nil)
	return res, err, exp.GetSpans()
}

func byName(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %d", name, len(spans))
	return tracetest.SpanStub{}
}

func TestSpansOfAToolRound(t *testing.T) {
	m := &script{turns: []turn{
		{parts: parts(toolCall("c1", "echo", `{"x":1}`), toolCall("c2", "echo", `{"fail":"the sky fell"}`), finish(model.FinishToolCalls, 5, 3))},
		{parts: parts(text("done"), finish(model.FinishStop, 9, 1))},
	}}
	res, err, spans := traced(t, m, false, nil, &echoTool{name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	want := `invoke_agent companionAgent (internal)
  step (internal)
    chat script-1 (client)
    execute_tool echo (internal)
    execute_tool echo (internal) [error: the sky fell]
  step (internal)
    chat script-1 (client)
`
	if got := telemetrytest.Tree(spans); got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	run := byName(t, spans, "invoke_agent companionAgent")
	if got := run.SpanContext.TraceID().String(); got != res.TraceID {
		t.Fatalf("traceId %s, spans' %s", res.TraceID, got)
	}
	ra := telemetrytest.Attrs(run)
	if ra["gen_ai.operation.name"].AsString() != "invoke_agent" || ra["gen_ai.provider.name"].AsString() != "script" ||
		ra["gen_ai.conversation.id"].AsString() != "t1" || ra["gen_ai.usage.input_tokens"].AsInt64() != 14 ||
		ra["gen_ai.usage.output_tokens"].AsInt64() != 4 || ra["gen_ai.response.finish_reasons"].AsStringSlice()[0] != "stop" {
		t.Fatalf("run span attributes %v", ra)
	}
	for _, s := range spans {
		a := telemetrytest.Attrs(s)
		switch {
		case strings.HasPrefix(s.Name, "chat "):
			if a["gen_ai.operation.name"].AsString() != "chat" || a["gen_ai.request.model"].AsString() != "script-1" ||
				a["gen_ai.response.model"].AsString() != "script-1" || len(a["gen_ai.response.finish_reasons"].AsStringSlice()) != 1 {
				t.Errorf("chat span attributes %v", a)
			}
		case strings.HasPrefix(s.Name, "execute_tool "):
			if a["gen_ai.operation.name"].AsString() != "execute_tool" || a["gen_ai.tool.name"].AsString() != "echo" ||
				a["gen_ai.tool.type"].AsString() != "function" || !strings.HasPrefix(a["gen_ai.tool.call.id"].AsString(), "c") {
				t.Errorf("tool span attributes %v", a)
			}
			if failed := s.Status.Code == codes.Error; failed != (a["error.type"].AsString() == "tool_error") {
				t.Errorf("tool span %v with error.type %q", s.Status, a["error.type"].AsString())
			}
		}
		// Contents stay out unless asked for.
		for k := range a {
			if k == "gen_ai.input.messages" || k == "gen_ai.output.messages" || k == "gen_ai.system_instructions" ||
				k == "gen_ai.tool.call.arguments" || k == "gen_ai.tool.call.result" {
				t.Errorf("span %s records %s without TraceContent", s.Name, k)
			}
		}
	}
}

func TestSpansRecordContentWhenAllowed(t *testing.T) {
	m := &script{turns: []turn{
		{parts: parts(toolCall("c1", "echo", `{"x":1}`), finish(model.FinishToolCalls, 5, 3))},
		{parts: parts(text("done"), finish(model.FinishStop, 9, 1))},
	}}
	_, err, spans := traced(t, m, true, nil, &echoTool{name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	var chats []tracetest.SpanStub
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat ") {
			chats = append(chats, s)
		}
	}
	if len(chats) != 2 {
		t.Fatalf("%d chat spans", len(chats))
	}
	second := telemetrytest.Attrs(chats[1])
	var in []struct {
		Role  string
		Parts []map[string]any
	}
	if err := json.Unmarshal([]byte(second["gen_ai.input.messages"].AsString()), &in); err != nil {
		t.Fatalf("gen_ai.input.messages: %v", err)
	}
	if len(in) != 3 || in[0].Role != "user" || in[0].Parts[0]["content"] != "go" || in[1].Parts[0]["type"] != "tool_call" ||
		in[2].Role != "tool" || in[2].Parts[0]["type"] != "tool_call_response" {
		t.Fatalf("input messages %s", second["gen_ai.input.messages"].AsString())
	}
	if got := second["gen_ai.output.messages"].AsString(); got != `[{"role":"assistant","parts":[{"type":"text","content":"done"}],"finish_reason":"stop"}]` {
		t.Fatalf("output messages %s", got)
	}
	if !strings.Contains(second["gen_ai.system_instructions"].AsString(), "friend") {
		t.Fatalf("system instructions %s", second["gen_ai.system_instructions"].AsString())
	}
	tool := telemetrytest.Attrs(byName(t, spans, "execute_tool echo"))
	if tool["gen_ai.tool.call.arguments"].AsString() != `{"x":1}` || tool["gen_ai.tool.call.result"].AsString() != `{"x":1}` {
		t.Fatalf("tool span %v", tool)
	}
}

func TestSpansOfAModelFailure(t *testing.T) {
	upstream := &model.Error{Kind: model.KindUnavailable, Provider: "script", Message: "overloaded (HTTP 503)"}
	_, err, spans := traced(t, &script{turns: []turn{{parts: parts(text("half")), err: upstream}}}, false, nil)
	if err == nil {
		t.Fatal("the run did not fail")
	}
	want := `invoke_agent companionAgent (internal) [error: script model failed: overloaded (HTTP 503): script: overloaded (HTTP 503)]
  step (internal) [error: script: overloaded (HTTP 503)]
    chat script-1 (client) [error: script: overloaded (HTTP 503)]
`
	if got := telemetrytest.Tree(spans); got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	if got := telemetrytest.Attrs(byName(t, spans, "chat script-1"))["error.type"].AsString(); got != "unavailable" {
		t.Fatalf("chat error.type %q", got)
	}
	if got := telemetrytest.Attrs(byName(t, spans, "invoke_agent companionAgent"))["error.type"].AsString(); got != "MODEL_ERROR" {
		t.Fatalf("run error.type %q", got)
	}
}

// toolObserver records the tool label of each call.
type toolObserver struct {
	agent.Observer
	mu    sync.Mutex
	tools []string
}

func (o *toolObserver) ToolCalled(_ context.Context, c agent.ToolCallStats) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tools = append(o.tools, c.Tool)
}

func (o *toolObserver) RunStarted(context.Context, agent.RunInfo)                  {}
func (o *toolObserver) RunFinished(context.Context, agent.RunInfo, agent.RunStats) {}
func (o *toolObserver) ModelCalled(context.Context, agent.ModelCallStats)          {}
func TestUnknownToolIsOtherInMetrics(t *testing.T) {
	m := &script{turns: []turn{
		{parts: parts(toolCall("c1", "invented-by-the-model", `{}`), toolCall("c2", "echo", `{}`), finish(model.FinishToolCalls, 1, 1))},
		{parts: parts(text("ok"), finish(model.FinishStop, 1, 1))},
	}}
	obs := &toolObserver{}
	if _, err, _ := traced(t, m, false, obs, &echoTool{name: "echo"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(obs.tools, ",")
	if got != "_OTHER,echo" && got != "echo,_OTHER" {
		t.Fatalf("tool labels %s", got)
	}
}
