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
	out = append(out, d.chunk("text-end", map[string]string{"type": "text-end", "id": d.textID}))
	d.textID = ""
	return out
}

func (d *mastraDialect) frames(rec *run.Record, out []frame) []frame {
	switch {
	case rec.Start != nil:
		d.messageID = rec.Start.MessageID
		return append(out, d.chunk("start", map[string]string{"id": agent.Name}))
	case rec.StepStart != nil:
		d.messageID = rec.StepStart.MessageID
		return append(out, d.chunk("step-start", map[string]any{"messageId": d.messageID, "request": map[string]any{}, "warnings": []any{}}))
	case rec.Text != nil:
		if d.textID == "" {
			d.textID = strconv.Itoa(d.blocks)
			d.blocks++
			out = append(out, d.chunk("text-start", map[string]string{"id": d.textID}))
		}
		d.text = append(d.text, rec.Text.Text...)
		f := d.chunk("text-delta", api.MastraTextDelta{ID: d.textID, Text: rec.Text.Text})
		f.text = true
		return append(out, f)
	case rec.InputStart != nil:
		out = d.endText(out)
		return append(out, d.chunk("tool-call-input-streaming-start", map[string]string{"toolCallId": rec.InputStart.CallID, "toolName": rec.InputStart.Tool}))
	case rec.InputDelta != nil:
		e := rec.InputDelta
		return append(out, d.chunk("tool-call-delta", map[string]string{"argsTextDelta": e.Delta, "toolCallId": e.CallID, "toolName": e.Tool}))
	case rec.InputEnd != nil:
		return append(out, d.chunk("tool-call-input-streaming-end", map[string]string{"toolCallId": rec.InputEnd.CallID}))
	case rec.Call != nil:
		c := api.MastraToolCall{ToolCallID: rec.Call.Call.ID, ToolName: rec.Call.Call.Name, Args: rec.Call.Call.Args}
		d.calls = append(d.calls, c)
		return append(out, d.chunk("tool-call", c))
	case rec.Returned != nil:
		r := rec.Returned.Result
		p := map[string]any{"toolCallId": r.CallID, "toolName": r.Tool, "result": r.Output}
		for _, c := range d.calls {
			if c.ToolCallID == r.CallID {
				p["args"] = c.Args
			}
		}
		if r.Failed() {
			p["isError"] = true
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
		return append(out, d.chunk("error", map[string]any{"error": map[string]string{"message": rec.Failed.Message, "code": rec.Failed.Code}}))
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
