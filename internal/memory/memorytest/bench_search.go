package memorytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// The search benchmark's history: conversations of a user with the
// companion, from a fixed generator. Each thread keeps to a topic and a
// few of its people, places or things (names, rare words); the topics'
// words and the everyday words around them are common, so that most words
// of a question match many messages, as in a long real history.

// topic is what a thread talks about.
type topic struct {
	nouns, verbs, adjectives, names []string
}

var topics = []topic{
	{strings.Fields("dog puppy vet walk leash park treats collar kennel bone"),
		strings.Fields("walked fed adopted trained groomed chased"),
		strings.Fields("playful sleepy stubborn gentle noisy"),
		strings.Fields("Rex Biscuit Luna Pepper Ziggy Mochi Baxter Nala Otis Juniper")},
	{strings.Fields("job boss meeting project deadline office promotion colleague salary interview"),
		strings.Fields("finished presented missed negotiated planned started"),
		strings.Fields("stressful exciting boring tense promising"),
		strings.Fields("Harrington Okafor Lindqvist Brightwell Castellano Nakamura Figueroa Abernathy Kowalczyk Delacroix")},
	{strings.Fields("recipe pasta oven garlic dinner soup kitchen spices bread cake"),
		strings.Fields("baked cooked burned tasted bought tried"),
		strings.Fields("delicious salty crispy bland spicy"),
		strings.Fields("carbonara shakshuka ratatouille bibimbap tagine risotto focaccia gazpacho pierogi ceviche")},
	{strings.Fields("trip flight hotel beach passport luggage train museum ticket map"),
		strings.Fields("booked visited missed packed explored cancelled"),
		strings.Fields("crowded beautiful expensive relaxing rainy"),
		strings.Fields("Lisbon Kyoto Reykjavik Marrakesh Valparaiso Tbilisi Ljubljana Oaxaca Hobart Tromso")},
	{strings.Fields("run gym marathon knee stretch doctor sleep yoga diet injury"),
		strings.Fields("trained rested hurt stretched skipped finished"),
		strings.Fields("sore tired strong slow healthy"),
		strings.Fields("Achilles meniscus plantar ibuprofen physio Garmin Strava kettlebell Pilates triathlon")},
	{strings.Fields("guitar song concert piano band lyrics album practice chords singer"),
		strings.Fields("played wrote heard practised recorded learned"),
		strings.Fields("loud catchy sad beautiful difficult"),
		strings.Fields("Telecaster Radiohead Chopin Fleetwood Bjork Stratocaster Coltrane Satie Mitski Debussy")},
	{strings.Fields("sister mother birthday wedding cousin grandmother brother family gift anniversary"),
		strings.Fields("called visited forgot celebrated invited hugged"),
		strings.Fields("happy awkward lovely emotional busy"),
		strings.Fields("Imogen Tobias Margarethe Ezekiel Priya Svetlana Rosalind Bartholomew Anouk Cornelius")},
	{strings.Fields("garden tomatoes roses soil seeds water compost weeds greenhouse harvest"),
		strings.Fields("planted watered pruned picked weeded sowed"),
		strings.Fields("green wilted lush dry muddy"),
		strings.Fields("hydrangea wisteria rhubarb courgette foxglove marigold lavender dahlia kohlrabi nasturtium")},
}

var (
	fillers    = strings.Fields("really pretty little good great nice whole new old first last next other")
	times      = []string{"yesterday", "this morning", "last week", "on Sunday", "after work", "all weekend", "tonight", "last month"}
	userLines  = []string{"I %[1]s the %[2]s with %[4]s %[5]s.", "%[4]s says the %[2]s is %[3]s.", "The %[2]s was %[3]s %[5]s, so I %[1]s it.", "I'm thinking about the %[2]s again.", "Do you remember the %[2]s I told you about?", "Honestly the %[6]s %[2]s made my day.", "We %[1]s the %[2]s and then the %[7]s, which was %[3]s."}
	replyLines = []string{"That sounds %[3]s! How did %[4]s take it?", "It might help to look at the %[2]s again %[5]s.", "I remember you mentioned the %[2]s before.", "A %[6]s %[2]s can make a real difference.", "Did %[4]s like the %[7]s too?", "You %[1]s the %[2]s, that is worth something.", "Tell me more about the %[2]s when you can."}
	questions  = []string{"What did I tell you about %[4]s?", "How is my %[2]s doing?", "When did I last mention the %[2]s and the %[7]s?", "What did %[4]s say about the %[2]s?", "Did I ever %[8]s the %[2]s?", "What was that %[3]s %[2]s I talked about?", "Remind me what happened with the %[2]s %[5]s."}
)

