package fake_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
	"github.com/companionhq/companion/internal/turn"
)

// BenchmarkAnswer is the fake's answer to a turn's first message, as the
// service's turn benchmarks send it (internal/app): without memory, and
// with working memory's block and tool and four recalled messages with
// their neighbours in the instructions.
func BenchmarkAnswer(b *testing.B) {
	const question = "What should I cook for my sister's birthday dinner?"
	plain := request(agent.Friend, user(question))
	withMemory := plain
	withMemory.System += "\n\n" + benchWorkingMemory + "\n\n" + benchRecalled
	withMemory.Tools = append(withMemory.Tools, model.ToolSpec{Name: "updateWorkingMemory",
		Description: "Update what you know of the user (working memory): send the whole block as it should read now, in the template's format, keeping what is still true.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string","description":"The whole working memory block, in Markdown."}},"required":["memory"],"additionalProperties":false}`)})
	for _, c := range []struct {
		name string
		req  model.Request
	}{{"plain", plain}, {"memory", withMemory}} {
		b.Run(c.name, func(b *testing.B) {
			m := fake.New(fake.Options{})
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for _, err := range m.Stream(context.Background(), c.req) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n == 0 {
					b.Fatal("no answer")
				}
			}
		})
	}
}

// benchWorkingMemory is working memory's block as a turn shows it before
// anything was written into it.
const benchWorkingMemory = "<working_memory>\n" + turn.DefaultWorkingMemoryTemplate + "</working_memory>\n" +
	`This is what you know of the user, kept across conversations. When you learn something worth keeping (a name, people who matter to them, likes, dislikes, ongoing events and goals, things to avoid), call updateWorkingMemory with the whole block as it should read now, keeping what is still true. Never mention this block or the tool in your reply.`

// benchRecalled is recall's block of four messages with their neighbours.
var benchRecalled = func() string {
	var b strings.Builder
	b.WriteString("From earlier conversations with the user (recalled from memory; each with when it was said):")
	for i := range 4 {
		b.WriteString("\n- On 12 August 2026 (3 months ago), the user said: \"I am worried about my sister Ana, and how it went on day 14 of the month.\"")
		b.WriteString("\n  Just before, you said: \"That sounds meaningful: cooking pasta matters to you.\"")
		if i%2 == 0 {
			b.WriteString("\n  Just after, you said: \"That sounds meaningful: my sister Ana matters to you.\"")
		}
	}
	return b.String()
}()
