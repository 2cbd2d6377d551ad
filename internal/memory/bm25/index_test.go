package bm25

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// corpus is a deterministic history: threads of a few messages, each a
// few words of a small vocabulary (so that words repeat, in texts and
// neighbours), with some stop words and capitals.
func corpus(threads, perThread int, seed uint64) []Doc {
	vocab := strings.Fields(`Dog dogs running runs garden Lisbon cello lessons sister birthday pasta cooking sleep tired
		winter park book club grandmother car job interview Max Ana travel rain coffee`)
	stop := strings.Fields(`the a and of to I my was it`)
	r := rand.New(rand.NewPCG(seed, 1))
	var out []Doc
	row := int64(0)
	for t := range threads {
		for s := 1; s <= perThread; s++ {
			var words []string
			for range 3 + r.IntN(8) {
				if r.IntN(3) == 0 {
					words = append(words, stop[r.IntN(len(stop))])
				}
				words = append(words, vocab[r.IntN(len(vocab))])
			}
			row++
			out = append(out, Doc{Row: row, ThreadID: fmt.Sprint("t", t), Message: memory.Message{
				Seq: int64(s), ID: fmt.Sprint("m", row), Role: []string{"user", "assistant"}[s%2],
				Text: strings.Join(words, " ") + ".", CreatedAt: time.Unix(row*3600, 0).UTC()}})
		}
	}
	return out
}

// reference scores q over docs as Search's comment says, naively: every
// doc, every word, sets built from scratch.
func reference(docs []Doc, q Query) []Hit {
	stems := NewStemmer(0)
	termsOf := func(text string) map[string]bool {
		set := map[string]bool{}
		words(text, func(w string) {
			if s := stems.Stem(w); s != "" {
				set[s] = true
			}
		})
		return set
	}
	type key struct {
		thread string
		seq    int64
	}
	text := map[key]map[string]bool{}
	for _, d := range docs {
		text[key{d.ThreadID, d.Message.Seq}] = termsOf(d.Message.Text)
	}
	near := func(d Doc) map[string]bool {
		set := map[string]bool{}
		for _, s := range []int64{d.Message.Seq - 1, d.Message.Seq + 1} {
			for w := range text[key{d.ThreadID, s}] {
				set[w] = true
			}
		}
		return set
	}
	length := func(d Doc) float64 {
		set := map[string]bool{}
		for w := range text[key{d.ThreadID, d.Message.Seq}] {
			set[w] = true
		}
		for w := range near(d) {
			set[w] = true
		}
		return float64(len(set) + 1)
	}
	n := float64(len(docs))
	avg := 0.0
	for _, d := range docs {
		avg += length(d) / n
	}
	var qs []string
	for _, w := range q.Words {
		if s := stems.Stem(strings.ToLower(w)); s != "" && !slices.Contains(qs, s) {
			qs = append(qs, s)
		}
	}
	score := make([]float64, len(docs))
	matched := make([]bool, len(docs))
	for _, w := range qs {
		f := make([]float64, len(docs))
		hold := 0
		for i, d := range docs {
			if text[key{d.ThreadID, d.Message.Seq}][w] {
				f[i]++
			}
			if near(d)[w] {
				f[i] += q.NearWeight
			}
			if f[i] > 0 {
				hold++
			}
		}
		idf := max(1e-6, math.Log((n-float64(hold)+0.5)/(float64(hold)+0.5)))
		for i, d := range docs {
			if f[i] > 0 {
				matched[i] = true
				score[i] += idf * f[i] * (k1 + 1) / (f[i] + k1*(1-b+b*length(d)/avg))
			}
		}
	}
	var hits []Hit
	for i, d := range docs {
		if !matched[i] || (q.ThreadID != "" && d.ThreadID != q.ThreadID) || d.ThreadID == q.ExcludeThreadID {
			continue
		}
		m := d.Message
		hits = append(hits, Hit{Row: d.Row, ThreadID: d.ThreadID, Message: m, Score: score[i]})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return int(b.Row - a.Row)
	})
	return hits[:min(len(hits), q.Limit)]
}

