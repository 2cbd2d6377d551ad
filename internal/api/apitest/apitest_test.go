package apitest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	_ "github.com/companionhq/companion/internal/testkit"
)

// good is a valid stream with a tool round.
var good = []string{
	`{"type":"start","runId":"r","payload":{}}`,
	`{"type":"step-start","runId":"r","payload":{}}`,
	`{"type":"tool-call-input-streaming-start","runId":"r","payload":{"toolCallId":"c1","toolName":"weatherTool"}}`,
	`{"type":"tool-call-delta","runId":"r","payload":{"argsTextDelta":"{\"location\":","toolCallId":"c1","toolName":"weatherTool"}}`,
	`{"type":"tool-call-delta","runId":"r","payload":{"argsTextDelta":"\"Berlin\"}","toolCallId":"c1","toolName":"weatherTool"}}`,
	`{"type":"tool-call-input-streaming-end","runId":"r","payload":{"toolCallId":"c1"}}`,
	`{"type":"tool-call","runId":"r","payload":{"toolCallId":"c1","toolName":"weatherTool","args":{"location":"Berlin"},"providerMetadata":{}}}`,
	`{"type":"tool-result","runId":"r","payload":{"toolCallId":"c1","toolName":"weatherTool","result":{"temperature":3}}}`,
	`{"type":"step-finish","runId":"r","payload":{"stepType":"initial","finishReason":"tool_calls"}}`,
	`{"type":"step-start","runId":"r","payload":{}}`,
	`{"type":"text","runId":"r","text":"It is "}`,
	`{"type":"text","runId":"r","text":"3°C."}`,
	`{"type":"step-finish","runId":"r","payload":{"stepType":"tool-result","finishReason":"stop"}}`,
	`{"type":"run-finish","runId":"r","payload":{"finishReason":"stop"}}`,
}

func sse(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("data: " + l + "\n\n")
	}
	return b.String()
}

