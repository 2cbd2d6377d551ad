// Package embed turns texts into vectors for the recall index: an Embedder
// embeds a batch of texts, as stored messages (Document) or as a search's
// text (Query), into L2-normalised float32 vectors, so that the dot product
// of two vectors (Cosine) is their cosine similarity.
//
// There are three embedders:
//
//   - OpenAI speaks the embeddings API of OpenAI and of the servers that
//     copy it (Ollama, vLLM, llama.cpp's server and others) with net/http.
//   - Cohere speaks Cohere's v2 embed API through cohere-go.
//   - Fake hashes words and character trigrams into a vector, offline and
//     deterministically, for the tests and the demo.
//
// New opens the one a Config names. Every embedder gives an empty text (one
// of nothing but white space) a zero vector without asking a provider: the
// providers refuse empty inputs, and a zero vector matches nothing. Every
// error Embed returns is an *Error, which says whether trying again may
// help; the embedders retry nothing themselves, so that the caller's
// backoff is the only one.
//
// Model names the model and its dimensions as stored next to each vector:
// vectors of two Models are not comparable, and a change of Model means the
// stored vectors must be embedded again. Encode and Decode turn a vector
// into the bytes of a BLOB or bytea and back.
package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// Kind says what a text is embedded as: some providers embed a stored
// document and a search query differently.
type Kind int

const (
	// Document is a message, as stored.
	Document Kind = iota
	// Query is a search's text.
	Query
)

func (k Kind) String() string {
	switch k {
	case Document:
		return "document"
	case Query:
		return "query"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Embedder turns texts into vectors. Safe for concurrent use.
type Embedder interface {
	// Embed returns one vector per text, in order, each of Dimensions()
	// floats, L2-normalised (so a dot product is the cosine). An empty
	// text gets a zero vector.
	Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error)
	// Model names the model and its dimensions as stored next to a vector
	// (e.g. "openai:text-embedding-3-small:1536", "fake:256"): vectors of
	// another Model are not comparable.
	Model() string
	// Dimensions is the length of the vectors; 0 while an embedder that
	// learns it from its first answer has not had one.
	Dimensions() int
	// MaxBatch is how many texts one Embed call may take.
	MaxBatch() int
}

// Error is a failed call: Retryable tells a caller (a background indexer
// with backoff) whether to try again (429, 5xx, network errors, timeouts)
// or give up on the texts (400 etc.); RetryAfter is the provider's hint, 0
// when none.
type Error struct {
	// Provider is the embedder's provider: openai, cohere or fake.
	Provider string
	// Status is the provider's HTTP status, 0 when it gave none.
	Status int
	// Retryable marks a failure that the same texts may not meet again.
	Retryable bool
	// RetryAfter is how long the provider asked us to wait.
	RetryAfter time.Duration
	// Err is the cause. It never holds the API key.
	Err error
}

func (e *Error) Error() string {
	switch {
	case e.Err != nil:
		return "embed: " + e.Provider + ": " + e.Err.Error()
	case e.Status != 0:
		return fmt.Sprintf("embed: %s: HTTP %d", e.Provider, e.Status)
	}
	return "embed: " + e.Provider + ": failed"
}

func (e *Error) Unwrap() error { return e.Err }

// Provider names, as Config.Provider takes them.
const (
	ProviderFake   = "fake"
	ProviderOpenAI = "openai"
	ProviderCohere = "cohere"
)

// Config names an embedder and configures it, for New.
type Config struct {
	// Provider is "" (no embedder), ProviderFake, ProviderOpenAI (any
	// OpenAI-compatible server) or ProviderCohere.
	Provider string
	// Model is the provider's model name. Required but for the fake.
	Model string
	// APIKey is the provider's key: required for Cohere and for OpenAI's
	// own API, optional for other OpenAI-compatible servers.
	APIKey string
	// BaseURL replaces the provider's default address (see OpenAIConfig
	// and CohereConfig).
	BaseURL string
	// Dimensions asks for vectors of that length (0: the model's default,
	// see OpenAIConfig and CohereConfig); for the fake, 0 is 256.
	Dimensions int
	// MaxBatch bounds the texts of one call below the provider's own limit
	// (0: the embedder's default). OpenAI only.
	MaxBatch int
	// DocumentPrefix and QueryPrefix are put before each text of that
	// Kind, for the models of OpenAI-compatible servers that want them
	// (nomic-embed-text: "search_document: " and "search_query: "). OpenAI
	// only: Cohere is told the kind itself.
	DocumentPrefix, QueryPrefix string
	// HTTPClient sends the requests; nil uses one with DefaultTimeout.
	HTTPClient *http.Client
}

// New opens the embedder cfg names: nil, nil when cfg.Provider is "".
func New(cfg Config) (Embedder, error) {
	switch cfg.Provider {
	case "":
		return nil, nil
	case ProviderFake:
		if cfg.Dimensions < 0 {
			return nil, fmt.Errorf("embed: fake: dimensions %d below 0", cfg.Dimensions)
		}
		return NewFake(cfg.Dimensions), nil
	case ProviderOpenAI:
		o, err := NewOpenAI(OpenAIConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, Dimensions: cfg.Dimensions,
			MaxBatch: cfg.MaxBatch, DocumentPrefix: cfg.DocumentPrefix, QueryPrefix: cfg.QueryPrefix, HTTPClient: cfg.HTTPClient})
		if err != nil {
			return nil, err // not a nil *OpenAI in a non-nil Embedder
		}
		return o, nil
	case ProviderCohere:
		if cfg.DocumentPrefix != "" || cfg.QueryPrefix != "" {
			return nil, errors.New("embed: cohere: prefixes are for OpenAI-compatible servers: Cohere is told whether a text is a document or a query")
		}
		if cfg.MaxBatch != 0 {
			return nil, errors.New("embed: cohere: the batch size is Cohere's own (96) and cannot be set")
		}
		c, err := NewCohere(CohereConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, Dimensions: cfg.Dimensions, HTTPClient: cfg.HTTPClient})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("embed: unknown provider %q: use %q, %q or %q", cfg.Provider, ProviderFake, ProviderOpenAI, ProviderCohere)
}

// DefaultTimeout bounds a call of an embedder made without an HTTPClient:
// a batch takes seconds; a call that takes minutes is better retried.
const DefaultTimeout = time.Minute

// Cosine is the cosine similarity of two L2-normalised vectors: their dot
// product. Vectors of different lengths come from different models and
// are not comparable: their cosine is 0.
func Cosine(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	// Four sums break the chain of dependent additions: on 1536 floats
	// that roughly halves the time of one sum (BenchmarkCosine).
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// normalise scales v to length 1 in place; a zero vector stays zero.
func normalise(v []float32) {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i, f := range v {
		v[i] = float32(float64(f) * inv)
	}
}

// ctxError is the *Error of a call whose context ended with err:
// cancelled, it is not retried; out of time, it may be.
func ctxError(provider string, err error) *Error {
	return &Error{Provider: provider, Retryable: errors.Is(err, context.DeadlineExceeded), Err: err}
}
