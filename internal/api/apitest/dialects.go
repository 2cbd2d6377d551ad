package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sse "github.com/tmaxmax/go-sse"

	"github.com/companionhq/companion/internal/api"
)

// The readers below check a stream in the Mastra and AI SDK dialects the
// way those clients read it, stated from their protocols (Mastra 0.24's
// recorded streams, the AI SDK's UI message stream v1), apart from the
// service's code; and check that it tells the same run as the generate
// body g (of another run of the same request: ids differ).
//
// They decode chunks loosely on purpose, into raw payloads and maps of raw
// values, and not into the api package's MastraChunk, MastraFinish or
// AISDKChunk, which the service encodes with: read through the same types,
// a key misspelt in a tag would read back as it was written and pass, and
// a missing key would read as a zero value. Here a key is looked up by the
// name the client reads, and its absence is seen.

// aiReason is a finish reason in the AI SDK's and Mastra's words.
func aiReason(r string) string {
	switch r {
	case api.FinishToolCalls:
		return "tool-calls"
	case api.FinishStop, api.FinishLength, api.FinishError:
		return r
	}
	return "other"
}

type mastraChunk struct {
	Type    string          `json:"type"`
	RunID   string          `json:"runId"`
	From    string          `json:"from"`
	Payload json.RawMessage `json:"payload"`
}

// CheckMastra reads body as @mastra/client-js does: blocks split on blank
// lines, each "data: " and one JSON chunk (a block with an id: line would
// be dropped by the client), ending with data: [DONE].
func CheckMastra(body []byte, g api.GenerateResponse) error {
	blocks := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	if len(blocks) < 3 || blocks[len(blocks)-1] != "data: [DONE]" {
		return errors.New("the stream does not end with data: [DONE]")
	}
	var (
		text       strings.Builder
		open       = map[string]bool{}
		started    = map[string]bool{}
		called     = map[string]json.RawMessage{}
		steps      int
		errs       []error
		last       mastraChunk
		sawFinish  bool
		toolErrors = 0
		runID      string
		notices    []api.Notice
		tripwire   *string
	)
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, b := range blocks[:len(blocks)-1] {
		data, ok := strings.CutPrefix(b, "data: ")
		if !ok || strings.Contains(data, "\n") {
			fail("block %d is not one data line: %q", i, b)
			continue
		}
		var c mastraChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			fail("block %d is not a chunk: %v", i, err)
			continue
		}
		if runID == "" {
			runID = c.RunID
		}
		if c.RunID == "" || c.RunID != runID || c.From != "AGENT" || len(c.Payload) == 0 || c.Payload[0] != '{' {
			fail("chunk %d (%s): runId %q, from %q, payload %s", i, c.Type, c.RunID, c.From, c.Payload)
		}
		if sawFinish {
			fail("chunk %d (%s) after finish", i, c.Type)
		}
		var p map[string]json.RawMessage
		_ = json.Unmarshal(c.Payload, &p)
		str := func(k string) string {
			var s string
			_ = json.Unmarshal(p[k], &s)
			return s
		}
		switch c.Type {
		case "start":
			if i != 0 {
				fail("start at %d", i)
			}
		case "step-start":
			steps++
		case "text-start":
			open[str("id")] = true
		case "text-delta":
			if !open[str("id")] {
				fail("text-delta of block %q that is not open", str("id"))
			}
			text.WriteString(str("text"))
		case "text-end":
			if !open[str("id")] {
				fail("text-end of block %q that is not open", str("id"))
			}
			delete(open, str("id"))
		case "tool-call-input-streaming-start":
			started[str("toolCallId")] = true
		case "tool-call-delta", "tool-call-input-streaming-end":
			if !started[str("toolCallId")] {
				fail("%s of call %q that did not start", c.Type, str("toolCallId"))
			}
		case "tool-call":
			called[str("toolCallId")] = p["args"]
		case "tool-result":
			if _, ok := called[str("toolCallId")]; !ok {
				fail("tool-result of call %q that was not made", str("toolCallId"))
			}
			if string(p["isError"]) == "true" {
				toolErrors++
			}
		case "step-finish", "finish":
			var sr struct {
				StepResult *struct {
					Reason      string `json:"reason"`
					IsContinued *bool  `json:"isContinued"`
				} `json:"stepResult"`
				Output *struct {
					Usage *api.Usage `json:"usage"`
				} `json:"output"`
				Usage *api.Usage `json:"usage"`
			}
			_ = json.Unmarshal(c.Payload, &sr)
			if sr.StepResult == nil || sr.StepResult.IsContinued == nil || sr.Output == nil || sr.Output.Usage == nil {
				fail("%s without stepResult.reason, stepResult.isContinued and output.usage: %s", c.Type, c.Payload)
				continue
			}
			if c.Type == "finish" {
				sawFinish = true
				if sr.StepResult.Reason != aiReason(g.FinishReason) || *sr.Output.Usage != g.TotalUsage || sr.Usage == nil || *sr.Usage != g.TotalUsage {
					fail("finish says %s with usage %+v and %+v; the run finished %s with %+v", sr.StepResult.Reason, sr.Output.Usage, sr.Usage, g.FinishReason, g.TotalUsage)
				}
			}
		case "error":
			fail("an error chunk: Mastra's client throws on it")
		case "data-notice":
			var n api.Notice
			_ = json.Unmarshal(c.Payload, &n)
			notices = append(notices, n)
		case "tripwire":
			r := str("tripwireReason")
			tripwire = &r
			sawFinish = true
		}
		last = c
	}
	switch {
	case g.Tripwire && (last.Type != "tripwire" || tripwire == nil || *tripwire != g.TripwireReason):
		errs = append(errs, fmt.Errorf("the run tripped (%q); the last chunk is %s", g.TripwireReason, last.Type))
	case !g.Tripwire && last.Type != "finish":
		errs = append(errs, fmt.Errorf("the last chunk is %s, not finish", last.Type))
	}
	if !noticesEqual(notices, g.Notices) {
		errs = append(errs, fmt.Errorf("data-notice chunks %+v; the run's notices %+v", notices, g.Notices))
	}
	if len(open) > 0 {
		errs = append(errs, fmt.Errorf("text blocks left open: %v", open))
	}
	if text.String() != g.Text {
		errs = append(errs, fmt.Errorf("text-delta chunks concatenate to %q, the reply is %q", text.String(), g.Text))
	}
	if steps != len(g.Steps) || len(called) != len(g.ToolCalls) {
		errs = append(errs, fmt.Errorf("%d steps and %d calls; the run had %d and %d", steps, len(called), len(g.Steps), len(g.ToolCalls)))
	}
	failed := 0
	for _, r := range g.ToolResults {
		if r.IsError {
			failed++
		}
	}
	if toolErrors != failed {
		errs = append(errs, fmt.Errorf("%d failed tool results; the run had %d", toolErrors, failed))
	}
	return errors.Join(errs...)
}

