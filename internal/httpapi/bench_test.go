package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/run"
)

// BenchmarkDecodeRun is a run request's strict decoding and validation.
func BenchmarkDecodeRun(b *testing.B) {
	body := []byte(`{"threadId":"thread-1","resourceId":"user-1","messages":[{"role":"user","content":"What's the weather in Berlin?"}],` +
		`"runtimeContext":{"metadata":{"personality":"guru","userId":"user-1"}}}`)
	lim := DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRun(body, lim); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRecords is a weather run's log: a tool round, then 40 text deltas.
func benchRecords() []run.Record {
	recs := []run.Record{
		{Start: &agent.RunStarted{RunID: "r", ThreadID: "t", ResourceID: "u", Personality: agent.Friend, TraceID: "0123456789abcdef0123456789abcdef", MessageID: "m"}},
		{StepStart: &agent.StepStarted{Index: 0, Kind: agent.StepInitial, MessageID: "m"}},
		{InputStart: &agent.ToolInputStarted{CallID: "c", Tool: "weatherTool"}},
		{InputDelta: &agent.ToolInputDelta{CallID: "c", Tool: "weatherTool", Delta: `{"location":"Berlin"}`}},
		{InputEnd: &agent.ToolInputEnded{CallID: "c"}},
		{Call: &agent.ToolCalled{Call: agent.ToolCall{ID: "c", Name: "weatherTool", Args: json.RawMessage(`{"location":"Berlin"}`)}}},
		{Returned: &agent.ToolReturned{Result: agent.ToolResult{CallID: "c", Tool: "weatherTool", Output: json.RawMessage(`{"temperature":3.2,"conditions":"Overcast","location":"Berlin"}`)}}},
		{StepFinish: &agent.StepFinished{Index: 0, Kind: agent.StepInitial, FinishReason: model.FinishToolCalls, Usage: model.Usage{InputTokens: 100, OutputTokens: 2, TotalTokens: 102}}},
		{StepStart: &agent.StepStarted{Index: 1, Kind: agent.StepToolResult, MessageID: "m"}},
	}
	for range 40 {
		recs = append(recs, run.Record{Text: &agent.TextDelta{Text: " word"}})
	}
	return append(recs,
		run.Record{StepFinish: &agent.StepFinished{Index: 1, Kind: agent.StepToolResult, FinishReason: model.FinishStop, Usage: model.Usage{InputTokens: 104, OutputTokens: 40, TotalTokens: 144}}},
		run.Record{Finished: &run.Finished{Reason: model.FinishStop, Usage: model.Usage{InputTokens: 204, OutputTokens: 42, TotalTokens: 246}}})
}

// BenchmarkEncode is one weather run's events written as SSE frames, in
// each dialect: projection, JSON encoding and framing (per run).
func BenchmarkEncode(b *testing.B) {
	recs := benchRecords()
	for _, format := range []string{FormatSeed, FormatMastra, FormatAISDK} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := newFrameWriter(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), newDialect(format, "r"), "r", time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				for i := range recs {
					if err := w.write(int64(i+1), &recs[i], false); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
