package embedindex_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/embed"
	"github.com/companionhq/companion/internal/embedindex"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/sqlite"
)

var base = time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)

func open(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "companion.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// store adds texts to thread id of owner, by import.
func store(t *testing.T, s memory.Store, id, owner string, texts ...string) {
	t.Helper()
	th := memory.ImportThread{Thread: memory.Thread{ID: id, ResourceID: owner, Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}}
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		th.Messages = append(th.Messages, memory.Message{ID: fmt.Sprintf("%s-%d-%d", id, time.Now().UnixNano(), i), Role: role, Text: text,
			Model: json.RawMessage(`[]`), CreatedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	if _, err := s.Import(context.Background(), []memory.ImportThread{th}, func(memory.Thread, []memory.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func newIndexer(t *testing.T, s memory.Store, e embedindex.Embedder, obs embedindex.Observer) *embedindex.Indexer {
	t.Helper()
	ix, err := embedindex.New(embedindex.Config{Store: s, Embedder: e, Batch: 4, Interval: 20 * time.Millisecond, Rescan: time.Hour, MaxBackoff: 50 * time.Millisecond, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// nearest is the text of the message of owner nearest to text's vector,
// as the fake e makes them (a fake of its own embeds the query, so that e
// counts what the indexer asks alone).
func nearest(t *testing.T, s memory.Store, e embed.Embedder, owner, text string) string {
	t.Helper()
	ctx := context.Background()
	q, err := embed.NewFake(e.Dimensions()).Embed(ctx, []string{text}, embed.Query)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.SearchVectors(ctx, memory.SearchQuery{ResourceID: owner, Limit: 1}, e.Model(), q[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		return ""
	}
	return rs[0].Message.Text
}

func TestFlushEmbedsEachMessageOnce(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	fake := embed.NewFake(64)
	store(t, s, "a", "alice", "My dog Rex loves the beach.", "", "I started cello lessons.", "Cello is hard.", "We moved to Lisbon.", "Lisbon is sunny.")
	store(t, s, "b", "bob", "Bob's garden has tomatoes.")
	ix := newIndexer(t, s, fake, nil)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Six messages with text, in batches of four.
	if fake.Texts() != 6 || fake.Calls() != 2 {
		t.Fatalf("embedded %d texts in %d calls, want 6 in 2", fake.Texts(), fake.Calls())
	}
	if got := nearest(t, s, fake, "alice", "my dogs"); got != "My dog Rex loves the beach." {
		t.Fatalf("nearest to dogs: %q", got)
	}
	if got := nearest(t, s, fake, "bob", "tomato garden"); got != "Bob's garden has tomatoes." {
		t.Fatalf("bob's nearest: %q", got)
	}
	// Nothing is embedded twice.
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	store(t, s, "a", "alice", "Rex chewed a shoe.")
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if fake.Texts() != 7 {
		t.Fatalf("embedded %d texts in all, want 7", fake.Texts())
	}
}

type counts struct {
	mu                      sync.Mutex
	embedded, retried, refd int
}

func (c *counts) Embedded(n int, _ time.Duration) { c.mu.Lock(); c.embedded += n; c.mu.Unlock() }
func (c *counts) EmbedFailed(retryable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if retryable {
		c.retried++
	} else {
		c.refd++
	}
}
func (c *counts) get() (int, int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.embedded, c.retried, c.refd
}

// run runs ix until the test ends.
func run(t *testing.T, ix *embedindex.Indexer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ix.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// eventually waits for cond, failing the test after a few seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunRetriesAndWakes(t *testing.T) {
	s := open(t)
	fake := embed.NewFake(64)
	var c counts
	ix := newIndexer(t, s, fake, &c)
	store(t, s, "a", "alice", "My dog Rex loves the beach.", "He does.")
	// Two failures that pass: the same messages are tried again after a
	// backoff, and embedded once in the end.
	fake.FailNext(2, true)
	run(t, ix)
	eventually(t, "the first messages embedded after two failures", func() bool { e, _, _ := c.get(); return e == 2 })
	if _, retried, refused := c.get(); retried != 2 || refused != 0 {
		t.Fatalf("retried %d, refused %d; want 2, 0", retried, refused)
	}
	// A message stored later is embedded once the indexer is woken (or at
	// its interval).
	store(t, s, "b", "alice", "I bought a kayak.")
	ix.Wake()
	eventually(t, "the new message embedded", func() bool { return nearest(t, s, fake, "alice", "kayak") == "I bought a kayak." })
	if e, _, _ := c.get(); e != 3 || fake.Texts() != 3 {
		t.Fatalf("embedded %d (%d texts asked), want 3", e, fake.Texts())
	}
}

func TestRefusedTextsAreLeftOut(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	fake := embed.NewFake(64)
	fake.SetHook(func(_ context.Context, texts []string, _ embed.Kind) error {
		for _, text := range texts {
			if strings.Contains(text, "refuse me") {
				return &embed.Error{Provider: "fake", Status: 400, Err: errors.New("input refused")}
			}
		}
		return nil
	})
	var c counts
	ix := newIndexer(t, s, fake, &c)
	store(t, s, "a", "alice", "My dog Rex.", "refuse me please", "A cello.", "The beach.")
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The batch of four fails, its halves are tried, then the half that
	// fails is tried one by one: the refused message is marked, the others
	// are embedded.
	if e, retried, refused := c.get(); e != 3 || retried != 0 || refused != 3 {
		t.Fatalf("embedded %d, retried %d, refused %d calls; want 3, 0, 3", e, retried, refused)
	}
	if got := nearest(t, s, fake, "alice", "refuse me please"); got == "refuse me please" {
		t.Fatal("the refused message was found by vector")
	}
	left, err := s.Unembedded(ctx, fake.Model(), 0, 10)
	if err != nil || len(left) != 0 {
		t.Fatalf("still to embed: %+v, %v", left, err)
	}
}

func TestAnotherModelEmbedsAgain(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	store(t, s, "a", "alice", "My dog Rex.", "Good dog.")
	small := embed.NewFake(32)
	if err := newIndexer(t, s, small, nil).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	big := embed.NewFake(64)
	run(t, newIndexer(t, s, big, nil))
	eventually(t, "the messages embedded by the new model", func() bool { return nearest(t, s, big, "alice", "dog Rex") == "My dog Rex." })
	// The old model's vectors are gone.
	if got := nearest(t, s, small, "alice", "dog Rex"); got != "" {
		t.Fatalf("the old model's vectors still find %q", got)
	}
}

func TestNewChecksItsConfig(t *testing.T) {
	s := open(t)
	for _, cfg := range []embedindex.Config{
		{Embedder: embed.NewFake(8)},
		{Store: s},
		{Store: s, Embedder: embed.NewFake(8), Batch: -1},
	} {
		if _, err := embedindex.New(cfg); err == nil {
			t.Errorf("New(%+v) did not fail", cfg)
		}
	}
}

// TestLearnsTheDimensionsFirst: a model whose vectors' length is learnt
// from its first answer is asked once before anything is compared with
// what is stored, so its messages are embedded once, under its full name.
func TestLearnsTheDimensionsFirst(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct{ Input []string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		var data []map[string]any
		for i := range req.Input {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": []float32{1, float32(i), 0}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(srv.Close)
	e, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "local"})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t)
	store(t, s, "a", "alice", "My dog Rex.", "Good dog.")
	var c counts
	run(t, newIndexer(t, s, e, &c))
	eventually(t, "the messages embedded", func() bool { n, _, _ := c.get(); return n == 2 })
	if e.Model() != "openai:local:3" || calls.Load() != 2 {
		t.Fatalf("model %q after %d calls; want openai:local:3 after 2 (the probe, the batch)", e.Model(), calls.Load())
	}
	if left, err := s.Unembedded(context.Background(), e.Model(), 0, 10); err != nil || len(left) != 0 {
		t.Fatalf("still to embed: %+v, %v", left, err)
	}
}
