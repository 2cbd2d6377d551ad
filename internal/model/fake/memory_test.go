package fake

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
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

// TestRecalledFromAsTheExpression: recalledFrom reads what the regular
// expression it replaced read (the first quoted string after "the user
// said: " that closes), on blocks made to trip it.
func TestRecalledFromAsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`the user said: ("(?:[^"\\]|\\.)*")`)
	want := func(system string) string {
		_, block, ok := strings.Cut(system, "From earlier conversations with the user")
		if !ok {
			return ""
		}
		m := re.FindStringSubmatch(block)
		if m == nil {
			return ""
		}
		s, err := strconv.Unquote(m[1])
		if err != nil {
			return ""
		}
		return s
	}
	const head = "From earlier conversations with the user:\n- "
	for _, system := range []string{
		"", "no block", head, head + `the user said: "plain"`,
		head + `the user said: "esc \"q\" and \\ and \u00e9" then the user said: "second"`,
		head + `the user said: "unterminated`,
		head + `the user said: "unterminated` + "\n" + `- the user said: "second"`,
		head + `the user said: "bad \` + "\n" + `escape" - the user said: "after"`,
		head + `the user said: "ends in \`,
		head + `the user said: "inner the user said: "x" y"`,
		head + `the user said: "bad escape \q" - the user said: "ok"`,
		head + "the user said: \"multi\nline\"",
		head + "the user said: \"\xff\\\xfe\" - the user said: \"ok\"",
		head + `you said: "not the user" - the user said: "the user"`,
		head + `the user said: ""`,
		head + `the user said:"no space" the user said: "space"`,
	} {
		if got, w := recalledFrom(system), want(system); got != w {
			t.Errorf("recalledFrom(%q) = %q, the expression read %q", system, got, w)
		}
	}
}

// TestHashHexAsBefore: the ids the fake makes are the bytes fmt.Fprint
// wrote to the hash before, which the golden transcripts hold.
func TestHashHexAsBefore(t *testing.T) {
	old := func(req model.Request, salt string) string {
		h := fnv.New64a()
		fmt.Fprint(h, req.System, len(req.Messages), salt)
		for _, m := range req.Messages {
			fmt.Fprint(h, "\x00", m.Role, "\x00", m.Content, "\x00", m.ToolCallID)
		}
		return fmt.Sprintf("%016x", h.Sum64())
	}
	for _, req := range []model.Request{
		{},
		{System: "sys", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}},
		{System: "in friend mode", Messages: []model.Message{{Role: model.RoleUser, Content: "a"}, {Role: model.RoleAssistant, Content: ""},
			{Role: model.RoleTool, Content: `{"x":1}`, ToolCallID: "call_1"}, {Role: model.RoleUser, Content: "12"}}},
	} {
		for _, salt := range []string{"", "response", "call0", "12"} {
			if got, want := hashHex(req, salt), old(req, salt); got != want {
				t.Errorf("hashHex(%+v, %q) = %s, want %s", req, salt, got, want)
			}
		}
	}
}
