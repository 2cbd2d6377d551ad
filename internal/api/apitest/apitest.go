// Package apitest reads event streams and checks them against the API's
// rules, for tests of the server, the golden transcripts and the providers.
package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	sse "github.com/tmaxmax/go-sse"

	"github.com/companionhq/companion/internal/api"
)

// Event is a decoded stream event with its payload left raw.
type Event struct {
	Type    string           `json:"type"`
	RunID   string           `json:"runId"`
	Text    *string          `json:"text"`
	Payload json.RawMessage  `json:"payload"`
	Error   *api.StreamError `json:"error"`
	// Raw is the event's data line as sent.
	Raw string `json:"-"`
}

// ReadSSE parses an event stream into events. Every frame must be a single
// data line holding one JSON object.
func ReadSSE(r io.Reader) ([]Event, error) {
	var out []Event
	for ev, err := range sse.Read(r, nil) {
		if err != nil {
			return out, fmt.Errorf("reading event stream: %w", err)
		}
		if strings.Contains(ev.Data, "\n") {
			return out, fmt.Errorf("event %d spans several data lines", len(out))
		}
		var e Event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return out, fmt.Errorf("event %d is not a JSON object: %w", len(out), err)
		}
		e.Raw = ev.Data
		out = append(out, e)
	}
	return out, nil
}

// Text concatenates the text of the text events, in order.
func Text(events []Event) string {
	var b strings.Builder
	for _, e := range events {
		if e.Type == api.EventText && e.Text != nil {
			b.WriteString(*e.Text)
		}
	}
	return b.String()
}

