package embed_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/companionhq/companion/internal/embed"
)

// vectors embeds texts as documents with e, failing the test on an error.
func vectors(t testing.TB, e embed.Embedder, texts ...string) [][]float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), texts, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(v), len(texts))
	}
	return v
}

// norm is the L2 norm of v.
func norm(v []float32) float64 {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	return math.Sqrt(s)
}

func TestFakeVectors(t *testing.T) {
	f := embed.NewFake(0)
	if f.Dimensions() != 256 || f.Model() != "fake:256" {
		t.Fatalf("Dimensions, Model = %d, %q, want 256, fake:256", f.Dimensions(), f.Model())
	}
	cases := []struct {
		text string
		zero bool // no letter or digit: nothing to embed
	}{
		{"My dog loves the park.", false},
		{"", true},
		{"  \n", true},
		{"?!", true},
		{"the", false}, // common words count when there is nothing else
		{"Ünïcode wörds, 東京 and digits 42", false},
	}
	var texts []string
	for _, c := range cases {
		texts = append(texts, c.text)
	}
	v := vectors(t, f, texts...)
	for i, c := range cases {
		if len(v[i]) != 256 {
			t.Fatalf("%q: %d floats", c.text, len(v[i]))
		}
		want := 1.0
		if c.zero {
			want = 0
		}
		if n := norm(v[i]); math.Abs(n-want) > 1e-5 {
			t.Errorf("%q: norm %v, want %v", c.text, n, want)
		}
	}
	// Deterministic: again, from another Fake, and as a query.
	again, err := embed.NewFake(256).Embed(context.Background(), texts, embed.Query)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		for j := range v[i] {
			if v[i][j] != again[i][j] {
				t.Fatalf("%q: float %d is %v, then %v", texts[i], j, v[i][j], again[i][j])
			}
		}
	}
}

// TestFakeSimilarity: texts that share words, or their forms, are closer
// than texts that do not.
func TestFakeSimilarity(t *testing.T) {
	f := embed.NewFake(0)
	tests := []struct {
		query, related, unrelated string
	}{
		{"dogs", "dog", "invoice"},
		{"my dog loves the park", "Dogs love parks!", "The quarterly tax invoice is due on Friday"},
		{"where did I park the car?", "I parked my car near the station", "We talked about her sister's wedding"},
		{"running shoes", "I bought new shoes for running", "The meeting was moved to Tuesday"},
		{"allergic to peanuts", "Remember that Sam is allergic to peanuts", "my favourite colour is green"},
	}
	for _, tt := range tests {
		v := vectors(t, f, tt.query, tt.related, tt.unrelated)
		rel, unrel := embed.Cosine(v[0], v[1]), embed.Cosine(v[0], v[2])
		t.Logf("%q: %.3f to %q, %.3f to %q", tt.query, rel, tt.related, unrel, tt.unrelated)
		if rel < 0.4 || unrel > 0.2 || rel-unrel < 0.3 {
			t.Errorf("%q: cosine %.3f to %q (want > 0.4), %.3f to %q (want < 0.2 and 0.3 below)", tt.query, rel, tt.related, unrel, tt.unrelated)
		}
	}
}

func TestFakeCountsAndFailures(t *testing.T) {
	ctx := context.Background()
	f := embed.NewFake(16)
	f.FailNext(2, true)
	for i := range 2 {
		_, err := f.Embed(ctx, []string{"a text"}, embed.Document)
		var e *embed.Error
		if !errors.As(err, &e) || !e.Retryable || e.Status != 503 || e.Provider != "fake" || !errors.Is(err, embed.ErrInjected) {
			t.Fatalf("call %d: %v, want a retryable *Error of status 503 wrapping ErrInjected", i, err)
		}
	}
	vectors(t, f, "a text", "another")
	f.FailNext(1, false)
	_, err := f.Embed(ctx, []string{"a text"}, embed.Document)
	var e *embed.Error
	if !errors.As(err, &e) || e.Retryable || e.Status != 400 {
		t.Fatalf("%v, want a non-retryable *Error of status 400", err)
	}
	vectors(t, f, "a text")
	if f.Calls() != 5 || f.Texts() != 3 || f.Count("a text") != 2 || f.Count("another") != 1 || f.Count("never") != 0 {
		t.Errorf("Calls, Texts, Count = %d, %d, %d/%d/%d, want 5, 3, 2/1/0",
			f.Calls(), f.Texts(), f.Count("a text"), f.Count("another"), f.Count("never"))
	}
}