// CheckUIMessageStream reads body as the AI SDK's readUIMessageStream
// does: SSE frames of one JSON chunk each, ending with data: [DONE]; a
// text block opened before its deltas; a tool call's input started before
// its deltas, available before its output.
func CheckUIMessageStream(body []byte, g api.GenerateResponse) error {
	var datas []string
	for ev, err := range sse.Read(bytes.NewReader(body), nil) {
		if err != nil {
			return fmt.Errorf("reading the stream: %w", err)
		}
		datas = append(datas, ev.Data)
	}
	if len(datas) < 3 || datas[len(datas)-1] != "[DONE]" {
		return errors.New("the stream does not end with data: [DONE]")
	}
	var (
		text   strings.Builder
		open   = map[string]bool{}
		inputs = map[string]bool{}
		avail  = map[string]json.RawMessage{}
		output = map[string]json.RawMessage{}
		failed = map[string]string{}
		steps  int
		errs   []error
		// notices and tripwire are the data parts.
		notices  []api.Notice
		tripwire *string
	)
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	chunks := datas[:len(datas)-1]
	for i, d := range chunks {
		var c map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			fail("chunk %d is not JSON: %v", i, err)
			continue
		}
		str := func(k string) string {
			var s string
			_ = json.Unmarshal(c[k], &s)
			return s
		}
		typ := str("type")
		switch {
		case i == 0 && typ != "start":
			fail("the first chunk is %s, not start", typ)
		case i == len(chunks)-1 && typ != "finish":
			fail("the last chunk is %s, not finish", typ)
		}
		switch typ {
		case "start":
			if str("messageId") == "" {
				fail("start names no messageId: the client would make up the reply's id")
			}
		case "start-step":
			steps++
		case "finish-step":
			if len(open) > 0 {
				fail("finish-step with text blocks open: %v", open)
			}
		case "text-start":
			open[str("id")] = true
		case "text-delta":
			if !open[str("id")] {
				fail("text-delta of block %q that is not open", str("id"))
			}
			text.WriteString(str("delta"))
		case "text-end":
			if !open[str("id")] {
				fail("text-end of block %q that is not open", str("id"))
			}
			delete(open, str("id"))
		case "tool-input-start":
			inputs[str("toolCallId")] = true
		case "tool-input-delta":
			if !inputs[str("toolCallId")] {
				fail("tool-input-delta of call %q that did not start", str("toolCallId"))
			}
		case "tool-input-available":
			avail[str("toolCallId")] = c["input"]
		case "tool-output-available":
			if _, ok := avail[str("toolCallId")]; !ok {
				fail("output of call %q whose input is not available", str("toolCallId"))
			}
			output[str("toolCallId")] = c["output"]
		case "tool-output-error":
			if _, ok := avail[str("toolCallId")]; !ok {
				fail("output error of call %q whose input is not available", str("toolCallId"))
			}
			failed[str("toolCallId")] = str("errorText")
		case "finish":
			if r := str("finishReason"); r != aiReason(g.FinishReason) {
				fail("finish says %s; the run finished %s", r, g.FinishReason)
			}
		case "error":
			fail("an error chunk: %s", c["errorText"])
		case "data-notice":
			var n api.Notice
			if err := json.Unmarshal(c["data"], &n); err != nil || n.Kind == "" || n.Text == "" {
				fail("data-notice without data.kind and data.text: %s", d)
			}
			notices = append(notices, n)
		case "data-tripwire":
			var t api.DataTripwire
			_ = json.Unmarshal(c["data"], &t)
			tripwire = &t.TripwireReason
		default:
			fail("chunk %d has an unknown type %q", i, typ)
		}
	}
	if g.Tripwire != (tripwire != nil) || tripwire != nil && *tripwire != g.TripwireReason {
		errs = append(errs, fmt.Errorf("data-tripwire %v; the run's tripwire %v (%q)", tripwire, g.Tripwire, g.TripwireReason))
	}
	if !noticesEqual(notices, g.Notices) {
		errs = append(errs, fmt.Errorf("data-notice parts %+v; the run's notices %+v", notices, g.Notices))
	}
	if text.String() != g.Text {
		errs = append(errs, fmt.Errorf("text-delta chunks concatenate to %q, the reply is %q", text.String(), g.Text))
	}
	if steps != len(g.Steps) {
		errs = append(errs, fmt.Errorf("%d steps; the run had %d", steps, len(g.Steps)))
	}
	for _, tc := range g.ToolCalls {
		if !jsonEqual(avail[tc.ToolCallID], tc.Args) {
			errs = append(errs, fmt.Errorf("call %s: input %s, args %s", tc.ToolCallID, avail[tc.ToolCallID], tc.Args))
		}
	}
	for _, tr := range g.ToolResults {
		if tr.IsError {
			var e struct{ Error string }
			_ = json.Unmarshal(tr.Result, &e)
			if failed[tr.ToolCallID] != e.Error {
				errs = append(errs, fmt.Errorf("call %s: errorText %q, the result's error %q", tr.ToolCallID, failed[tr.ToolCallID], e.Error))
			}
		} else if !jsonEqual(output[tr.ToolCallID], tr.Result) {
			errs = append(errs, fmt.Errorf("call %s: output %s, result %s", tr.ToolCallID, output[tr.ToolCallID], tr.Result))
		}
	}
	return errors.Join(errs...)
}

// noticesEqual reports whether a stream's notices are a run's.
func noticesEqual(stream, run []api.Notice) bool {
	return slices.Equal(stream, run)
}