// Types lists the events' types, in order.
func Types(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

type callPayload struct {
	ToolCallID    string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	ArgsTextDelta *string         `json:"argsTextDelta"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
	StepType      string          `json:"stepType"`
	FinishReason  string          `json:"finishReason"`
	// Of start and run-finish, when there are notices or a tripwire.
	Notices        []api.Notice `json:"notices"`
	Tripwire       bool         `json:"tripwire"`
	TripwireReason string       `json:"tripwireReason"`
}

// Check verifies a complete stream on its own: every event has a type and
// the run's runId and the shape of its type; the order is start, then steps
// (step-start, content, step-finish), then run-finish, last; the spec's
// rules 2 to 4 hold (argument deltas concatenate to the call's JSON
// arguments, results answer earlier calls, run-finish ends the stream). A
// failed run may end inside a step, with calls left unanswered: an error
// event, then run-finish with finishReason error.
func Check(events []Event) error {
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("event %d (%s): %s", i, typeAt(events, i), fmt.Sprintf(format, args...)))
	}
	if len(events) == 0 {
		return errors.New("the stream has no events")
	}
	runID := events[0].RunID
	if runID == "" {
		bad(0, "no runId")
	}
	if events[0].Type != api.EventStart {
		bad(0, "the first event must be start")
	}
	deltas := map[string]*strings.Builder{}
	names := map[string]string{}
	called := map[string]json.RawMessage{}
	answered := map[string]bool{}
	inStep, failed := false, false
	finishes := 0
	for i, e := range events {
		if e.RunID != runID {
			bad(i, "runId %q differs from the run's %q", e.RunID, runID)
		}
		var p callPayload
		if len(e.Payload) > 0 {
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				bad(i, "payload is not an object: %v", err)
			}
		}
		if finishes > 0 {
			bad(i, "comes after run-finish")
		}
		stepContent := func() {
			if !inStep {
				bad(i, "outside a step")
			}
		}
		switch e.Type {
		case api.EventStart:
			if i != 0 {
				bad(i, "start must come first, once")
			}
		case api.EventStepStart:
			if inStep {
				bad(i, "a step started before the last one finished")
			}
			inStep = true
		case api.EventText:
			stepContent()
			if e.Text == nil || *e.Text == "" {
				bad(i, "no text at the top level")
			}
		case api.EventToolCallInputStreamingStart:
			stepContent()
			if p.ToolCallID == "" || p.ToolName == "" {
				bad(i, "payload needs toolCallId and toolName")
			}
			if _, dup := deltas[p.ToolCallID]; dup {
				bad(i, "tool call %q started twice", p.ToolCallID)
			}
			deltas[p.ToolCallID] = &strings.Builder{}
			names[p.ToolCallID] = p.ToolName
		case api.EventToolCallDelta:
			stepContent()
			b, ok := deltas[p.ToolCallID]
			switch {
			case !ok:
				bad(i, "delta for tool call %q that never started", p.ToolCallID)
			case p.ArgsTextDelta == nil || p.ToolName == "":
				bad(i, "payload needs argsTextDelta, toolCallId and toolName")
			default:
				b.WriteString(*p.ArgsTextDelta)
			}
		case api.EventToolCallInputStreamingEnd:
			stepContent()
			if _, ok := deltas[p.ToolCallID]; !ok {
				bad(i, "end of tool call %q that never started", p.ToolCallID)
			}
		case api.EventToolCall:
			stepContent()
			if p.ToolCallID == "" || p.ToolName == "" || len(p.Args) == 0 || p.Args[0] != '{' {
				bad(i, "payload needs toolCallId, toolName and args (an object)")
			}
			if !strings.Contains(string(e.Payload), `"providerMetadata":{`) {
				bad(i, "payload needs providerMetadata (an object)")
			}
			if b, ok := deltas[p.ToolCallID]; ok {
				if !jsonEqual([]byte(b.String()), p.Args) {
					bad(i, "argsTextDelta of %q concatenate to %s, not to the args %s", p.ToolCallID, b.String(), p.Args)
				}
			}
			called[p.ToolCallID] = p.Args
		case api.EventToolResult:
			stepContent()
			if _, ok := called[p.ToolCallID]; !ok {
				bad(i, "result for %q answers no earlier tool-call", p.ToolCallID)
			}
			if answered[p.ToolCallID] {
				bad(i, "second result for %q", p.ToolCallID)
			}
			answered[p.ToolCallID] = true
			if p.ToolName != names[p.ToolCallID] || len(p.Result) == 0 {
				bad(i, "payload needs the call's toolName and a result")
			}
		case api.EventStepFinish:
			if !inStep {
				bad(i, "step-finish without step-start")
			}
			inStep = false
			if p.StepType == "" || p.FinishReason == "" {
				bad(i, "payload needs stepType and finishReason")
			}
		case api.EventError:
			if e.Error == nil || e.Error.Message == "" || e.Error.Code == "" {
				bad(i, "needs error.message and error.code")
			}
		case api.EventRunFinish:
			finishes++
			// A run that fails ends where it is: an error event, then
			// run-finish with finishReason error, even inside a step.
			failed = p.FinishReason == api.FinishError && i > 0 && events[i-1].Type == api.EventError
			if inStep && !failed {
				bad(i, "run-finish inside a step")
			}
			if p.FinishReason == "" {
				bad(i, "payload needs finishReason")
			}
		default:
			bad(i, "unknown event type")
		}
	}
	for id := range called {
		if !answered[id] && !failed {
			errs = append(errs, fmt.Errorf("tool call %q has no tool-result", id))
		}
	}
	if finishes != 1 || events[len(events)-1].Type != api.EventRunFinish {
		errs = append(errs, errors.New("the stream must end with exactly one run-finish"))
	}
	return errors.Join(errs...)
}

// CheckAgainst verifies the spec's rule 1 and the agreement of a stream with
// the generate body of the same request: text deltas concatenate to its
// text; the tool calls and results match; the finish reasons agree.
func CheckAgainst(events []Event, gen api.GenerateResponse) error {
	var errs []error
	if got := Text(events); got != gen.Text {
		errs = append(errs, fmt.Errorf("text events concatenate to %q, generate's text is %q", got, gen.Text))
	}
	var calls, results []callPayload
	var start, end callPayload
	for _, e := range events {
		var p callPayload
		_ = json.Unmarshal(e.Payload, &p)
		switch e.Type {
		case api.EventStart:
			start = p
		case api.EventToolCall:
			calls = append(calls, p)
		case api.EventToolResult:
			results = append(results, p)
		case api.EventRunFinish:
			end = p
		}
	}
	finish := end.FinishReason
	if end.Tripwire != gen.Tripwire || end.TripwireReason != gen.TripwireReason {
		errs = append(errs, fmt.Errorf("run-finish's tripwire %v (%q), generate's %v (%q)", end.Tripwire, end.TripwireReason, gen.Tripwire, gen.TripwireReason))
	}
	if !noticesEqual(start.Notices, gen.Notices) {
		errs = append(errs, fmt.Errorf("start's notices %+v, generate's %+v", start.Notices, gen.Notices))
	}
	if len(calls) != len(gen.ToolCalls) {
		errs = append(errs, fmt.Errorf("stream has %d tool calls, generate %d", len(calls), len(gen.ToolCalls)))
	} else {
		for i, c := range calls {
			g := gen.ToolCalls[i]
			if c.ToolName != g.ToolName || !jsonEqual(c.Args, g.Args) {
				errs = append(errs, fmt.Errorf("tool call %d: stream %s%s, generate %s%s", i, c.ToolName, c.Args, g.ToolName, g.Args))
			}
		}
	}
	if len(results) != len(gen.ToolResults) {
		errs = append(errs, fmt.Errorf("stream has %d tool results, generate %d", len(results), len(gen.ToolResults)))
	} else {
		for i, r := range results {
			if g := gen.ToolResults[i]; r.ToolName != g.ToolName || !jsonEqual(r.Result, g.Result) {
				errs = append(errs, fmt.Errorf("tool result %d: stream %s, generate %s", i, r.Result, g.Result))
			}
		}
	}
	if finish != gen.FinishReason {
		errs = append(errs, fmt.Errorf("run-finish says %q, generate's finishReason is %q", finish, gen.FinishReason))
	}
	return errors.Join(errs...)
}

func typeAt(events []Event, i int) string {
	if i < len(events) {
		return events[i].Type
	}
	return "?"
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
