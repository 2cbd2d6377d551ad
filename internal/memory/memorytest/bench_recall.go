package memorytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// The service's turn benchmarks (internal/app) seed each user with the
// same history and ask the same questions; BenchRecall measures the search
// of their turns alone.

// CompanionHistoryMessages is how many messages CompanionHistory holds.
const CompanionHistoryMessages = 1000

// CompanionHistory is the history of a user of some months: 1,000
// messages, a user's and a reply in turn, an hour apart from start, in
// threads of ten ("<resource>-seed-thread-<n>"). Every user's is the same.
// A user's message says how something went (a dozen subjects: a dog, a
// sister, running, cooking...) "on day N of the month"; a reply, that the
// subject matters.
func CompanionHistory(resource string, start time.Time) []memory.ImportThread {
	subjects := []string{"my dog Max", "my sister Ana", "the garden", "my new job", "running in the park", "the cello lessons",
		"our trip to Lisbon", "cooking pasta", "my sleep", "the book club", "my grandmother", "the old car"}
	verbs := []string{"I keep thinking about", "Yesterday I talked about", "I am worried about", "I loved", "Tell me more about"}
	var out []memory.ImportThread
	for i := range CompanionHistoryMessages {
		text := fmt.Sprintf("%s %s, and how it went on day %d of the month.", verbs[i%len(verbs)], subjects[(i*7)%len(subjects)], i%28+1)
		role := "user"
		if i%2 == 1 {
			role, text = "assistant", "That sounds meaningful: "+subjects[(i*5)%len(subjects)]+" matters to you."
		}
		at := start.Add(time.Duration(i) * time.Hour)
		if i%10 == 0 {
			out = append(out, memory.ImportThread{Thread: memory.Thread{ID: fmt.Sprint(resource, "-seed-thread-", i/10), ResourceID: resource, CreatedAt: at, UpdatedAt: at}})
		}
		th := &out[len(out)-1]
		th.Messages = append(th.Messages, imported(fmt.Sprint(resource, "-seed-", i), role, text, at))
	}
	return out
}

// CompanionQuestions are what the turns of the service's benchmarks ask,
// in turn. Most of their words are in many of CompanionHistory's messages
// ("day" in every user's message); the third's in none (only the turns'
// own messages hold them, once some were asked).
var CompanionQuestions = []string{
	"How do I start my day well?",
	"Any ideas for a weekend with my dog?",
	"I feel tired after work lately, what can I do?",
	"What should I cook for my sister's birthday dinner?",
	"How can I keep running through the winter?",
}

// BenchRecall measures a turn's recall as internal/turn asks it of the
// store: Search for three times the four messages it shows, leaving out
// the turn's own thread, then Around the four (one message either side),
// on a user of CompanionHistory, in a database of 1, 16 and 64 such users.
// Besides the time of a recall, it reports each question's mean in
// microseconds (q1-us for the first of CompanionQuestions...).
func BenchRecall(b *testing.B, h Harness) {
	for _, users := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			ctx := context.Background()
			s := h.open(b)
			for u := range users {
				if _, err := s.Import(ctx, CompanionHistory(fmt.Sprint("u", u), base), func(memory.Thread, []memory.Message) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			if h.Settle != nil {
				h.Settle(b, s)
			}
			took := make([]time.Duration, len(CompanionQuestions))
			asked := make([]int, len(CompanionQuestions))
			found := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := i % len(CompanionQuestions)
				start := time.Now()
				rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "u0", Text: CompanionQuestions[q], ExcludeThreadID: "new", Limit: 12})
				if err != nil {
					b.Fatal(err)
				}
				found += len(rs)
				rs = rs[:min(4, len(rs))]
				if err := s.Around(ctx, rs, 1); err != nil {
					b.Fatal(err)
				}
				took[q] += time.Since(start)
				asked[q]++
			}
			b.StopTimer()
			if found == 0 {
				b.Fatal("the questions found nothing")
			}
			for q := range CompanionQuestions {
				if asked[q] > 0 {
					b.ReportMetric(float64(took[q].Microseconds())/float64(asked[q]), fmt.Sprintf("q%d-us", q+1))
				}
			}
		})
	}
}