func TestSearchScoresAsDocumented(t *testing.T) {
	docs := corpus(40, 9, 7)
	// Added in pieces and out of order: a thread's later messages before
	// its earlier ones, as a load in no order and appends give them.
	x := New(nil)
	shuffled := slices.Clone(docs)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for len(shuffled) > 0 {
		n := min(len(shuffled), 17)
		x.Add(shuffled[:n]...)
		shuffled = shuffled[n:]
	}
	x.Add(docs[:30]...) // held already: left as they are
	if x.Len() != len(docs) {
		t.Fatalf("Len = %d, want %d", x.Len(), len(docs))
	}
	for _, q := range []Query{
		{Words: []string{"dog"}, Limit: 10, NearWeight: memory.NearWeight},
		{Words: []string{"running", "garden", "Lisbon"}, Limit: 12, NearWeight: memory.NearWeight},
		{Words: []string{"Dogs", "dog", "run"}, Limit: 400, NearWeight: memory.NearWeight},
		{Words: []string{"cello", "sister", "winter", "tired"}, Limit: 5, NearWeight: 0.5, ExcludeThreadID: "t3"},
		{Words: []string{"coffee", "rain"}, Limit: 8, NearWeight: memory.NearWeight, ThreadID: "t5"},
		{Words: []string{"the", "and"}, Limit: 8, NearWeight: memory.NearWeight},
		{Words: []string{"unheard"}, Limit: 8, NearWeight: memory.NearWeight},
	} {
		t.Run(strings.Join(q.Words, "+"), func(t *testing.T) {
			want := reference(docs, q)
			for range 2 { // the second search reuses the first's scratch
				got := x.Search(q)
				if len(got) != len(want) {
					t.Fatalf("%d hits, want %d", len(got), len(want))
				}
				for i := range got {
					g, w := got[i], want[i]
					if g.ThreadID != w.ThreadID || g.Message.Seq != w.Message.Seq || math.Abs(g.Score-w.Score) > 1e-9 {
						t.Fatalf("hit %d = %s/%d %.12f, want %s/%d %.12f", i, g.ThreadID, g.Message.Seq, g.Score, w.ThreadID, w.Message.Seq, w.Score)
					}
					if g.Message.ID != w.Message.ID || g.Message.Text != w.Message.Text || !g.Message.CreatedAt.Equal(w.Message.CreatedAt) {
						t.Fatalf("hit %d's message = %+v, want %+v", i, g.Message, w.Message)
					}
				}
			}
		})
	}
}

func TestSearchOrdersEqualsNewestFirst(t *testing.T) {
	x := New(nil)
	for i := range 3 {
		x.Add(Doc{Row: int64(10 - i), ThreadID: fmt.Sprint("t", i), Message: memory.Message{Seq: 1, Text: "the cello"}})
	}
	got := x.Search(Query{Words: []string{"cello"}, Limit: 3, NearWeight: memory.NearWeight})
	if len(got) != 3 || got[0].Row != 10 || got[1].Row != 9 || got[2].Row != 8 {
		t.Fatalf("got %+v, want rows 10, 9, 8", got)
	}
}

func TestStems(t *testing.T) {
	x := New(nil)
	x.Add(Doc{Row: 1, ThreadID: "t", Message: memory.Message{Seq: 1, Text: "I went running with the dogs."}})
	for _, tc := range []struct {
		word string
		hits int
	}{
		{"runs", 1}, {"RUN", 1}, {"dog", 1}, {"went", 1}, {"the", 0}, {"with", 0}, {"cat", 0},
	} {
		if got := x.Search(Query{Words: []string{tc.word}, Limit: 5, NearWeight: memory.NearWeight}); len(got) != tc.hits {
			t.Errorf("%q: %d hits, want %d", tc.word, len(got), tc.hits)
		}
	}
}

func TestAround(t *testing.T) {
	x := New(nil)
	x.Add(corpus(2, 5, 1)...)
	msgs, ok := x.Around("t1", 1, 2)
	if !ok || len(msgs) != 3 || msgs[0].Seq != 1 || msgs[2].Seq != 3 {
		t.Fatalf("Around(t1, 1, 2) = %+v %v, want seqs 1-3", msgs, ok)
	}
	if _, ok := x.Around("t9", 1, 1); ok {
		t.Fatal("Around of a thread the index does not hold: ok")
	}
}

// TestSearchKeepsNoModel: the index keeps what a search shows, not the
// messages' model messages or run.
func TestSearchKeepsNoModel(t *testing.T) {
	x := New(nil)
	x.Add(Doc{Row: 1, ThreadID: "t", Message: memory.Message{Seq: 1, ID: "a", Role: "assistant", Text: "cello",
		Model: []byte(`[{"role":"assistant"}]`), Pending: true, RunID: "run-1"}})
	got := x.Search(Query{Words: []string{"cello"}, Limit: 1, NearWeight: memory.NearWeight})
	if len(got) != 1 || got[0].Message.Model != nil || got[0].Message.Pending || got[0].Message.RunID != "" || got[0].Message.ID != "a" {
		t.Fatalf("got %+v", got)
	}
}

func BenchmarkSearch(b *testing.B) {
	x := New(nil)
	x.Add(corpus(100, 10, 5)...)
	q := Query{Words: []string{"dog", "running", "winter", "coffee"}, Limit: 12, NearWeight: memory.NearWeight}
	b.ReportAllocs()
	for b.Loop() {
		x.Search(q)
	}
}

func TestMessage(t *testing.T) {
	x := New(nil)
	x.Add(Doc{Row: 7, ThreadID: "t", ThreadTitle: "Music", Version: 1, Message: memory.Message{Seq: 2, ID: "m", Text: "cello", Model: []byte(`[]`)}})
	h, ok := x.Message("t", 2)
	if !ok || h.Row != 7 || h.ThreadTitle != "Music" || h.Message.ID != "m" || h.Message.Model != nil {
		t.Fatalf("Message(t, 2) = %+v, %v", h, ok)
	}
	for _, k := range []struct {
		thread string
		seq    int64
	}{{"t", 1}, {"t", 3}, {"u", 2}} {
		if _, ok := x.Message(k.thread, k.seq); ok {
			t.Errorf("Message(%s, %d): ok", k.thread, k.seq)
		}
	}
}
