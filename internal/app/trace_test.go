package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/telemetry/telemetrytest"
	_ "github.com/companionhq/companion/internal/testkit"
)

const (
	generatePath = "/api/agents/companionAgent/generate"
	streamPath   = "/api/agents/companionAgent/stream"
)

func ask(question string) string {
	return `{"threadId":"thread-7","resourceId":"user-7","messages":[{"role":"user","content":"` + question + `"}],` +
		`"runtimeContext":{"metadata":{"personality":"guru"}}}`
}

// tracedService runs the service with every span going to an in-memory
// exporter.
func tracedService(t *testing.T, configure func(*app.Config)) (*apptest.Service, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	svc := apptest.Start(t, func(c *app.Config) {
		c.Telemetry.Exporter = exp
		if configure != nil {
			configure(c)
		}
	})
	return svc, exp
}

// spansOf returns the spans of trace id, once its server span has ended:
// the server span may end just after the client has read the response.
func spansOf(t *testing.T, exp *tracetest.InMemoryExporter, id string) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var out tracetest.SpanStubs
		server := false
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID().String() == id {
				out = append(out, s)
				server = server || s.SpanKind == trace.SpanKindServer
			}
		}
		if server {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server span of trace %s among %d spans", id, len(exp.GetSpans()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func named(t *testing.T, spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	t.Helper()
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no span %q", name)
	}
	return out
}

// wantAttrs fails unless s has every attribute of want, with its value.
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := telemetrytest.Attrs(s)
	for k, w := range want {
		v, ok := got[attribute.Key(k)]
		if !ok {
			t.Errorf("span %q lacks %s", s.Name, k)
			continue
		}
		if g := v.AsInterface(); !equal(g, w) {
			t.Errorf("span %q: %s = %v, want %v", s.Name, k, g, w)
		}
	}
}

func equal(got, want any) bool {
	switch w := want.(type) {
	case int:
		g, ok := got.(int64)
		return ok && g == int64(w)
	case []string:
		g, ok := got.([]string)
		return ok && strings.Join(g, ",") == strings.Join(w, ",")
	}
	return got == want
}

type generated struct {
	TraceID string `json:"traceId"`
	Steps   []struct {
		TraceID string `json:"traceId"`
	} `json:"steps"`
	Usage struct {
		InputTokens, OutputTokens, CachedInputTokens int
	} `json:"usage"`
	ToolCalls []struct {
		ToolCallID string `json:"toolCallId"`
	} `json:"toolCalls"`
}

func decode(t *testing.T, b []byte) generated {
	t.Helper()
	var g generated
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return g
}

// TestTraceOfAWeatherRun is the documented span tree: a weather run joins
// the caller's trace, and its traceId is that trace's id.
func TestTraceOfAWeatherRun(t *testing.T) {
	svc, exp := tracedService(t, nil)
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	res, body := svc.DoHeader(t, http.MethodPost, generatePath, ask("What's the weather in Berlin?"),
		http.Header{"Traceparent": {"00-" + caller + "-00f067aa0ba902b7-01"}})
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	g := decode(t, body)
	if g.TraceID != caller {
		t.Fatalf("traceId %s, want the caller's %s", g.TraceID, caller)
	}
	for i, s := range g.Steps {
		if s.TraceID != caller {
			t.Fatalf("step %d traceId %s", i, s.TraceID)
		}
	}
	spans := spansOf(t, exp, caller)
	want := `POST /api/agents/{agentId}/generate (server)
  companion.processor crisis (internal)
  companion.recall (internal)
  invoke_agent companionAgent (internal)
    step (internal)
      chat fake (client)
      execute_tool weatherTool (internal)
    step (internal)
      chat fake (client)
`
	got := telemetrytest.Tree(spans)
	if got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	t.Logf("span tree of a weather run:\n%s", got)
	server := named(t, spans, "POST /api/agents/{agentId}/generate")[0]
	if p := server.Parent; !p.IsRemote() || p.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("server span's parent %v is not the caller's span", p)
	}
	wantAttrs(t, server, map[string]any{"http.route": "/api/agents/{agentId}/generate", "http.request.method": "POST", "http.response.status_code": 200})
	run := named(t, spans, "invoke_agent companionAgent")[0]
	wantAttrs(t, run, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "companionAgent", "gen_ai.provider.name": "fake",
		"gen_ai.request.model": "fake", "gen_ai.conversation.id": "thread-7", "companion.personality": "guru",
		"gen_ai.response.finish_reasons": []string{"stop"}, "companion.steps": 2,
		"gen_ai.usage.input_tokens": g.Usage.InputTokens, "gen_ai.usage.output_tokens": g.Usage.OutputTokens,
		"gen_ai.usage.cache_read.input_tokens": g.Usage.CachedInputTokens,
	})
	steps := named(t, spans, "step")
	wantAttrs(t, steps[0], map[string]any{"companion.step.index": 0, "companion.step.type": "initial", "gen_ai.response.finish_reasons": []string{"tool_calls"}})
	wantAttrs(t, steps[1], map[string]any{"companion.step.index": 1, "companion.step.type": "tool-result", "gen_ai.response.finish_reasons": []string{"stop"}})
	chats := named(t, spans, "chat fake")
	wantAttrs(t, chats[0], map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "fake", "gen_ai.request.model": "fake",
		"gen_ai.response.model": "fake", "gen_ai.response.finish_reasons": []string{"tool_calls"},
	})
	for _, c := range chats {
		a := telemetrytest.Attrs(c)
		if a["gen_ai.usage.input_tokens"].AsInt64() <= 0 || a["gen_ai.usage.output_tokens"].AsInt64() <= 0 || a["gen_ai.response.id"].AsString() == "" {
			t.Errorf("chat span without usage or response id: %v", a)
		}
	}
	tool := named(t, spans, "execute_tool weatherTool")[0]
	wantAttrs(t, tool, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weatherTool", "gen_ai.tool.type": "function",
		"gen_ai.tool.call.id": g.ToolCalls[0].ToolCallID,
	})
	for _, s := range spans {
		if s.Status.Code == codes.Error {
			t.Errorf("span %s has error status %q", s.Name, s.Status.Description)
		}
		for _, kv := range s.Attributes {
			if strings.HasPrefix(string(kv.Key), "gen_ai.input") || strings.HasPrefix(string(kv.Key), "gen_ai.output") || kv.Key == "gen_ai.tool.call.arguments" {
				t.Errorf("span %s records content (%s) without the setting", s.Name, kv.Key)
			}
		}
	}
}

