package turn

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
	_ "github.com/companionhq/companion/internal/testkit"
)

// stored makes a tail from "role:text" (or "role:text#id", "role:text!"
// for a pending message).
func stored(specs ...string) []memory.Message {
	var out []memory.Message
	for i, s := range specs {
		role, text, _ := strings.Cut(s, ":")
		m := memory.Message{Seq: int64(i + 1), Role: role}
		if strings.HasSuffix(text, "!") {
			text, m.Pending = strings.TrimSuffix(text, "!"), true
		}
		text, m.ID, _ = strings.Cut(text, "#")
		m.Text = text
		out = append(out, m)
	}
	return out
}

func request(specs ...string) []agent.Message {
	var out []agent.Message
	for _, s := range specs {
		role, text, _ := strings.Cut(s, ":")
		text, id, _ := strings.Cut(text, "#")
		out = append(out, agent.Message{Role: role, Content: text, ID: id})
	}
	return out
}

func TestNewMessages(t *testing.T) {
	tests := []struct {
		name    string
		tail    []memory.Message
		req     []agent.Message
		want    string // the new messages' texts
		answers bool
	}{
		{"empty thread", nil, request("user:a"), "a", true},
		{"newest only", stored("user:a", "assistant:A"), request("user:b"), "b", true},
		{"whole conversation", stored("user:a", "assistant:A"), request("user:a", "assistant:A", "user:b"), "b", true},
		{"whole conversation with a system message", stored("user:a", "assistant:A"), request("system:s", "user:a", "assistant:A", "user:b"), "b", true},
		{"the same words again are a new turn", stored("user:yes", "assistant:ok"), request("user:yes"), "yes", true},
		{"the last exchange and a new message", stored("user:a", "assistant:A", "user:b", "assistant:B"), request("assistant:B", "user:c"), "c", true},
		{"a retry of a failed turn", stored("user:a", "assistant:A", "user:b!"), request("user:b"), "", true},
		{"a resent retry of a failed turn", stored("user:a", "assistant:A", "user:b!"), request("user:a", "assistant:A", "user:b"), "", true},
		{"a new message after a failed turn", stored("user:a", "assistant:A", "user:b!"), request("user:c"), "c", true},
		{"an answered conversation again", stored("user:a", "assistant:A"), request("user:a", "assistant:A"), "", false},
		{"a history the thread does not hold", stored("user:x", "assistant:X"), request("user:a", "assistant:A", "user:b"), "a A b", true},
		{"repeating turns", stored("user:a", "assistant:A", "user:a", "assistant:A"), request("user:a", "assistant:A", "user:a", "assistant:A", "user:a"), "a", true},
		{"ids: known ones are dropped", stored("user:a#1", "assistant:A#2"), request("user:a#1", "assistant:A#2", "user:b#3"), "b", true},
		{"ids: a known id anywhere in the thread", stored("user:a#1", "assistant:A#2", "user:b#3", "assistant:B#4"), request("user:a#1", "user:c#5"), "c", true},
		{"ids: an unknown id is new even if its text repeats", stored("user:a#1", "assistant:A#2"), request("user:a#9"), "a", true},
		{"ids: a retry by id", stored("user:a#1", "assistant:A#2", "user:b#3!"), request("user:b#3"), "", true},
		{"ids and text mixed", stored("user:a#1", "assistant:A#2"), request("user:a#1", "assistant:A", "user:b"), "b", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			known := map[string]bool{}
			for _, m := range tc.tail {
				if m.ID != "" {
					known[m.ID] = true
				}
			}
			fresh := newMessages(tc.req, tc.tail, known)
			var got []string
			for _, i := range fresh {
				got = append(got, tc.req[i].Content)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("new messages %q, want %q", got, tc.want)
			}
			if a := answerable(tc.req, fresh, tc.tail); a != tc.answers {
				t.Errorf("answerable %v, want %v", a, tc.answers)
			}
		})
	}
}

// TestOverlapIsLinear: a long resent conversation is matched in one pass.
func TestOverlapIsLinear(t *testing.T) {
	var tail, req []string
	for i := range 50_000 {
		tail = append(tail, fmt.Sprint(i%2))
	}
	req = append(req, tail...)
	req = append(req, "new")
	if k := overlap(tail, req); k != len(tail) {
		t.Fatalf("overlap %d, want %d", k, len(tail))
	}
}

func TestWindow(t *testing.T) {
	reply := func(id string, model string) memory.Message {
		return memory.Message{ID: id, Role: "assistant", Model: json.RawMessage(model)}
	}
	round := `[{"role":"assistant","content":"","toolCalls":[{"id":"c1","name":"weatherTool","args":{}},{"id":"c2","name":"weatherTool","args":{}}]},` +
		`{"role":"tool","content":"{}","toolCallId":"c1","toolName":"weatherTool"},{"role":"tool","content":"{}","toolCallId":"c2","toolName":"weatherTool","isError":true},` +
		`{"role":"assistant","content":"done"}]`
	tail := []memory.Message{{Role: "user", Text: "u1"}, reply("a1", `[{"role":"assistant","content":"A1"}]`), {Role: "user", Text: "u2"}, reply("a2", round)}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{100, "user assistant user assistant tool tool assistant"},
		{5, "user assistant tool tool assistant"},
		{4, "assistant tool tool assistant"},
		{3, "assistant"},
		{2, "assistant"},
		{0, ""},
	} {
		got, err := window(tail, tc.n, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range got {
			roles = append(roles, m.Role)
		}
		if strings.Join(roles, " ") != tc.want {
			t.Errorf("window(%d) = %v, want %s", tc.n, roles, tc.want)
		}
	}
	got, _ := window(tail, 4, 1<<20)
	if len(got[0].ToolCalls) != 2 || got[0].ToolCalls[1].ID != "c2" || !got[2].IsError || got[2].ToolCallID != "c2" || got[3].Content != "done" {
		t.Fatalf("the tool round did not survive storage: %+v", got)
	}
}
