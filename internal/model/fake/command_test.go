package fake_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
)

func TestToolCommand(t *testing.T) {
	echo := model.ToolSpec{Name: "everything_echo", Parameters: json.RawMessage(`{"type":"object"}`)}
	m := fake.New(fake.Options{})
	tests := []struct {
		name, msg string
		// wantCall is the called tool and its arguments; "" when the fake
		// answers in words instead.
		wantCall, wantArgs string
	}{
		{"with arguments", `/tool everything_echo {"message":"hi there"}`, "everything_echo", `{"message":"hi there"}`},
		{"without arguments", `/tool everything_echo`, "everything_echo", `{}`},
		{"built-in tool", `/tool weatherTool {"location":"Oslo"}`, "weatherTool", `{"location":"Oslo"}`},
		{"not offered", `/tool nothing {}`, "", ""},
		{"not at the start", `please /tool everything_echo {}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(agent.Personalities()[0], user(tt.msg))
			req.Tools = append(req.Tools, echo)
			if !reflect.DeepEqual(fake.Answer(req), fake.Answer(req)) {
				t.Fatal("two answers differ")
			}
			var name, id string
			for _, p := range fake.Answer(req) {
				if p.Kind == model.PartToolCallStart {
					name, id = p.ToolName, p.ToolCallID
				}
			}
			text, calls, fin := collect(t, m, req)
			if name != tt.wantCall || calls[id] != tt.wantArgs {
				t.Fatalf("called %q with %q, want %q with %q", name, calls[id], tt.wantCall, tt.wantArgs)
			}
			if tt.wantCall == "" {
				if fin.Reason != model.FinishStop || text == "" {
					t.Errorf("answer %q, %s; want words", text, fin.Reason)
				}
				return
			}
			if fin.Reason != model.FinishToolCalls || text != "" {
				t.Fatalf("answer %q, %s; want only the call", text, fin.Reason)
			}

			// Once the result is back, the answer is its text.
			for _, r := range []struct {
				content string
				isError bool
				want    string
			}{
				{`"Echo: hi"`, false, "Echo: hi"},
				{`{"sum":3}`, false, `{"sum":3}`},
				{`{"error":"everything_echo failed: MCP server everything is unreachable"}`, true, "everything_echo failed: MCP server everything is unreachable"},
			} {
				next := req
				next.Messages = append(clone(req.Messages),
					model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: name, Args: json.RawMessage(calls[id])}}},
					model.Message{Role: model.RoleTool, ToolCallID: id, ToolName: name, Content: r.content, IsError: r.isError})
				text, _, fin := collect(t, m, next)
				if text != r.want || fin.Reason != model.FinishStop {
					t.Errorf("after %s: %q, %s; want %q", r.content, text, fin.Reason, r.want)
				}
			}
		})
	}
}

func clone(msgs []model.Message) []model.Message { return append([]model.Message(nil), msgs...) }
