package httpapi

import (
	"net/http"
	"strconv"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/run"
)

// mastraDialect writes Mastra 0.24's chunks, as its own server sends them
// and @mastra/client-js reads them: {"type", "runId", "from": "AGENT",
// "payload"}; text in text-start/-delta/-end blocks; a step-finish and a
// finish with stepResult (reason, isContinued) and the usage; a tool
// failure as a tool-result (Mastra's client throws on an error chunk);
// then data: [DONE]. It carries no SSE ids: the client drops a frame that
// has one.
type mastraDialect struct {
	runID     string
	messageID string
	// textID is the open text block's id, "" when none is open; blocks
	// counts them.
	textID string
	blocks int
	// text and calls are the run's text and tool calls so far, for the
	// finish chunk's output.
	text  []byte
	calls []api.MastraToolCall
}

func (*mastraDialect) headers(http.Header) {}
func (*mastraDialect) ids() bool           { return false }
func (*mastraDialect) stateful() bool      { return true }
func (*mastraDialect) trailer() string     { return "[DONE]" }

func (d *mastraDialect) chunk(typ string, payload any) frame {
	return frame{v: api.MastraChunk{Type: typ, RunID: d.runID, From: "AGENT", Payload: payload}}
}

func (d *mastraDialect) endText(out []frame) []frame {
	if d.textID == "" {
		return out
	}
	out = append(out, d.chunk("text-end", api.MastraTextBlock{ID: d.textID, Type: "text-end"}))
	d.textID = ""
	return out
}

func (d *mastraDialect) frames(rec *run.Record, out []frame) []frame {
	switch {
	case rec.Start != nil:
		d.messageID = rec.Start.MessageID
		out = append(out, d.chunk("start", api.MastraStart{ID: agent.Name}))
		for _, n := range rec.Start.Notices {
			out = append(out, d.chunk("data-notice", api.Notice(n)))
		}
		return out
	case rec.StepStart != nil:
		d.messageID = rec.StepStart.MessageID
		return append(out, d.chunk("step-start", api.MastraStepStart{MessageID: d.messageID, Warnings: []any{}}))
	case rec.Text != nil:
		if d.textID == "" {
			d.textID = strconv.Itoa(d.blocks)
			d.blocks++
			out = append(out, d.chunk("text-start", api.MastraTextBlock{ID: d.textID}))
		}
		d.text = append(d.text, rec.Text.Text...)
		f := d.chunk("text-delta", api.MastraTextDelta{ID: d.textID, Text: rec.Text.Text})
		f.text = true
		return append(out, f)
	case rec.InputStart != nil:
		out = d.endText(out)
		return append(out, d.chunk("tool-call-input-streaming-start", api.ToolCallStreamingStartPayload{ToolCallID: rec.InputStart.CallID, ToolName: rec.InputStart.Tool}))
	case rec.InputDelta != nil:
		e := rec.InputDelta
		return append(out, d.chunk("tool-call-delta", api.ToolCallDeltaPayload{ArgsTextDelta: e.Delta, ToolCallID: e.CallID, ToolName: e.Tool}))
	case rec.InputEnd != nil:
		return append(out, d.chunk("tool-call-input-streaming-end", api.ToolCallStreamingEndPayload{ToolCallID: rec.InputEnd.CallID}))
	case rec.Call != nil:
		c := api.MastraToolCall{ToolCallID: rec.Call.Call.ID, ToolName: rec.Call.Call.Name, Args: rec.Call.Call.Args}
		d.calls = append(d.calls, c)
		return append(out, d.chunk("tool-call", c))
	case rec.Returned != nil:
		r := rec.Returned.Result
		p := api.MastraToolResult{ToolCallID: r.CallID, ToolName: r.Tool, Result: r.Output, IsError: r.Failed()}
		for i := range d.calls {
			if d.calls[i].ToolCallID == r.CallID {
				p.Args = &d.calls[i].Args
			}
		}
		return append(out, d.chunk("tool-result", p))
	case rec.StepFinish != nil:
		e := rec.StepFinish
		out = d.endText(out)
		reason := sdkReason(e.FinishReason)
		return append(out, d.chunk("step-finish", api.MastraFinish{MessageID: d.messageID,
			StepResult: api.MastraStepResult{Reason: reason, IsContinued: reason == "tool-calls"},
			Metadata:   map[string]any{}, Output: d.output(e.Usage)}))
	case rec.Failed != nil:
		out = d.endText(out)
		return append(out, d.chunk("error", api.MastraErrorPayload{Error: api.MastraError{Code: rec.Failed.Code, Message: rec.Failed.Message}}))
	case rec.Finished != nil && rec.Finished.Tripwire:
		// Mastra ends a tripped run with its tripwire chunk, not a finish.
		out = d.endText(out)
		return append(out, d.chunk("tripwire", api.MastraTripwire{TripwireReason: rec.Finished.TripwireReason}))
	case rec.Finished != nil:
		out = d.endText(out)
		u := usageOf(rec.Finished.Usage)
		c := costOf(rec.Finished.Cost)
		return append(out, d.chunk("finish", api.MastraFinish{MessageID: d.messageID,
			StepResult: api.MastraStepResult{Reason: sdkReason(rec.Finished.Reason)},
			Metadata:   map[string]any{}, Output: d.output(rec.Finished.Usage), Usage: &u, TotalUsage: &u, Cost: &c}))
	}
	return out
}

func (d *mastraDialect) output(u model.Usage) api.MastraOutput {
	calls := d.calls
	if calls == nil {
		calls = []api.MastraToolCall{}
	}
	return api.MastraOutput{Text: string(d.text), ToolCalls: calls, Usage: usageOf(u)}
}
