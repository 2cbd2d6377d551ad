package turn

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

func TestMergeLines(t *testing.T) {
	base := "# About the user\n- Name:\n- Likes:\n"
	tests := []struct {
		name, mine, cur, want string
	}{
		{"an added line joins the other update's",
			"# About the user\n- Name: Sam\n- Likes:\n",
			"# About the user\n- Name:\n- Likes: jazz\n",
			"# About the user\n- Name: Sam\n- Likes: jazz\n"},
		{"lines both added are kept once",
			"# About the user\n- Name:\n- Likes:\n- Sister: Ana\n",
			"# About the user\n- Name:\n- Likes:\n- Sister: Ana\n",
			"# About the user\n- Name:\n- Likes:\n- Sister: Ana\n"},
		{"a line the other update removed stays removed",
			"# About the user\n- Name:\n- Likes:\n- Dog: Max\n",
			"# About the user\n- Likes:\n",
			"# About the user\n- Likes:\n- Dog: Max\n"},
		{"a line added goes after the line it follows",
			base + "- Goal: run a marathon\n",
			base + "- Avoid: talking about work\n",
			base + "- Goal: run a marathon\n- Avoid: talking about work\n"},
		{"two edits of one line are both kept",
			"# About the user\n- Name: Sam\n- Nickname: Sammy\n- Likes:\n",
			"# About the user\n- Name: Samantha\n- Likes:\n",
			"# About the user\n- Name: Sam\n- Nickname: Sammy\n- Name: Samantha\n- Likes:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeLines(base, tt.mine, tt.cur); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestMergeJSON(t *testing.T) {
	obj := map[string]any{}
	_ = json.Unmarshal([]byte(`{"name":"Sam","likes":["jazz"],"family":{"sister":"Ana","dog":"Max"},"job":"nurse"}`), &obj)
	var patch map[string]any
	_ = json.Unmarshal([]byte(`{"likes":["hiking","jazz"],"family":{"dog":null,"brother":"Leo"},"job":null,"city":"Lyon"}`), &patch)
	got, _ := json.Marshal(mergeJSON(obj, patch))
	want := `{"city":"Lyon","family":{"brother":"Leo","sister":"Ana"},"likes":["jazz","hiking"],"name":"Sam"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// An empty array adds nothing and wipes nothing.
	got, _ = json.Marshal(mergeJSON(map[string]any{"likes": []any{"jazz"}}, map[string]any{"likes": []any{}}))
	if string(got) != `{"likes":["jazz"]}` {
		t.Fatalf("an empty array: %s", got)
	}
}

func TestMergeUpdate(t *testing.T) {
	md := WorkingMemoryConfig{}.withDefaults()
	none := memory.WorkingMemory{}
	v1 := memory.WorkingMemory{Version: 1, Content: "- Name: Sam\n"}
	v2 := memory.WorkingMemory{Version: 2, Content: "- Name: Sam\n- Likes: jazz\n"}
	// Made from the current version: the model's block as it is.
	if got, _ := mergeUpdate(md, v1, v1, json.RawMessage(`"- Name: Sam\n- Dog: Max\n"`)); got != "- Name: Sam\n- Dog: Max\n" {
		t.Fatalf("from the current version: %q", got)
	}
	// Made from v1 while v2 was stored: both kept.
	if got, _ := mergeUpdate(md, v1, v2, json.RawMessage(`"- Name: Sam\n- Dog: Max\n"`)); got != "- Name: Sam\n- Dog: Max\n- Likes: jazz\n" {
		t.Fatalf("from an older version: %q", got)
	}
	// The first update of a blank block.
	if got, _ := mergeUpdate(md, none, none, json.RawMessage(`"- Name: Sam"`)); got != "- Name: Sam" {
		t.Fatalf("the first update: %q", got)
	}
	if _, err := mergeUpdate(md, none, none, json.RawMessage(`{"name":"Sam"}`)); err == nil {
		t.Fatal("an object for a Markdown block was taken")
	}
	js := WorkingMemoryConfig{Format: FormatJSON, Template: `{"type":"object","properties":{"name":{"type":"string"},"likes":{"type":"array"}}}`}.withDefaults()
	got, err := mergeUpdate(js, none, none, json.RawMessage(`{"likes":["jazz"]}`))
	if err != nil || got != `{"likes":["jazz"],"name":""}` {
		t.Fatalf("the first schema update: %s %v", got, err)
	}
}

func TestEmptyFromSchema(t *testing.T) {
	got, _ := json.Marshal(emptyFromSchema(`{"type":"object","properties":{"name":{"type":"string"},"people":{"type":"array"},"prefs":{"type":"object","properties":{"food":{"type":"string"}}},"age":{"type":"number"}}}`))
	if string(got) != `{"age":null,"name":"","people":[],"prefs":{"food":""}}` {
		t.Fatalf("got %s", got)
	}
	if emptyFromSchema(`[1]`) != nil {
		t.Fatal("an array is not a schema")
	}
}

func TestRecallBlock(t *testing.T) {
	now := time.Date(2026, 5, 23, 12, 0, 0, 0, time.UTC)
	results := []memory.SearchResult{
		{ThreadID: "pets", ThreadTitle: "Pets", Message: memory.Message{ID: "u1", Role: "user", Text: "My dog is called Max.", CreatedAt: time.Date(2026, 5, 2, 9, 0, 0, 0, time.UTC)},
			After: []memory.Message{{ID: "r1", Role: "assistant", Text: "What a good name!"}}},
		{ThreadID: "food", Message: memory.Message{ID: "r2", Role: "assistant", Text: "Try the \"lemon\" cake.", CreatedAt: now.Add(-30 * time.Hour)}},
	}
	want := RecallHeading + `
- On 2 May 2026 (3 weeks ago), in the conversation "Pets", the user said: "My dog is called Max."
  Just after, you said: "What a good name!"
- On 22 May 2026 (yesterday), you said: "Try the \"lemon\" cake."`
	if got := recallBlock(results, now, DefaultRecallBytes); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// The budget keeps whole entries only.
	if got := recallBlock(results, now, len(RecallHeading)+150); got != RecallHeading+`
- On 2 May 2026 (3 weeks ago), in the conversation "Pets", the user said: "My dog is called Max."
  Just after, you said: "What a good name!"` {
		t.Fatalf("within a budget: %s", got)
	}
	if got := recallBlock(results, now, 10); got != "" {
		t.Fatalf("nothing fits: %q", got)
	}
	// A message shown as another's context is not shown again.
	reply := memory.Message{ID: "r1", Role: "assistant", Text: "What a good name!", CreatedAt: results[0].Message.CreatedAt}
	withReply := append(results[:1:1], memory.SearchResult{ThreadID: "pets", ThreadTitle: "Pets", Message: reply, Before: []memory.Message{results[0].Message}})
	if got := recallBlock(withReply, now, DefaultRecallBytes); strings.Count(got, "What a good name!") != 1 || strings.Count(got, "My dog is called Max.") != 1 {
		t.Fatalf("the same exchange twice:\n%s", got)
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 5, 23, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{time.Hour, "today"}, {30 * time.Hour, "yesterday"}, {5 * 24 * time.Hour, "5 days ago"}, {21 * 24 * time.Hour, "3 weeks ago"},
		{100 * 24 * time.Hour, "3 months ago"}, {400 * 24 * time.Hour, "a year ago"}, {800 * 24 * time.Hour, "2 years ago"}} {
		if got := ago(now, now.Add(-tt.d)); got != tt.want {
			t.Errorf("%s ago: %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		`"Planning a trip to Lyon."`: "Planning a trip to Lyon",
		"  A\nlong   day ":           "A long day",
		"":                           "",
	} {
		if got := cleanTitle(in); got != want {
			t.Errorf("cleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDiversify(t *testing.T) {
	r := func(thread string, seq int64) memory.SearchResult {
		return memory.SearchResult{ThreadID: thread, Message: memory.Message{Seq: seq}}
	}
	results := []memory.SearchResult{r("a", 10), r("a", 11), r("a", 9), r("b", 3), r("a", 30), r("c", 1), r("a", 12)}
	got := diversify(results, 2, 4)
	var ids []string
	for _, g := range got {
		ids = append(ids, fmt.Sprintf("%s%d", g.ThreadID, g.Message.Seq))
	}
	// Half as ranked (a10, a11), then what is not next to them (b3, a30);
	// a9 and a12 come with a10 and a11 as their context.
	if strings.Join(ids, " ") != "a10 a11 b3 a30" {
		t.Fatalf("kept %v", ids)
	}
	// Places left over go to the near ones, in order.
	if got := diversify(results[:3], 2, 4); len(got) != 3 || got[2].Message.Seq != 9 {
		t.Fatalf("with places to spare: %+v", got)
	}
}
