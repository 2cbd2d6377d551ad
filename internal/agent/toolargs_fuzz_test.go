package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
)

// argsTool records the arguments of every call and answers {"ok":true}.
type argsTool struct {
	mu   sync.Mutex
	args []string
}

func (t *argsTool) Name() string                { return "argsTool" }
func (t *argsTool) Description() string         { return "records its arguments" }
func (t *argsTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t *argsTool) Run(_ context.Context, args json.RawMessage) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.args = append(t.args, string(args))
	return map[string]bool{"ok": true}, nil
}

// cut splits s before the offsets that steps, read as the distances between
// cut points, give; with runes set, a cut inside a UTF-8 sequence moves to
// the next character's start.
func cut(s string, steps []byte, runes bool) []string {
	var out []string
	start, at := 0, 0
	for _, st := range steps {
		at += int(st)
		if at >= len(s) {
			break
		}
		if runes {
			for at < len(s) && !utf8.RuneStart(s[at]) {
				at++
			}
		}
		if at > start && at < len(s) {
			out = append(out, s[start:at])
			start = at
		}
	}
	return append(out, s[start:])
}

// FuzzToolArgs runs the agent on a model that calls argsTool with args,
// streamed in deltas cut at fuzzed points (flags: bit 0 leaves the call
// without an id, bit 1 puts the first piece in the call's start, bit 2 lets
// the finish close the call instead of an end part, bit 3 keeps UTF-8
// characters whole), then answers in text. Whatever the bytes:
//   - the ToolInputDelta events concatenate to args;
//   - when args, less surrounding white space, are a JSON object, the tool
//     gets exactly them; when they are only white space, it gets {}; and
//     otherwise it is not called and the run reports the failure,
//     ToolFailed and a failed ToolReturned, and goes on;
//   - the run's events keep their rules (recorder.check) and it finishes.
func FuzzToolArgs(f *testing.F) {
	f.Add(`{"location":"Berlin"}`, []byte{3, 5, 1}, byte(0))
	f.Add("{\n    \"location\": \"Madrid\"\n}", []byte{6, 8, 2, 2, 6}, byte(2))
	f.Add(`{"number": 22}`, []byte{4}, byte(1))
	f.Add(`{}`, []byte{}, byte(4))
	f.Add(``, []byte{}, byte(0))
	f.Add("  \t", []byte{1}, byte(0))
	f.Add(`{"x":`, []byte{2}, byte(0))
	f.Add(`null`, []byte{1, 1}, byte(0))
	f.Add(`["Berlin"]`, []byte{1}, byte(0))
	f.Add(`"Berlin"`, []byte{1}, byte(0))
	f.Add(`{"city":"Zürich ☀"}`, []byte{11, 1, 1, 3}, byte(8))
	f.Add(`{"city":"Zürich ☀"}`, []byte{11, 1, 1, 3}, byte(0))
	f.Add("{\"a\":\"\xff\x00\"}", []byte{6}, byte(0))
	f.Add("{\"a\":1}\x00", []byte{3}, byte(0))
	f.Fuzz(func(t *testing.T, args string, steps []byte, flags byte) {
		id := "c1"
		if flags&1 != 0 {
			id = ""
		}
		pieces := cut(args, steps, flags&8 != 0)
		start := model.Part{Kind: model.PartToolCallStart, ToolCallID: id, ToolName: "argsTool"}
		if flags&2 != 0 {
			start.Text, pieces = pieces[0], pieces[1:]
		}
		call := []model.Part{start}
		for _, p := range pieces {
			call = append(call, model.Part{Kind: model.PartToolCallDelta, ToolCallID: id, Text: p})
		}
		if flags&4 == 0 {
			call = append(call, model.Part{Kind: model.PartToolCallEnd, ToolCallID: id})
		}
		m := &script{turns: []turn{
			{parts: parts(call, finish(model.FinishToolCalls, 1, 1))},
			{parts: parts(text("done"), finish(model.FinishStop, 1, 1))},
		}}
		tool := &argsTool{}
		rec := &recorder{}
		res, err := newAgent(t, m, tool).Run(context.Background(), input("go"), rec.emit)
		if err != nil {
			t.Fatalf("the run failed: %v", err)
		}

		var deltas strings.Builder
		var callID string
		var toolErr *agent.ToolFailed
		var result *agent.ToolResult
		for _, ev := range rec.events {
			switch e := ev.(type) {
			case agent.ToolInputDelta:
				deltas.WriteString(e.Delta)
			case agent.ToolInputStarted:
				callID = e.CallID
			case agent.ToolFailed:
				if e.CallID != callID {
					t.Fatalf("failure %+v for call %q", e, callID)
				}
				toolErr = &e
			case agent.ToolReturned:
				if e.Result.CallID != callID {
					t.Fatalf("a result for call %q, want %q", e.Result.CallID, callID)
				}
				result = &e.Result
			}
		}
		if deltas.String() != args {
			t.Fatalf("the input deltas concatenate to %q, the model sent %q", deltas.String(), args)
		}
		if _, ok := rec.events[len(rec.events)-1].(agent.StepFinished); !ok || res.FinishReason != model.FinishStop {
			t.Fatalf("the run ended with %s, finish reason %q", rec.names(), res.FinishReason)
		}
		if result == nil {
			t.Fatal("no outcome")
		}
		rec.check(t, res)

		// The rule, stated apart from the agent's code: arguments are a JSON
		// object, or nothing. JSON's own white space around them (space,
		// tab, CR, LF) does not count; any other character makes them not
		// JSON.
		trimmed := strings.Trim(args, " \t\r\n")
		valid := trimmed == "" || (json.Valid([]byte(trimmed)) && trimmed[0] == '{')
		want := trimmed
		if !valid || trimmed == "" {
			want = "{}"
		}
		switch {
		case valid && (len(tool.args) != 1 || tool.args[0] != want):
			t.Fatalf("the tool got %q, want exactly [%q]", tool.args, want)
		case valid && (toolErr != nil || result.Failed()):
			t.Fatalf("a call with arguments %q failed: %+v", args, result)
		case !valid && len(tool.args) != 0:
			t.Fatalf("the tool was called with %q for arguments %q", tool.args, args)
		case !valid && (toolErr == nil || !result.Failed()):
			t.Fatalf("arguments %q: error event %+v, result %+v; want TOOL_ERROR and isError", args, toolErr, result)
		}
	})
}
