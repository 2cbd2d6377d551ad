package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/embed"
)

// cohereBody is a v2 embed request as sent.
type cohereBody struct {
	Texts           []string `json:"texts"`
	Model           string   `json:"model"`
	InputType       string   `json:"input_type"`
	EmbeddingTypes  []string `json:"embedding_types"`
	OutputDimension *int     `json:"output_dimension"`
}

// cohereAnswer answers each text with its rawVector of dims floats, in
// the shape of Cohere's v2 embed API.
func cohereAnswer(dims int) func(w http.ResponseWriter, r *http.Request, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req cohereBody
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		floats := [][]float32{}
		for _, text := range req.Texts {
			floats = append(floats, rawVector(text, dims))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id":            "da6e531f-54c6-4a73-bf92-f60566d8d753",
			"embeddings":    map[string]any{"float": floats},
			"texts":         req.Texts,
			"meta":          map[string]any{"api_version": map[string]any{"version": "2"}, "billed_units": map[string]int{"input_tokens": 4}},
			"response_type": "embeddings_by_type",
		})
	}
}

const cohereKey = "co-test-0123456789"

func newCohere(t *testing.T, cfg embed.CohereConfig) *embed.Cohere {
	t.Helper()
	c, err := embed.NewCohere(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCohere(t *testing.T) {
	tests := []struct {
		name      string
		kind      embed.Kind
		cfg       embed.CohereConfig
		dims      int // of the answer
		inputType string
		wantModel string
	}{
		{name: "document", kind: embed.Document, cfg: embed.CohereConfig{Model: "embed-english-v3.0"}, dims: 1024,
			inputType: "search_document", wantModel: "cohere:embed-english-v3.0:1024"},
		{name: "query", kind: embed.Query, cfg: embed.CohereConfig{Model: "embed-english-v3.0"}, dims: 1024,
			inputType: "search_query", wantModel: "cohere:embed-english-v3.0:1024"},
		{name: "output dimension", kind: embed.Document, cfg: embed.CohereConfig{Model: "embed-v4.0", Dimensions: 256}, dims: 256,
			inputType: "search_document", wantModel: "cohere:embed-v4.0:256"},
		{name: "a model of unknown dimensions", kind: embed.Query, cfg: embed.CohereConfig{Model: "embed-v9.0"}, dims: 12,
			inputType: "search_query", wantModel: "cohere:embed-v9.0:12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, cohereAnswer(tt.dims))
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey = up.URL+"/", cohereKey
			c := newCohere(t, cfg)
			texts := []string{"I adopted a dog", "", "the third"}
			v, err := c.Embed(context.Background(), texts, tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			equalVectors(t, v[0], wantVector(texts[0], tt.dims))
			equalVectors(t, v[1], make([]float32, tt.dims))
			equalVectors(t, v[2], wantVector(texts[2], tt.dims))
			var body cohereBody
			r := up.last(t, &body)
			if r.Method != http.MethodPost || r.URL.Path != "/v2/embed" {
				t.Errorf("%s %s, want POST /v2/embed", r.Method, r.URL.Path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+cohereKey {
				t.Errorf("Authorization: %q", got)
			}
			want := cohereBody{Texts: []string{texts[0], texts[2]}, Model: cfg.Model, InputType: tt.inputType, EmbeddingTypes: []string{"float"}}
			if cfg.Dimensions != 0 {
				want.OutputDimension = &cfg.Dimensions
			}
			if !reflect.DeepEqual(body, want) {
				t.Errorf("the request's body: %+v, want %+v", body, want)
			}
			if c.Model() != tt.wantModel || c.Dimensions() != tt.dims || c.MaxBatch() != 96 {
				t.Errorf("Model, Dimensions, MaxBatch = %q, %d, %d", c.Model(), c.Dimensions(), c.MaxBatch())
			}
		})
	}
}

// TestCohereFailures: the answers the SDK turns into its error types, and
// those it would retry, which the embedder's own HTTP client turns into
// an *Error, are all *Errors; so are answers that are not right.
func TestCohereFailures(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		retryable  bool
		retryAfter time.Duration
		contains   string
	}{
		{name: "400", status: 400, body: `{"id":"x","message":"invalid request: texts must not be empty"}`,
			contains: "the provider rejected the request (HTTP 400): the provider said: invalid request: texts must not be empty"},
		{name: "400 not JSON", status: 400, body: `bad request`, contains: "the provider said: bad request"},
		{name: "401 echoing the key", status: 401, body: `{"message":"invalid api token ` + cohereKey + `"}`, contains: "refused the API key"},
		{name: "422", status: 422, body: `{"message":"model 'nope' not found"}`, contains: "model 'nope' not found"},
		{name: "418, which the SDK has no type for", status: 418, body: `{"message":"teapot"}`, contains: "HTTP 418"},
		{name: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "3"},
			body: `{"message":"You are using a Trial key, which is limited to 100 API calls / minute."}`, retryable: true, retryAfter: 3 * time.Second,
			contains: "rate limiting requests (HTTP 429): the provider said: You are using a Trial key"},
		{name: "500", status: 500, body: `{"message":"internal server error"}`, retryable: true, contains: "HTTP 500"},
		{name: "503", status: 503, header: map[string]string{"Retry-After": "2"}, retryable: true, retryAfter: 2 * time.Second},
		{name: "bad JSON", status: 200, body: `{"embeddings":{"float":[[1,2`, contains: "not an embed response"},
		{name: "too few vectors", status: 200, body: `{"id":"x","embeddings":{"float":[[1,2,3]]},"response_type":"embeddings_by_type"}`,
			contains: "1 vectors for 2 texts"},
		{name: "no float embeddings", status: 200, body: `{"id":"x","embeddings":{"int8":[[1,2,3],[1,2,3]]}}`, contains: "0 vectors for 2 texts"},
		{name: "too large", status: 200, body: `{"embeddings":` + strings.Repeat(" ", 2<<20) + `{}}`, contains: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			c := newCohere(t, embed.CohereConfig{BaseURL: up.URL, APIKey: cohereKey, Model: "embed-english-light-v3.0", Dimensions: 3})
			start := time.Now()
			v, err := c.Embed(context.Background(), []string{"first", "second"}, embed.Document)
			elapsed := time.Since(start)
			var e *embed.Error
			if !errors.As(err, &e) {
				t.Fatalf("Embed = %v, %v, want an *embed.Error", v, err)
			}
			t.Log(err)
			wantStatus := tt.status
			if wantStatus == 200 {
				wantStatus = 0
			}
			if e.Provider != "cohere" || e.Status != wantStatus || e.Retryable != tt.retryable || e.RetryAfter != tt.retryAfter {
				t.Errorf("%#v, want status %d, retryable %v, retry after %v", e, wantStatus, tt.retryable, tt.retryAfter)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("%q does not say %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), cohereKey) {
				t.Errorf("%q holds the key", err)
			}
			// The SDK retries nothing, and does not sleep 500ms or more
			// before its last attempt as it would on its own.
			if up.requests() != 1 || elapsed >= 500*time.Millisecond {
				t.Errorf("%d requests in %v, want 1 without the SDK's sleep", up.requests(), elapsed)
			}
		})
	}
}

func TestCohereTransport(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	slow := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	c := newCohere(t, embed.CohereConfig{BaseURL: slow.URL, APIKey: cohereKey, Model: "embed-v4.0"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Embed(ctx, []string{"hello"}, embed.Query)
	var e *embed.Error
	if !errors.As(err, &e) || !e.Retryable || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the deadline: %v, want a retryable *Error wrapping context.DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.Embed(ctx, []string{"hello"}, embed.Query)
	if !errors.As(err, &e) || e.Retryable || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want a non-retryable *Error wrapping context.Canceled", err)
	}
	c = newCohere(t, embed.CohereConfig{BaseURL: slow.URL, APIKey: cohereKey, Model: "embed-v4.0",
		HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	_, err = c.Embed(context.Background(), []string{"hello"}, embed.Query)
	if !errors.As(err, &e) || !e.Retryable {
		t.Errorf("past the client's timeout: %v, want a retryable *Error", err)
	}
	_, err = c.Embed(context.Background(), make([]string, 97), embed.Query)
	if !errors.As(err, &e) || e.Retryable {
		t.Errorf("97 texts: %v, want a non-retryable *Error", err)
	}
}