func read(t *testing.T, lines []string) []apitest.Event {
	t.Helper()
	events, err := apitest.ReadSSE(strings.NewReader(sse(lines)))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// with returns good with event i replaced (or removed when repl is "").
func with(i int, repl string) []string {
	out := append([]string{}, good[:i]...)
	if repl != "" {
		out = append(out, repl)
	}
	return append(out, good[i+1:]...)
}

func TestCheckAcceptsAValidStream(t *testing.T) {
	if err := apitest.Check(read(t, good)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckCatchesViolations(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   string
	}{
		{"args deltas differ from args", with(4, `{"type":"tool-call-delta","runId":"r","payload":{"argsTextDelta":"\"Paris\"}","toolCallId":"c1","toolName":"weatherTool"}}`), "concatenate to"},
		{"result answers no call", with(7, `{"type":"tool-result","runId":"r","payload":{"toolCallId":"c9","toolName":"weatherTool","result":{}}}`), "answers no earlier tool-call"},
		{"call without result", with(7, ""), `tool call "c1" has no tool-result`},
		{"run-finish not last", append(append([]string{}, good...), `{"type":"text","runId":"r","text":"late"}`), "comes after run-finish"},
		{"no run-finish", good[:len(good)-1], "must end with exactly one run-finish"},
		{"missing runId", with(10, `{"type":"text","text":"It is "}`), "runId"},
		{"other run's id", with(10, `{"type":"text","runId":"x","text":"It is "}`), "differs from the run's"},
		{"start not first", append([]string{good[1]}, good[2:]...), "first event must be start"},
		{"text outside a step", with(9, ""), "outside a step"},
		{"text in payload", with(10, `{"type":"text","runId":"r","payload":{"text":"It is "}}`), "no text at the top level"},
		{"error without code", with(10, `{"type":"error","runId":"r","error":{"message":"x"}}`), "needs error.message and error.code"},
		{"unknown type", with(10, `{"type":"thinking","runId":"r"}`), "unknown event type"},
		{"tool-call without providerMetadata", with(6, `{"type":"tool-call","runId":"r","payload":{"toolCallId":"c1","toolName":"weatherTool","args":{"location":"Berlin"}}}`), "providerMetadata"},
		{"step-finish without finishReason", with(12, `{"type":"step-finish","runId":"r","payload":{"stepType":"tool-result"}}`), "needs stepType and finishReason"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := apitest.Check(read(t, tc.events))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

func TestCheckFailedRun(t *testing.T) {
	// A run that fails mid-step ends with error and run-finish (error).
	cut := append(append([]string{}, good[:7]...),
		`{"type":"error","runId":"r","error":{"message":"cohere model failed: cut","code":"MODEL_ERROR"}}`,
		`{"type":"run-finish","runId":"r","payload":{"finishReason":"error"}}`)
	if err := apitest.Check(read(t, cut)); err != nil {
		t.Fatalf("a failed run ending mid-step: %v", err)
	}
	// Without the error, the same ending breaks the rules.
	bare := append(append([]string{}, good[:7]...), `{"type":"run-finish","runId":"r","payload":{"finishReason":"stop"}}`)
	if err := apitest.Check(read(t, bare)); err == nil || !strings.Contains(err.Error(), "run-finish inside a step") {
		t.Fatalf("got %v, want run-finish inside a step", err)
	}
}

func TestCheckAgainst(t *testing.T) {
	events := read(t, good)
	gen := api.GenerateResponse{
		Text:         "It is 3°C.",
		FinishReason: "stop",
		ToolCalls:    []api.ToolCall{{ToolCallID: "c1", ToolName: "weatherTool", Args: json.RawMessage(`{"location": "Berlin"}`)}},
		ToolResults:  []api.ToolResult{{ToolCallID: "c1", ToolName: "weatherTool", Result: json.RawMessage(`{"temperature":3}`)}},
	}
	if err := apitest.CheckAgainst(events, gen); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(g *api.GenerateResponse)
		want string
	}{
		{"text", func(g *api.GenerateResponse) { g.Text = "It is 3°C" }, "text events concatenate to"},
		{"finish", func(g *api.GenerateResponse) { g.FinishReason = "length" }, "run-finish says"},
		{"args", func(g *api.GenerateResponse) { g.ToolCalls[0].Args = json.RawMessage(`{"location":"Paris"}`) }, "tool call 0"},
		{"result", func(g *api.GenerateResponse) { g.ToolResults[0].Result = json.RawMessage(`{}`) }, "tool result 0"},
		{"count", func(g *api.GenerateResponse) { g.ToolCalls = nil }, "tool calls"},
	}
	for _, tc := range tests {
		g := gen
		g.ToolCalls = append([]api.ToolCall{}, gen.ToolCalls...)
		g.ToolResults = append([]api.ToolResult{}, gen.ToolResults...)
		tc.edit(&g)
		if err := apitest.CheckAgainst(events, g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestReadSSERejectsNonJSON(t *testing.T) {
	if _, err := apitest.ReadSSE(strings.NewReader("data: hello\n\n")); err == nil {
		t.Fatal("want an error for a data line that is not JSON")
	}
	if _, err := apitest.ReadSSE(strings.NewReader("data: {\"type\":\ndata: \"start\"}\n\n")); err == nil {
		t.Fatal("want an error for an event on several data lines")
	}
}

func TestCheckGenerateBody(t *testing.T) {
	valid := `{"text":"","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2,"reasoningTokens":0,"cachedInputTokens":0},
	"totalUsage":{"inputTokens":1,"outputTokens":1,"totalTokens":2,"reasoningTokens":0,"cachedInputTokens":0},
	"steps":[STEP],"finishReason":"stop","warnings":[],"providerMetadata":{},"traceId":"t","request":{"body":{}},
	"reasoning":[],"toolCalls":[],"toolResults":[],"sources":[],"files":[],"tripwire":false,"tripwireReason":"",
	"response":{"id":"x","timestamp":"2026-01-01T00:00:00Z","modelId":"m","headers":{},"modelMetadata":{},"messages":[],
	"uiMessages":[{"id":"u","role":"user","metadata":{"createdAt":"2026-01-01T00:00:00Z","threadId":"t","resourceId":""},"parts":[{"type":"text","text":"hi"}]}]}}`
	step := `{"stepType":"initial","sources":[],"files":[],"reasoning":[],"staticToolCalls":[],"staticToolResults":[],"warnings":[],
	"toolCalls":[],"dynamicToolCalls":[],"toolResults":[],"dynamicToolResults":[],"content":[],"text":"","reasoningText":"",
	"finishReason":"stop","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2,"reasoningTokens":0,"cachedInputTokens":0},
	"totalUsage":{"inputTokens":1,"outputTokens":1,"totalTokens":2,"reasoningTokens":0,"cachedInputTokens":0},"request":{"body":{}},
	"response":{"id":"x","timestamp":"2026-01-01T00:00:00Z","modelId":"m","headers":{},"modelMetadata":{},"messages":[],"uiMessages":[]},
	"providerMetadata":{},"tripwire":false,"tripwireReason":"","traceId":"t"}`
	body := strings.Replace(valid, "STEP", step, 1)
	if err := apitest.CheckGenerateBody([]byte(body)); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ from, to, want string }{
		{`"warnings":[],"providerMetadata"`, `"warnings":null,"providerMetadata"`, "warnings: null"},
		{`"cachedInputTokens":0},
	"totalUsage"`, `"cachedInputTokens":"0"},
	"totalUsage"`, "usage.cachedInputTokens: string, want number"},
		{`"dynamicToolCalls":[],`, ``, "dynamicToolCalls: missing"},
		{`"createdAt":"2026-01-01T00:00:00Z"`, `"createdAt":"yesterday"`, "is not an ISO 8601 time"},
		{`"tripwire":false,"tripwireReason":"",`, `"tripwireReason":"",`, "tripwire: missing"},
	}
	for _, tc := range tests {
		b := strings.Replace(body, tc.from, tc.to, 1)
		if b == body {
			t.Fatalf("edit %q did not apply", tc.from)
		}
		if err := apitest.CheckGenerateBody([]byte(b)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.to, err, tc.want)
		}
	}
}