// line fills one of templates with words of t, the thread's name being
// name.
func line(r *rand.Rand, t topic, name string, templates []string) string {
	pick := func(ws []string) string { return ws[r.IntN(len(ws))] }
	verb := pick(t.verbs)
	return fmt.Sprintf(pick(templates), verb, pick(t.nouns), pick(t.adjectives), name, pick(times), pick(fillers), pick(t.nouns), strings.TrimSuffix(verb, "ed"))
}

// conversation is a thread of n messages about t and name: a user's
// message of two to four lines, a reply of three to five, in turn.
func conversation(r *rand.Rand, t topic, name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		lines, templates := 2+r.IntN(3), userLines
		if i%2 == 1 {
			lines, templates = 3+r.IntN(3), replyLines
		}
		var b strings.Builder
		for j := range lines {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(line(r, t, name, templates))
		}
		out[i] = b.String()
	}
	return out
}

// History is n messages of resource owner's, in threads of 20 to 120
// messages each, from a generator seeded with seed, as an import takes
// them: the threads are owner's "<owner>-1", "<owner>-2", ..., a day
// apart, and their messages a minute apart.
func History(owner string, n int, seed uint64) []memory.ImportThread {
	r := rand.New(rand.NewPCG(seed, 26))
	var out []memory.ImportThread
	start := base.Add(-24 * time.Hour * time.Duration(n/40+1))
	for done := 0; done < n; {
		k := min(20+r.IntN(101), n-done)
		t := topics[r.IntN(len(topics))]
		name := t.names[r.IntN(len(t.names))]
		at := start.Add(24 * time.Hour * time.Duration(len(out)))
		th := memory.ImportThread{Thread: memory.Thread{ID: fmt.Sprint(owner, "-", len(out)+1), ResourceID: owner, CreatedAt: at, UpdatedAt: at}}
		for i, text := range conversation(r, t, name, k) {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			m := imported(fmt.Sprint(th.Thread.ID, "-", i+1), role, text, at.Add(time.Duration(i)*time.Minute))
			th.Messages = append(th.Messages, m)
		}
		out = append(out, th)
		done += k
	}
	return out
}

// Questions are n questions a user asks of their history, from the same
// topics, with a name in some.
func Questions(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 62))
	out := make([]string, n)
	for i := range out {
		t := topics[r.IntN(len(topics))]
		out[i] = line(r, t, t.names[r.IntN(len(t.names))], questions)
	}
	return out
}

// BenchSearch measures Search over a resource of 1,000, 10,000 and 100,000
// messages (History, seeded through Import, beside another resource's
// quarter as many on the same words), asked realistic short questions as
// a turn's recall asks them: the best 5, a message of context either
// side, the newest thread left out. It reports, besides the time per
// search, its median and 99th percentile in milliseconds.
func BenchSearch(b *testing.B, h Harness) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := h.open(b)
			mine := History("bench", n, 1)
			for _, history := range [][]memory.ImportThread{mine, History("other", n/4, 2)} {
				if _, err := s.Import(ctx, history, func(memory.Thread, []memory.Message) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			if h.Settle != nil {
				h.Settle(b, s)
			}
			qs := Questions(200, 3)
			newest := mine[len(mine)-1].Thread.ID
			lat := make([]time.Duration, 0, 1024)
			found := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "bench", Text: qs[i%len(qs)], ExcludeThreadID: newest, Limit: 5, Context: 1})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				found += len(rs)
			}
			b.StopTimer()
			if found == 0 {
				b.Fatal("the questions found nothing")
			}
			slices.Sort(lat)
			ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
