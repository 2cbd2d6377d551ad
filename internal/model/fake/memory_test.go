package fake

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/model"
)

func TestRemembered(t *testing.T) {
	for in, want := range map[string]string{
		"Remember that my sister is called Ana.":   "my sister is called Ana",
		"please remember: I don't eat meat!":       "I don't eat meat",
		"Remember my birthday is on 3 May":         "my birthday is on 3 May",
		"Do you remember my name?":                 "",
		"I remember the sea":                       "",
		"REMEMBER,   I   start  my new job Monday": "I start my new job Monday",
	} {
		if got := remembered(in); got != want {
			t.Errorf("remembered(%q) = %q, want %q", in, got, want)
		}
	}
}

// callArgs is the arguments the fake's tool call carries.
func callArgs(t *testing.T, parts []model.Part) map[string]any {
	t.Helper()
	var b strings.Builder
	if parts[0].Kind != model.PartToolCallStart || parts[0].ToolName != memoryTool {
		t.Fatalf("the first part is %+v", parts[0])
	}
	for _, p := range parts {
		if p.Kind == model.PartToolCallDelta {
			b.WriteString(p.Text)
		}
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(b.String()), &args); err != nil {
		t.Fatalf("arguments %q: %v", b.String(), err)
	}
	return args
}

func TestRememberCallsTheTool(t *testing.T) {
	md := model.ToolSpec{Name: memoryTool, Parameters: json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string"}}}`)}
	req := model.Request{
		System:   "You speak in guru mode.\n\n<working_memory>\n# About the user\n- Name: Sam\n</working_memory>\nThis is what you know.",
		Messages: []model.Message{{Role: model.RoleUser, Content: "Remember that my sister is called Ana."}},
		Tools:    []model.ToolSpec{md},
	}
	parts := Answer(req)
	if got := callArgs(t, parts)["memory"]; got != "# About the user\n- Name: Sam\n- my sister is called Ana" {
		t.Fatalf("the block sent: %q", got)
	}
	if fin := parts[len(parts)-1].Finish; fin == nil || fin.Reason != model.FinishToolCalls {
		t.Fatalf("the answer ends %+v", parts[len(parts)-1])
	}

	schema := model.ToolSpec{Name: memoryTool, Parameters: json.RawMessage(`{"type":"object","properties":{"memory":{"type":"object"}}}`)}
	req.Tools = []model.ToolSpec{schema}
	got, _ := json.Marshal(callArgs(t, Answer(req))["memory"])
	if string(got) != `{"notes":["my sister is called Ana"]}` {
		t.Fatalf("the fields sent: %s", got)
	}

	// Without the tool on offer, "Remember" is a message like any other.
	req.Tools = nil
	if parts := Answer(req); parts[0].Kind != model.PartText {
		t.Fatalf("without the tool: %+v", parts[0])
	}

	// Once the tool has answered, the fake says what it kept.
	req.Tools = []model.ToolSpec{md}
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: memoryTool, Args: json.RawMessage(`{}`)}}},
		model.Message{Role: model.RoleTool, ToolCallID: "c1", ToolName: memoryTool, Content: `{"success":true,"version":2}`})
	var text strings.Builder
	for _, p := range Answer(req) {
		text.WriteString(p.Text)
	}
	if !strings.Contains(text.String(), `I'll remember that: "my sister is called Ana".`) {
		t.Fatalf("after the tool: %s", text.String())
	}
}

func TestRecalledAndTitle(t *testing.T) {
	system := "You speak in friend mode.\n\nFrom earlier conversations with the user (recalled from memory; each with when it was said):\n" +
		"- On 2 May 2026 (3 weeks ago), the user said: \"My dog is called \\\"Max\\\".\"\n- On 1 May 2026, the user said: \"Other\""
	if got := recalledFrom(system); got != `My dog is called "Max".` {
		t.Fatalf("recalledFrom: %q", got)
	}
	var text strings.Builder
	for _, p := range Answer(model.Request{System: system, Messages: []model.Message{{Role: model.RoleUser, Content: "Do you know my dog?"}}}) {
		text.WriteString(p.Text)
	}
	if !strings.Contains(text.String(), `You told me before: "My dog is called "Max"."`) {
		t.Fatalf("the reply: %s", text.String())
	}
	text.Reset()
	for _, p := range Answer(model.Request{System: model.TitleInstructions, Messages: []model.Message{
		{Role: model.RoleUser, Content: "how do I start my day well, with coffee?"}, {Role: model.RoleAssistant, Content: "…"}}}) {
		text.WriteString(p.Text)
	}
	if text.String() != "How do I start my day" {
		t.Fatalf("the title: %q", text.String())
	}
}
