package memorytest

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/memory"
)

// runVectors runs the cases of memory.Vectors.
func runVectors(t *testing.T, h Harness) {
	t.Run("UnembeddedListsWhatHasNoVector", func(t *testing.T) { t.Parallel(); testUnembedded(t, h) })
	t.Run("SearchVectorsFindsTheNearest", func(t *testing.T) { t.Parallel(); testSearchVectors(t, h) })
	t.Run("VectorsGoWithTheirMessages", func(t *testing.T) { t.Parallel(); testVectorsDeleted(t, h) })
	t.Run("DropVectorsOfOtherModels", func(t *testing.T) { t.Parallel(); testDropVectors(t, h) })
}

// unit is v scaled to length 1.
func unit(v ...float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(float64(f) / math.Sqrt(n))
	}
	return out
}

func unembedded(t *testing.T, s memory.Store, model string, after int64, limit int) []memory.Unembedded {
	t.Helper()
	us, err := s.Unembedded(context.Background(), model, after, limit)
	if err != nil {
		t.Fatalf("listing what is to embed: %v", err)
	}
	return us
}

func embedIDs(us []memory.Unembedded) string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.ID
	}
	return strings.Join(out, " ")
}

// vectorOf is the vector of an Unembedded, as an indexer would store it.
func vectorOf(u memory.Unembedded, v []float32) memory.MessageVector {
	return memory.MessageVector{ThreadID: u.ThreadID, Seq: u.Seq, ID: u.ID, Vec: v}
}

func testUnembedded(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	seedThread(t, s, "a", "alice", "", "first", "", "third")
	seedThread(t, s, "b", "bob", "", "fourth")
	// In the order stored; the message without text is not embedded.
	all := unembedded(t, s, "m1", 0, 10)
	if got := embedIDs(all); got != "a-1 a-3 b-1" {
		t.Fatalf("to embed: %q, want a-1 a-3 b-1", got)
	}
	if all[0].ResourceID != "alice" || all[0].Text != "first" || all[0].ThreadID != "a" || all[0].Seq != 1 || all[2].ResourceID != "bob" {
		t.Fatalf("to embed: %+v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Pos <= all[i-1].Pos {
			t.Fatalf("positions do not grow: %+v", all)
		}
	}
	// Paged by position and limit.
	if got := embedIDs(unembedded(t, s, "m1", all[0].Pos, 1)); got != "a-3" {
		t.Fatalf("after the first, one: %q", got)
	}
	if err := s.PutVectors(ctx, "m1", []memory.MessageVector{vectorOf(all[0], unit(1, 0)), vectorOf(all[2], nil)}); err != nil {
		t.Fatal(err)
	}
	// A message with a vector (or marked as not embeddable: empty) is not
	// listed again for that model; for another it is.
	if got := embedIDs(unembedded(t, s, "m1", 0, 10)); got != "a-3" {
		t.Fatalf("after storing vectors: %q, want a-3", got)
	}
	if got := embedIDs(unembedded(t, s, "m2", 0, 10)); got != "a-1 a-3 b-1" {
		t.Fatalf("for another model: %q", got)
	}
	// A vector whose message is no longer the one embedded is not stored.
	stale := vectorOf(all[1], unit(0, 1))
	stale.ID = "not-a-3"
	if err := s.PutVectors(ctx, "m1", []memory.MessageVector{stale}); err != nil {
		t.Fatal(err)
	}
	if got := embedIDs(unembedded(t, s, "m1", 0, 10)); got != "a-3" {
		t.Fatalf("after a stale vector: %q, want a-3", got)
	}
}

// putAll embeds every message of s with model, its vector given by vec.
func putAll(t *testing.T, s memory.Store, model string, vec func(text string) []float32) {
	t.Helper()
	var vs []memory.MessageVector
	for _, u := range unembedded(t, s, model, 0, 1000) {
		vs = append(vs, vectorOf(u, vec(u.Text)))
	}
	if err := s.PutVectors(context.Background(), model, vs); err != nil {
		t.Fatal(err)
	}
}

// byTopic is a vector for a text by the topic it names.
func byTopic(text string) []float32 {
	switch {
	case strings.Contains(text, "dog"), strings.Contains(text, "puppy"):
		return unit(1, 0.1, 0)
	case strings.Contains(text, "rain"), strings.Contains(text, "storm"):
		return unit(0, 1, 0.1)
	}
	return unit(0.1, 0, 1)
}

func vsearch(t *testing.T, s memory.Store, q memory.SearchQuery, model string, v []float32) []memory.SearchResult {
	t.Helper()
	rs, err := s.SearchVectors(context.Background(), q, model, v)
	if err != nil {
		t.Fatalf("searching vectors %+v: %v", q, err)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].Score > rs[i-1].Score {
			t.Fatalf("result %d scores %v, more than the one before it (%v)", i, rs[i].Score, rs[i-1].Score)
		}
	}
	return rs
}

