package httpapi

import (
	"cmp"
	"net/http"
	"strconv"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/run"
)

// aisdkDialect writes the AI SDK's UI message stream (protocol v1), which
// useChat, DefaultChatTransport and readUIMessageStream read: start,
// start-step, text-start/-delta/-end, tool-input-start/-delta/-available,
// tool-output-available or -error, finish-step, finish, then [DONE].
type aisdkDialect struct {
	runID  string
	textID string
	blocks int
}

func (*aisdkDialect) headers(h http.Header) { h.Set("X-Vercel-Ai-Ui-Message-Stream", "v1") }
func (*aisdkDialect) ids() bool             { return true }
func (*aisdkDialect) stateful() bool        { return true }
func (*aisdkDialect) trailer() string       { return "[DONE]" }

func (d *aisdkDialect) endText(out []frame) []frame {
	if d.textID == "" {
		return out
	}
	out = append(out, frame{v: api.AISDKChunk{Type: "text-end", ID: d.textID}})
	d.textID = ""
	return out
}

func (d *aisdkDialect) frames(rec *run.Record, out []frame) []frame {
	switch {
	case rec.Start != nil:
		c := api.AISDKChunk{Type: "start", MessageID: rec.Start.MessageID}
		if id := cmp.Or(rec.Start.RunID, d.runID); id != "" {
			c.MessageMetadata = &api.AISDKMetadata{RunID: id}
		}
		out = append(out, frame{v: c})
		for _, n := range rec.Start.Notices {
			out = append(out, frame{v: api.AISDKChunk{Type: "data-notice", Data: api.Notice(n)}})
		}
		return out
	case rec.StepStart != nil:
		return append(out, frame{v: api.AISDKChunk{Type: "start-step"}})
	case rec.Text != nil:
		if d.textID == "" {
			d.textID = "text-" + strconv.Itoa(d.blocks)
			d.blocks++
			out = append(out, frame{v: api.AISDKChunk{Type: "text-start", ID: d.textID}})
		}
		return append(out, frame{v: api.AISDKChunk{Type: "text-delta", ID: d.textID, Delta: &rec.Text.Text}, text: true})
	case rec.InputStart != nil:
		out = d.endText(out)
		return append(out, frame{v: api.AISDKChunk{Type: "tool-input-start", ToolCallID: rec.InputStart.CallID, ToolName: rec.InputStart.Tool}})
	case rec.InputDelta != nil:
		return append(out, frame{v: api.AISDKChunk{Type: "tool-input-delta", ToolCallID: rec.InputDelta.CallID, InputTextDelta: &rec.InputDelta.Delta}})
	case rec.Call != nil:
		c := rec.Call.Call
		return append(out, frame{v: api.AISDKChunk{Type: "tool-input-available", ToolCallID: c.ID, ToolName: c.Name, Input: c.Args}})
	case rec.Returned != nil:
		r := rec.Returned.Result
		if r.Failed() {
			return append(out, frame{v: api.AISDKChunk{Type: "tool-output-error", ToolCallID: r.CallID, ErrorText: r.Error}})
		}
		return append(out, frame{v: api.AISDKChunk{Type: "tool-output-available", ToolCallID: r.CallID, Output: r.Output}})
	case rec.StepFinish != nil:
		out = d.endText(out)
		return append(out, frame{v: api.AISDKChunk{Type: "finish-step"}})
	case rec.Failed != nil:
		out = d.endText(out)
		return append(out, frame{v: api.AISDKChunk{Type: "error", ErrorText: rec.Failed.Message}})
	case rec.Finished != nil:
		out = d.endText(out)
		if rec.Finished.Tripwire {
			out = append(out, frame{v: api.AISDKChunk{Type: "data-tripwire", Data: api.DataTripwire{TripwireReason: rec.Finished.TripwireReason}}})
		}
		c := costOf(rec.Finished.Cost)
		return append(out, frame{v: api.AISDKChunk{Type: "finish", FinishReason: sdkReason(rec.Finished.Reason), MessageMetadata: &api.AISDKMetadata{Cost: &c}}})
	}
	return out
}

// sdkReason is a finish reason in the AI SDK's words, which Mastra's
// chunks use too.
func sdkReason(r string) string {
	switch r {
	case model.FinishToolCalls:
		return "tool-calls"
	case "content_filter":
		return "content-filter"
	case model.FinishStop, model.FinishLength, model.FinishError:
		return r
	}
	return "other"
}