// TestTraceOfAPlainReply: no caller trace; the run starts one, and the
// traceId is its id.
func TestTraceOfAPlainReply(t *testing.T) {
	svc, exp := tracedService(t, nil)
	res, body := svc.Post(t, generatePath, ask("How do I start my day well?"))
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	g := decode(t, body)
	spans := spansOf(t, exp, g.TraceID)
	want := `POST /api/agents/{agentId}/generate (server)
  companion.processor crisis (internal)
  companion.recall (internal)
  invoke_agent companionAgent (internal)
    step (internal)
      chat fake (client)
`
	if got := telemetrytest.Tree(spans); got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	if p := named(t, spans, "POST /api/agents/{agentId}/generate")[0].Parent; p.IsValid() {
		t.Fatalf("server span has a parent %v without a traceparent", p)
	}
}

// TestTraceOfACrisis: the crisis protocol's span says it tripped, and the
// run's span carries the processor and the reason's code; the model is
// not called, recall does not run.
func TestTraceOfACrisis(t *testing.T) {
	svc, exp := tracedService(t, nil)
	res, body := svc.Post(t, generatePath, ask("I have decided to end my life tonight."))
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	g := decode(t, body)
	spans := spansOf(t, exp, g.TraceID)
	want := `POST /api/agents/{agentId}/generate (server)
  companion.processor crisis (internal)
  invoke_agent companionAgent (internal)
`
	if got := telemetrytest.Tree(spans); got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	wantAttrs(t, named(t, spans, "companion.processor crisis")[0], map[string]any{
		"companion.processor": "crisis", "companion.tripwire": true, "companion.tripwire.code": "suicidal-ideation"})
	wantAttrs(t, named(t, spans, "invoke_agent companionAgent")[0], map[string]any{
		"companion.tripwire": true, "companion.tripwire.processor": "crisis", "companion.tripwire.code": "suicidal-ideation"})
}

