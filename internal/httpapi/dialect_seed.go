package httpapi

import (
	"net/http"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/run"
)

// seedEvent is a run event in the seed dialect, the stream events of
// the contract (docs/api.md): one frame per domain event.
func seedEvent(runID string, ev agent.Event) api.Event {
	out := api.Event{RunID: runID}
	switch e := ev.(type) {
	case agent.RunStarted:
		out.Type = api.EventStart
		out.Payload = api.StartPayload{AgentID: api.AgentID, ThreadID: e.ThreadID, ResourceID: e.ResourceID,
			Personality: string(e.Personality), TraceID: e.TraceID, Notices: notices(e.Notices)}
	case agent.StepStarted:
		out.Type = api.EventStepStart
		out.Payload = api.StepStartPayload{StepIndex: e.Index, StepType: string(e.Kind), MessageID: e.MessageID}
	case agent.TextDelta:
		out.Type, out.Text = api.EventText, e.Text
	case agent.ToolInputStarted:
		out.Type = api.EventToolCallInputStreamingStart
		out.Payload = api.ToolCallStreamingStartPayload{ToolCallID: e.CallID, ToolName: e.Tool}
	case agent.ToolInputDelta:
		out.Type = api.EventToolCallDelta
		out.Payload = api.ToolCallDeltaPayload{ArgsTextDelta: e.Delta, ToolCallID: e.CallID, ToolName: e.Tool}
	case agent.ToolInputEnded:
		out.Type = api.EventToolCallInputStreamingEnd
		out.Payload = api.ToolCallStreamingEndPayload{ToolCallID: e.CallID}
	case agent.ToolCalled:
		out.Type, out.Payload = api.EventToolCall, toolCall(e.Call)
	case agent.ToolFailed:
		out.Type = api.EventError
		out.Payload = api.ToolErrorPayload{ToolCallID: e.CallID, ToolName: e.Tool}
		out.Error = &api.StreamError{Message: e.Message, Code: api.CodeToolError}
	case agent.ToolReturned:
		out.Type, out.Payload = api.EventToolResult, toolResult(e.Result)
	case agent.StepFinished:
		out.Type = api.EventStepFinish
		out.Payload = api.StepFinishPayload{StepIndex: e.Index, StepType: string(e.Kind), FinishReason: e.FinishReason, Usage: usageOf(e.Usage)}
	}
	return out
}

// seedDialect writes the seed's events: one frame per record, with the
// record's id.
type seedDialect struct{ runID string }

func (*seedDialect) headers(http.Header) {}
func (*seedDialect) ids() bool           { return true }
func (*seedDialect) trailer() string     { return "" }
func (*seedDialect) stateful() bool      { return false }

func (d *seedDialect) frames(rec *run.Record, out []frame) []frame {
	switch {
	case rec.Start != nil:
		d.runID = rec.Start.RunID
	case rec.Failed != nil:
		return append(out, frame{v: api.Event{Type: api.EventError, RunID: d.runID, Error: &api.StreamError{Message: rec.Failed.Message, Code: rec.Failed.Code}}})
	case rec.Finished != nil:
		return append(out, frame{v: api.Event{Type: api.EventRunFinish, RunID: d.runID,
			Payload: api.RunFinishPayload{FinishReason: rec.Finished.Reason, Usage: usageOf(rec.Finished.Usage), Cost: costOf(rec.Finished.Cost),
				Tripwire: rec.Finished.Tripwire, TripwireReason: rec.Finished.TripwireReason}}})
	}
	ev := rec.Event()
	if ev == nil {
		return out
	}
	_, text := ev.(agent.TextDelta)
	return append(out, frame{v: seedEvent(d.runID, ev), text: text})
}
