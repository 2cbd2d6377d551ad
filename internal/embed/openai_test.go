package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/embed"
)

// upstream is a provider's API on loopback: it records each request and
// answers with answer.
type upstream struct {
	URL string

	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
}

func newUpstream(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *upstream {
	t.Helper()
	u := &upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		u.mu.Lock()
		u.reqs, u.bodies = append(u.reqs, r), append(u.bodies, body)
		u.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

// requests is the number of requests so far.
func (u *upstream) requests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

// last is the last request and its body, decoded into v.
func (u *upstream) last(t *testing.T, v any) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("no request")
	}
	if err := json.Unmarshal(u.bodies[len(u.bodies)-1], v); err != nil {
		t.Fatalf("the request's body: %v", err)
	}
	return u.reqs[len(u.reqs)-1]
}

// rawVector is what the fake APIs answer for text: dims floats, not
// normalised, that differ from one text to another.
func rawVector(text string, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(len(text)%7+1) * float32(i+1)
	}
	v[len(text)%dims] += 10
	return v
}

// wantVector is rawVector normalised.
func wantVector(text string, dims int) []float32 {
	v := rawVector(text, dims)
	n := float32(norm(v))
	for i := range v {
		v[i] /= n
	}
	return v
}

func equalVectors(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("a vector of %d floats, want %d", len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("float %d is %v, want %v (%v, want %v)", i, got[i], want[i], got, want)
		}
	}
}

// openAIBody is an embeddings request as sent.
type openAIBody struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     *int     `json:"dimensions"`
}

// openAIAnswer answers each input with its rawVector of dims floats, the
// data in reverse order, as a server may.
func openAIAnswer(dims int) func(w http.ResponseWriter, r *http.Request, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req openAIBody
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, in := range slices.Backward(req.Input) {
			data = append(data, item{"embedding", i, rawVector(in, dims)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": 8, "total_tokens": 8}})
	}
}

const openAIKey = "sk-test-0123456789"

func newOpenAI(t *testing.T, cfg embed.OpenAIConfig) *embed.OpenAI {
	t.Helper()
	o, err := embed.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenAI(t *testing.T) {
	tests := []struct {
		name       string
		cfg        embed.OpenAIConfig
		dims       int // of the answer
		wantModel  string
		wantDimsIn *int // "dimensions" of the request
	}{
		{name: "model's dimensions", cfg: embed.OpenAIConfig{Model: "text-embedding-3-small"}, dims: 1536,
			wantModel: "openai:text-embedding-3-small:1536"},
		{name: "dimensions asked for", cfg: embed.OpenAIConfig{Model: "text-embedding-3-large", Dimensions: 8}, dims: 8,
			wantModel: "openai:text-embedding-3-large:8", wantDimsIn: new(8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, openAIAnswer(tt.dims))
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey = up.URL+"/v1/", openAIKey
			o := newOpenAI(t, cfg)
			texts := []string{"I adopted a dog", "a second text", "the third"}
			for _, kind := range []embed.Kind{embed.Document, embed.Query} {
				v, err := o.Embed(context.Background(), texts, kind)
				if err != nil {
					t.Fatal(err)
				}
				for i, text := range texts {
					equalVectors(t, v[i], wantVector(text, tt.dims))
				}
				var body openAIBody
				r := up.last(t, &body)
				if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
					t.Errorf("%s %s, want POST /v1/embeddings", r.Method, r.URL.Path)
				}
				if got := r.Header.Get("Authorization"); got != "Bearer "+openAIKey {
					t.Errorf("Authorization: %q", got)
				}
				if got := r.Header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type: %q", got)
				}
				want := openAIBody{Model: cfg.Model, Input: texts, EncodingFormat: "float", Dimensions: tt.wantDimsIn}
				if !reflect.DeepEqual(body, want) {
					t.Errorf("the request's body: %+v, want %+v", body, want)
				}
			}
			if o.Model() != tt.wantModel || o.Dimensions() != tt.dims || o.MaxBatch() != embed.DefaultOpenAIMaxBatch {
				t.Errorf("Model, Dimensions, MaxBatch = %q, %d, %d", o.Model(), o.Dimensions(), o.MaxBatch())
			}
		})
	}
}