func TestFakeHook(t *testing.T) {
	f := embed.NewFake(16)
	poison := errors.New("poisoned")
	f.SetHook(func(ctx context.Context, texts []string, kind embed.Kind) error {
		for _, t := range texts {
			switch t {
			case "poison":
				return poison
			case "busy":
				return &embed.Error{Provider: "fake", Status: 429, Retryable: true}
			case "block":
				<-ctx.Done()
				return ctx.Err()
			}
		}
		return nil
	})
	_, err := f.Embed(context.Background(), []string{"fine", "poison"}, embed.Document)
	var e *embed.Error
	if !errors.As(err, &e) || e.Retryable || !errors.Is(err, poison) {
		t.Errorf("poison: %v, want a non-retryable *Error wrapping the hook's error", err)
	}
	_, err = f.Embed(context.Background(), []string{"busy"}, embed.Query)
	if !errors.As(err, &e) || !e.Retryable || e.Status != 429 {
		t.Errorf("busy: %v, want the hook's *Error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err = f.Embed(ctx, []string{"block"}, embed.Document); !errors.Is(err, context.Canceled) {
		t.Errorf("block: %v, want the context's error", err)
	}
	if _, err = f.Embed(ctx, []string{"fine"}, embed.Document); !errors.As(err, &e) || e.Retryable || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v, want a non-retryable *Error wrapping context.Canceled", err)
	}
	f.SetHook(nil)
	vectors(t, f, "poison")
	if f.Texts() != 1 || f.Count("poison") != 1 {
		t.Errorf("Texts, Count = %d, %d, want 1, 1: only the call that succeeded counts", f.Texts(), f.Count("poison"))
	}
}

func TestFakeBatch(t *testing.T) {
	f := embed.NewFake(8)
	if f.MaxBatch() != embed.DefaultFakeMaxBatch {
		t.Fatalf("MaxBatch = %d", f.MaxBatch())
	}
	f.SetMaxBatch(2)
	vectors(t, f, "one", "two")
	_, err := f.Embed(context.Background(), []string{"one", "two", "three"}, embed.Document)
	var e *embed.Error
	if !errors.As(err, &e) || e.Retryable {
		t.Errorf("3 texts in a batch of 2: %v, want a non-retryable *Error", err)
	}
	if v := vectors(t, f); len(v) != 0 {
		t.Errorf("no texts: %d vectors", len(v))
	}
}

// TestFakeConcurrent is for the race detector.
func TestFakeConcurrent(t *testing.T) {
	f := embed.NewFake(32)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				vectors(t, f, "one", "two", "three")
			}
		})
	}
	wg.Go(func() { f.FailNext(0, false); f.SetMaxBatch(10); _ = f.MaxBatch() })
	wg.Wait()
	if f.Texts() != 8*20*3 || f.Count("two") != 8*20 {
		t.Errorf("Texts, Count = %d, %d, want %d, %d", f.Texts(), f.Count("two"), 8*20*3, 8*20)
	}
}

func TestStem(t *testing.T) {
	tests := map[string]string{
		"dogs": "dog", "dog": "dog", "puppies": "puppy", "classes": "class", "class": "class",
		"loves": "lov", "loved": "lov", "loving": "lov", "love": "lov",
		"running": "run", "runs": "run", "walked": "walk", "walking": "walk", "stopped": "stop",
		"boxes": "box", "bus": "bus", "analysis": "analysis", "string": "string", "need": "need", "bring": "bring",
		"42": "42", "東京": "東京", "cafés": "café",
	}
	for word, want := range tests {
		if got := embed.Stem(word); got != want {
			t.Errorf("stem(%q) = %q, want %q", word, got, want)
		}
	}
}