func testSearchVectors(t *testing.T, h Harness) {
	s := h.open(t)
	seedThread(t, s, "pets", "alice", "Rex", "My puppy chewed a shoe.", "Puppies do that.", "The dog sleeps now.")
	seedThread(t, s, "weather", "alice", "", "A storm is coming.", "Stay in.", "The rain stopped.")
	seedThread(t, s, "bobs", "bob", "", "My dog barks.")
	putAll(t, s, "m", byTopic)
	q := memory.SearchQuery{ResourceID: "alice", Limit: 2}
	rs := vsearch(t, s, q, "m", unit(1, 0, 0))
	// The two about dogs, the newest first among equals; with their thread
	// and title; not bob's.
	if got := found(rs); got != "pets-3 pets-1" {
		t.Fatalf("nearest to dogs: %q, want pets-3 pets-1", got)
	}
	if rs[0].ThreadID != "pets" || rs[0].ThreadTitle != "Rex" || rs[0].Message.Text != "The dog sleeps now." || rs[0].Score < 0.99 {
		t.Fatalf("first result: %+v", rs[0])
	}
	q.Limit = 10
	if got := found(vsearch(t, s, q, "m", unit(0, 1, 0))); !strings.HasPrefix(got, "weather-3 weather-1 ") {
		t.Fatalf("nearest to rain: %q", got)
	}
	// One thread, or all but one; with context.
	q.ThreadID = "weather"
	if got := found(vsearch(t, s, q, "m", unit(1, 0, 0))); got != "weather-2 weather-3 weather-1" && got != "weather-2 weather-1 weather-3" {
		t.Fatalf("in thread weather: %q", got)
	}
	q.ThreadID, q.ExcludeThreadID, q.Context, q.Limit = "", "pets", 1, 1
	rs = vsearch(t, s, q, "m", unit(0, 1, 0))
	if got := found(rs); got != "weather-3" || len(rs[0].Before) != 1 || rs[0].Before[0].ID != "weather-2" || len(rs[0].After) != 0 {
		t.Fatalf("without pets, with context: %q %+v", got, rs)
	}
	// Another model's vectors, or a query of another size, find nothing.
	if rs := vsearch(t, s, memory.SearchQuery{ResourceID: "alice", Limit: 5}, "other", unit(1, 0, 0)); len(rs) != 0 {
		t.Fatalf("another model: %s", found(rs))
	}
	if rs := vsearch(t, s, memory.SearchQuery{ResourceID: "alice", Limit: 5}, "m", unit(1, 0)); len(rs) != 0 {
		t.Fatalf("another size: %s", found(rs))
	}
}

func testVectorsDeleted(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	for _, owner := range []string{"alice", "bob"} {
		seedThread(t, s, owner+"-1", owner, "", "My dog barks.")
		seedThread(t, s, owner+"-2", owner, "", "The dog is old.")
	}
	putAll(t, s, "m", byTopic)
	q := memory.SearchQuery{ResourceID: "alice", Limit: 10}
	turn := lock(t, s, "alice-1")
	if err := turn.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	turn.Unlock()
	if got := found(vsearch(t, s, q, "m", unit(1, 0, 0))); got != "alice-2-1" {
		t.Fatalf("after deleting alice-1: %q", got)
	}
	if _, err := s.EraseResource(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if rs := vsearch(t, s, q, "m", unit(1, 0, 0)); len(rs) != 0 {
		t.Fatalf("after erasing alice: %s", found(rs))
	}
	// A thread of the same id and the same message id, stored again, has
	// no vector: it is to embed.
	seedThread(t, s, "alice-2", "alice", "", "The dog is old.")
	if got := embedIDs(unembedded(t, s, "m", 0, 10)); got != "alice-2-1" {
		t.Fatalf("after storing alice-2 again: %q", got)
	}
	if got := found(vsearch(t, s, memory.SearchQuery{ResourceID: "bob", Limit: 10}, "m", unit(1, 0, 0))); got != "bob-2-1 bob-1-1" {
		t.Fatalf("bob's: %q", got)
	}
}

func testDropVectors(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	seedThread(t, s, "a", "alice", "", "My dog barks.", "Good dog.")
	putAll(t, s, "old", byTopic)
	n, err := s.DropVectors(ctx, "new")
	if err != nil || n != 2 {
		t.Fatalf("dropping: %d, %v; want 2", n, err)
	}
	if got := embedIDs(unembedded(t, s, "old", 0, 10)); got != "a-1 a-2" {
		t.Fatalf("after the drop, the old model's are to embed again: %q", got)
	}
	putAll(t, s, "new", byTopic)
	if n, err := s.DropVectors(ctx, "new"); err != nil || n != 0 {
		t.Fatalf("dropping again: %d, %v", n, err)
	}
	if rs := vsearch(t, s, memory.SearchQuery{ResourceID: "alice", Limit: 5}, "new", unit(1, 0, 0)); len(rs) != 2 {
		t.Fatalf("the new model's: %s", found(rs))
	}
}