// TestOpenAIFailures: each answer that is not a success, or not a right
// one, is an *Error, retryable or not.
func TestOpenAIFailures(t *testing.T) {
	data := func(items ...string) string { return `{"object":"list","data":[` + strings.Join(items, ",") + `]}` }
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		retryable  bool
		retryAfter time.Duration
		contains   string
	}{
		{name: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"},
			body: `{"error":{"message":"Rate limit reached for requests","type":"requests"}}`, retryable: true, retryAfter: 7 * time.Second,
			contains: "rate limiting requests (HTTP 429): the provider said: Rate limit reached for requests"},
		{name: "429 with retry-after-ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500"}, retryable: true, retryAfter: 1500 * time.Millisecond},
		{name: "500", status: 500, body: "upstream exploded", retryable: true, contains: "HTTP 500"},
		{name: "503", status: 503, header: map[string]string{"Retry-After": "1"}, retryable: true, retryAfter: time.Second},
		{name: "400", status: 400, body: `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error"}}`,
			contains: "the provider rejected the request (HTTP 400): the provider said: '$.input' is invalid."},
		{name: "401 echoing the key", status: 401, body: `{"error":{"message":"Incorrect API key provided: ` + openAIKey + `."}}`,
			contains: "refused the API key"},
		{name: "404", status: 404, body: `{"error":{"message":"The model does not exist"}}`, contains: "does not know the model"},
		{name: "bad JSON", status: 200, body: `{"data":[{"index":0,`, contains: "not an embeddings response"},
		{name: "an HTML page", status: 200, body: `<html>hello</html>`, contains: "not an embeddings response"},
		{name: "too few vectors", status: 200, body: data(`{"index":0,"embedding":[1,2,3]}`), contains: "1 vectors for 2 texts"},
		{name: "too many vectors", status: 200, body: data(`{"index":0,"embedding":[1,2,3]}`, `{"index":1,"embedding":[1,2,3]}`, `{"index":2,"embedding":[1,2,3]}`),
			contains: "3 vectors for 2 texts"},
		{name: "an index twice", status: 200, body: data(`{"index":1,"embedding":[1,2,3]}`, `{"index":1,"embedding":[1,2,3]}`), contains: "two vectors for the text at 1"},
		{name: "no index", status: 200, body: data(`{"embedding":[1,2,3]}`, `{"index":1,"embedding":[1,2,3]}`), contains: "without an index"},
		{name: "an index out of range", status: 200, body: data(`{"index":0,"embedding":[1,2,3]}`, `{"index":2,"embedding":[1,2,3]}`), contains: "without an index"},
		{name: "other dimensions", status: 200, body: data(`{"index":0,"embedding":[1,2,3]}`, `{"index":1,"embedding":[1,2,3,4]}`), contains: "4 floats, not 3"},
		{name: "an empty vector", status: 200, body: data(`{"index":0,"embedding":[1,2,3]}`, `{"index":1,"embedding":[]}`), contains: "empty vector"},
		{name: "no vector", status: 200, body: data(`{"index":0,"embedding":[1,2,3]}`, `{"index":1}`), contains: "empty vector"},
		{name: "base64", status: 200, body: data(`{"index":0,"embedding":"AACAPw=="}`, `{"index":1,"embedding":"AACAPw=="}`), contains: "not an embeddings response"},
		{name: "too large", status: 200, body: `{"data":[` + strings.Repeat(" ", 2<<20) + `]}`, contains: "larger than"},
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
			o := newOpenAI(t, embed.OpenAIConfig{BaseURL: up.URL, APIKey: openAIKey, Model: "m", Dimensions: 3})
			v, err := o.Embed(context.Background(), []string{"first", "second"}, embed.Document)
			var e *embed.Error
			if !errors.As(err, &e) {
				t.Fatalf("Embed = %v, %v, want an *embed.Error", v, err)
			}
			t.Log(err)
			wantStatus := tt.status
			if wantStatus == 200 {
				wantStatus = 0
			}
			if e.Provider != "openai" || e.Status != wantStatus || e.Retryable != tt.retryable || e.RetryAfter != tt.retryAfter {
				t.Errorf("%#v, want status %d, retryable %v, retry after %v", e, wantStatus, tt.retryable, tt.retryAfter)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("%q does not say %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), openAIKey) {
				t.Errorf("%q holds the key", err)
			}
		})
	}
}