// TestTraceOfAToolError: the failing tool marks its span with the cause;
// the run goes on and ends well.
func TestTraceOfAToolError(t *testing.T) {
	svc, exp := tracedService(t, nil)
	res, body := svc.Post(t, streamPath, ask("What's the weather in Errorville?"))
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	events, err := apitest.ReadSSE(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var start struct {
		Payload struct {
			TraceID string `json:"traceId"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(events[0].Raw), &start); err != nil {
		t.Fatal(err)
	}
	spans := spansOf(t, exp, start.Payload.TraceID)
	want := `POST /api/agents/{agentId}/stream (server)
  companion.processor crisis (internal)
  companion.recall (internal)
  invoke_agent companionAgent (internal)
    step (internal)
      chat fake (client)
      execute_tool weatherTool (internal) [error: the forecast service failed: HTTP 500: Internal server error: the forecast model is unavailable]
    step (internal)
      chat fake (client)
`
	if got := telemetrytest.Tree(spans); got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	wantAttrs(t, named(t, spans, "execute_tool weatherTool")[0], map[string]any{"error.type": "tool_error"})
}

// TestTraceContentSetting: with the setting on, the model and tool spans
// carry the conversation, the arguments and the result.
func TestTraceContentSetting(t *testing.T) {
	svc, exp := tracedService(t, func(c *app.Config) { c.Telemetry.TraceContent = true })
	_, body := svc.Post(t, generatePath, ask("What's the weather in Berlin?"))
	spans := spansOf(t, exp, decode(t, body).TraceID)
	chat := telemetrytest.Attrs(named(t, spans, "chat fake")[0])
	if !strings.Contains(chat["gen_ai.input.messages"].AsString(), "What's the weather in Berlin?") ||
		!strings.Contains(chat["gen_ai.output.messages"].AsString(), `"type":"tool_call"`) ||
		!strings.Contains(chat["gen_ai.system_instructions"].AsString(), "guru") {
		t.Fatalf("chat span contents %v", chat)
	}
	tool := telemetrytest.Attrs(named(t, spans, "execute_tool weatherTool")[0])
	if tool["gen_ai.tool.call.arguments"].AsString() != `{"location":"Berlin"}` || !strings.Contains(tool["gen_ai.tool.call.result"].AsString(), `"temperature"`) {
		t.Fatalf("tool span contents %v", tool)
	}
}

// TestTraceIDWithoutExport: with no exporter the spans are not recorded,
// yet the traceId is a real trace id that follows the caller's.
func TestTraceIDWithoutExport(t *testing.T) {
	svc := apptest.Start(t, nil)
	const caller = "0af7651916cd43dd8448eb211c80319c"
	_, body := svc.DoHeader(t, http.MethodPost, generatePath, ask("Hi"), http.Header{"Traceparent": {"00-" + caller + "-b7ad6b7169203331-01"}})
	if g := decode(t, body); g.TraceID != caller || g.Steps[0].TraceID != caller {
		t.Fatalf("traceId %s, step %s; want %s", g.TraceID, g.Steps[0].TraceID, caller)
	}
	_, body = svc.Post(t, generatePath, ask("Hi"))
	if id := decode(t, body).TraceID; len(id) != 32 || id == caller || strings.Trim(id, "0") == "" {
		t.Fatalf("traceId %q", id)
	}
}

// TestTraceOfAWorkingMemoryUpdate: "Remember ..." makes the model call
// updateWorkingMemory, whose update has a span of its own under the tool's,
// with the scope, version and size, not the block; so does a person's
// edit through the API.
func TestTraceOfAWorkingMemoryUpdate(t *testing.T) {
	svc, exp := tracedService(t, nil)
	res, body := svc.Post(t, generatePath, ask("Remember that my sister is called Ana."))
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	spans := spansOf(t, exp, decode(t, body).TraceID)
	want := `POST /api/agents/{agentId}/generate (server)
  companion.processor crisis (internal)
  companion.recall (internal)
  invoke_agent companionAgent (internal)
    step (internal)
      chat fake (client)
      execute_tool updateWorkingMemory (internal)
        companion.working_memory.update (internal)
    step (internal)
      chat fake (client)
`
	got := telemetrytest.Tree(spans)
	if got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	t.Logf("span tree of a working memory update:\n%s", got)
	update := named(t, spans, "companion.working_memory.update")[0]
	wantAttrs(t, update, map[string]any{"companion.working_memory.scope": "resource", "companion.working_memory.version": 1})
	if n := telemetrytest.Attrs(update)["companion.working_memory.bytes"].AsInt64(); n < int64(len("- my sister is called Ana")) {
		t.Errorf("companion.working_memory.bytes is %d", n)
	}
	for _, kv := range update.Attributes {
		if strings.Contains(kv.Value.Emit(), "sister") {
			t.Errorf("the span records the block: %s = %s", kv.Key, kv.Value.Emit())
		}
	}

	// A person's edit: its own trace, from the route.
	const caller = "5bf92f3577b34da6a3ce929d0e0e4737"
	res, body = svc.DoHeader(t, http.MethodPost, "/api/memory/threads/thread-7/working-memory?resourceId=user-7", `{"workingMemory":"- Sister: Ana\n"}`,
		http.Header{"Traceparent": {"00-" + caller + "-00f067aa0ba902b7-01"}})
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	spans = spansOf(t, exp, caller)
	want = `POST /api/memory/threads/{threadId}/working-memory (server)
  companion.working_memory.update (internal)
`
	if got := telemetrytest.Tree(spans); got != want {
		t.Fatalf("span tree\n%s\nwant\n%s", got, want)
	}
	wantAttrs(t, named(t, spans, "companion.working_memory.update")[0], map[string]any{"companion.working_memory.version": 2, "companion.working_memory.bytes": len("- Sister: Ana\n")})

	// Refused (past its size limit): the span says why.
	res, body = svc.DoHeader(t, http.MethodPost, "/api/memory/threads/thread-7/working-memory?resourceId=user-7",
		`{"workingMemory":"`+strings.Repeat("x", 17<<10)+`"}`, http.Header{"Traceparent": {"00-" + caller[:31] + "8-00f067aa0ba902b7-01"}})
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	failed := named(t, spansOf(t, exp, caller[:31]+"8"), "companion.working_memory.update")[0]
	if failed.Status.Code != codes.Error || !strings.Contains(failed.Status.Description, "more than its limit") {
		t.Errorf("the refused update's span: %+v", failed.Status)
	}
	wantAttrs(t, failed, map[string]any{"error.type": "too_large"})
}
