package embed_test

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/embed"
	_ "github.com/companionhq/companion/internal/testkit"
)

func TestCosine(t *testing.T) {
	s := float32(1 / math.Sqrt2)
	tests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{"same", []float32{s, s}, []float32{s, s}, 1},
		{"orthogonal", []float32{1, 0}, []float32{0, 1}, 0},
		{"opposite", []float32{0, -1, 0}, []float32{0, 1, 0}, -1},
		{"half", []float32{1, 0}, []float32{0.5, float32(math.Sqrt(0.75))}, 0.5},
		{"other lengths", []float32{1, 0}, []float32{1, 0, 0}, 0},
		{"empty", nil, nil, 0},
		{"zero", []float32{0, 0, 0, 0, 0}, []float32{1, 0, 0, 0, 0}, 0},
		// 4 floats at a time and the rest: 7 = 4 + 3.
		{"seven", []float32{1, 2, 3, 4, 5, 6, 7}, []float32{7, 6, 5, 4, 3, 2, 1}, 7 + 12 + 15 + 16 + 15 + 12 + 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := embed.Cosine(tt.a, tt.b); math.Abs(float64(got-tt.want)) > 1e-6 {
				t.Errorf("Cosine = %v, want %v", got, tt.want)
			}
		})
	}
}

// naiveDot is the dot product a float at a time, for the benchmark.
func naiveDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// BenchmarkCosine compares Cosine with the plain loop on vectors of
// text-embedding-3-small's 1536 floats.
func BenchmarkCosine(b *testing.B) {
	f := embed.NewFake(1536)
	v := vectors(b, f, "the first vector of the benchmark", "another text altogether")
	var sink float32
	b.Run("Cosine", func(b *testing.B) {
		for b.Loop() {
			sink += embed.Cosine(v[0], v[1])
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			sink += naiveDot(v[0], v[1])
		}
	})
	_ = sink
}

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		cfg       embed.Config
		model     string // of the embedder, "" for none
		dims      int
		wantError string
	}{
		{name: "none", cfg: embed.Config{}},
		{name: "fake", cfg: embed.Config{Provider: "fake"}, model: "fake:256", dims: 256},
		{name: "fake of 64", cfg: embed.Config{Provider: "fake", Dimensions: 64}, model: "fake:64", dims: 64},
		{name: "fake of -1", cfg: embed.Config{Provider: "fake", Dimensions: -1}, wantError: "below 0"},
		{name: "openai", cfg: embed.Config{Provider: "openai", Model: "text-embedding-3-small", APIKey: "sk-x"},
			model: "openai:text-embedding-3-small:1536", dims: 1536},
		{name: "openai shortened", cfg: embed.Config{Provider: "openai", Model: "text-embedding-3-large", APIKey: "sk-x", Dimensions: 256},
			model: "openai:text-embedding-3-large:256", dims: 256},
		{name: "openai-compatible without a key", cfg: embed.Config{Provider: "openai", Model: "nomic-embed-text", BaseURL: "http://localhost:11434/v1"},
			model: "openai:nomic-embed-text:0", dims: 0},
		{name: "openai without a model", cfg: embed.Config{Provider: "openai", APIKey: "sk-x"}, wantError: "no model name"},
		{name: "openai without a key", cfg: embed.Config{Provider: "openai", Model: "text-embedding-3-small"}, wantError: "no API key"},
		{name: "openai with a bad base URL", cfg: embed.Config{Provider: "openai", Model: "m", BaseURL: "localhost:11434"}, wantError: "not an http or https URL"},
		{name: "cohere", cfg: embed.Config{Provider: "cohere", Model: "embed-v4.0", APIKey: "co-x"}, model: "cohere:embed-v4.0:1536", dims: 1536},
		{name: "cohere light", cfg: embed.Config{Provider: "cohere", Model: "embed-english-light-v3.0", APIKey: "co-x"},
			model: "cohere:embed-english-light-v3.0:384", dims: 384},
		{name: "cohere without a key", cfg: embed.Config{Provider: "cohere", Model: "embed-v4.0"}, wantError: "no API key"},
		{name: "cohere without a model", cfg: embed.Config{Provider: "cohere", APIKey: "co-x"}, wantError: "no model name"},
		{name: "cohere with prefixes", cfg: embed.Config{Provider: "cohere", Model: "embed-v4.0", APIKey: "co-x", QueryPrefix: "q: "}, wantError: "prefixes"},
		{name: "unknown", cfg: embed.Config{Provider: "voyage", Model: "m"}, wantError: `unknown provider "voyage"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := embed.New(tt.cfg)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("New: %v, want an error with %q", err, tt.wantError)
				}
				if e != nil {
					t.Errorf("New returned %v beside its error", e)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.model == "" {
				if e != nil {
					t.Fatalf("New = %v, want nil", e)
				}
				return
			}
			if e.Model() != tt.model || e.Dimensions() != tt.dims || e.MaxBatch() <= 0 {
				t.Errorf("Model, Dimensions, MaxBatch = %q, %d, %d, want %q, %d, > 0", e.Model(), e.Dimensions(), e.MaxBatch(), tt.model, tt.dims)
			}
		})
	}
}

func TestError(t *testing.T) {
	cause := errors.New("the provider said: slow down")
	tests := []struct {
		err  *embed.Error
		want string
	}{
		{&embed.Error{Provider: "openai", Status: http.StatusTooManyRequests, Retryable: true, RetryAfter: time.Second, Err: cause},
			"embed: openai: the provider said: slow down"},
		{&embed.Error{Provider: "cohere", Status: http.StatusBadRequest}, "embed: cohere: HTTP 400"},
		{&embed.Error{Provider: "fake"}, "embed: fake: failed"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	var err error = fmt.Errorf("indexing: %w", tests[0].err)
	var e *embed.Error
	if !errors.As(err, &e) || !e.Retryable || !errors.Is(err, cause) {
		t.Errorf("errors.As and errors.Is do not reach the *Error and its cause through %v", err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[embed.Kind]string{embed.Document: "document", embed.Query: "query", embed.Kind(7): "Kind(7)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}