// TestOpenAILearnsDimensions: a model of unknown dimensions has those of
// its first answer, and every answer after must have them.
func TestOpenAILearnsDimensions(t *testing.T) {
	var mu sync.Mutex
	dims := 5
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		d := dims
		mu.Unlock()
		openAIAnswer(d)(w, r, body)
	})
	o := newOpenAI(t, embed.OpenAIConfig{BaseURL: up.URL, Model: "nomic-embed-text"})
	if o.Dimensions() != 0 || o.Model() != "openai:nomic-embed-text:0" {
		t.Fatalf("before the first answer: Dimensions, Model = %d, %q", o.Dimensions(), o.Model())
	}
	// Without a key, no Authorization.
	_, err := o.Embed(context.Background(), []string{"", "hello", " "}, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	if r := up.last(t, new(openAIBody)); r.Header.Get("Authorization") != "" {
		t.Errorf("Authorization %q without a key", r.Header.Get("Authorization"))
	}
	if o.Dimensions() != 5 || o.Model() != "openai:nomic-embed-text:5" {
		t.Errorf("after: Dimensions, Model = %d, %q", o.Dimensions(), o.Model())
	}
	mu.Lock()
	dims = 6
	mu.Unlock()
	_, err = o.Embed(context.Background(), []string{"hello"}, embed.Document)
	var e *embed.Error
	if !errors.As(err, &e) || e.Retryable || !strings.Contains(err.Error(), "6 floats, not 5") {
		t.Errorf("an answer of other dimensions: %v", err)
	}
}

// TestOpenAIEmptyTexts: empty texts are not sent and get zero vectors.
func TestOpenAIEmptyTexts(t *testing.T) {
	up := newUpstream(t, openAIAnswer(4))
	o := newOpenAI(t, embed.OpenAIConfig{BaseURL: up.URL, Model: "unknown-model"})
	// Nothing to send, and no dimensions to give the zero vectors.
	_, err := o.Embed(context.Background(), []string{"", "\t"}, embed.Document)
	var e *embed.Error
	if !errors.As(err, &e) || e.Retryable || up.requests() != 0 {
		t.Fatalf("only empty texts, dimensions unknown: %v after %d requests", err, up.requests())
	}
	v, err := o.Embed(context.Background(), []string{"", "one", "  ", "two"}, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	var body openAIBody
	up.last(t, &body)
	if !slices.Equal(body.Input, []string{"one", "two"}) {
		t.Errorf("sent %q, want the texts that are not empty", body.Input)
	}
	equalVectors(t, v[0], make([]float32, 4))
	equalVectors(t, v[1], wantVector("one", 4))
	equalVectors(t, v[2], make([]float32, 4))
	equalVectors(t, v[3], wantVector("two", 4))
	v, err = o.Embed(context.Background(), []string{""}, embed.Query)
	if err != nil || up.requests() != 1 {
		t.Fatalf("an empty text, dimensions known: %v after %d requests, want no request", err, up.requests())
	}
	equalVectors(t, v[0], make([]float32, 4))
	if v, err := o.Embed(context.Background(), nil, embed.Query); err != nil || len(v) != 0 || up.requests() != 1 {
		t.Errorf("no texts: %v, %v after %d requests", v, err, up.requests())
	}
}

func TestOpenAIBatchAndKind(t *testing.T) {
	up := newUpstream(t, openAIAnswer(2))
	o := newOpenAI(t, embed.OpenAIConfig{BaseURL: up.URL, Model: "m", MaxBatch: 2})
	for _, tc := range []struct {
		texts []string
		kind  embed.Kind
	}{{[]string{"a", "b", "c"}, embed.Document}, {[]string{"a"}, embed.Kind(9)}} {
		_, err := o.Embed(context.Background(), tc.texts, tc.kind)
		var e *embed.Error
		if !errors.As(err, &e) || e.Retryable {
			t.Errorf("%d texts of kind %v: %v, want a non-retryable *Error", len(tc.texts), tc.kind, err)
		}
	}
	if up.requests() != 0 {
		t.Errorf("%d requests, want none", up.requests())
	}
}

func TestOpenAIPrefixes(t *testing.T) {
	up := newUpstream(t, openAIAnswer(2))
	o := newOpenAI(t, embed.OpenAIConfig{BaseURL: up.URL, Model: "nomic-embed-text",
		DocumentPrefix: "search_document: ", QueryPrefix: "search_query: "})
	for kind, want := range map[embed.Kind][]string{
		embed.Document: {"search_document: a dog", "search_document: a cat"},
		embed.Query:    {"search_query: a dog", "search_query: a cat"},
	} {
		vectors := func() [][]float32 {
			v, err := o.Embed(context.Background(), []string{"a dog", "a cat"}, kind)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}()
		var body openAIBody
		up.last(t, &body)
		if !slices.Equal(body.Input, want) {
			t.Errorf("%v: sent %q, want %q", kind, body.Input, want)
		}
		equalVectors(t, vectors[0], wantVector(want[0], 2))
	}
}

// TestOpenAITransport: failures to reach the server, or to hear from it in
// time, are retryable; a cancelled call is not.
func TestOpenAITransport(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	slow := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name      string
		baseURL   string
		client    *http.Client
		ctx       func() (context.Context, context.CancelFunc)
		retryable bool
		is        error
	}{
		{name: "connection refused", baseURL: closed.URL, retryable: true},
		{name: "the client's timeout", baseURL: slow.URL, client: &http.Client{Timeout: 50 * time.Millisecond}, retryable: true},
		{name: "the context's deadline", baseURL: slow.URL, retryable: true, is: context.DeadlineExceeded,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			}},
		{name: "cancelled", baseURL: slow.URL, is: context.Canceled, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			o := newOpenAI(t, embed.OpenAIConfig{BaseURL: tt.baseURL, Model: "m", Dimensions: 2, HTTPClient: tt.client})
			_, err := o.Embed(ctx, []string{"hello"}, embed.Document)
			var e *embed.Error
			if !errors.As(err, &e) || e.Retryable != tt.retryable || e.Status != 0 {
				t.Fatalf("%v (%#v), want an *Error, retryable %v", err, e, tt.retryable)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
		})
	}
}

// TestOpenAIConcurrent is for the race detector: calls at once while the
// dimensions are being learnt.
func TestOpenAIConcurrent(t *testing.T) {
	up := newUpstream(t, openAIAnswer(3))
	o := newOpenAI(t, embed.OpenAIConfig{BaseURL: up.URL, Model: "m"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			text := fmt.Sprint("text ", i)
			v, err := o.Embed(context.Background(), []string{text}, embed.Document)
			if err != nil {
				t.Error(err)
				return
			}
			// Not equalVectors: t.Fatal is for the test's own goroutine.
			if c := embed.Cosine(v[0], wantVector(text, 3)); c < 0.99999 {
				t.Errorf("%q: cosine %v to the vector it should be", text, c)
			}
			_ = o.Model()
		})
	}
	wg.Wait()
	if o.Dimensions() != 3 || up.requests() != 8 {
		t.Errorf("Dimensions %d after %d requests", o.Dimensions(), up.requests())
	}
}
