package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	cohere "github.com/cohere-ai/cohere-go/v2"
	"github.com/cohere-ai/cohere-go/v2/core"
	"github.com/cohere-ai/cohere-go/v2/option"
	cohereclient "github.com/cohere-ai/cohere-go/v2/v2"

	"github.com/companionhq/companion/internal/model"
)

// DefaultCohereBaseURL is Cohere's API.
const DefaultCohereBaseURL = "https://api.cohere.com"

// CohereMaxBatch is the most texts Cohere's embed API takes in one call.
const CohereMaxBatch = 96

// cohereDimensions are the default dimensions of Cohere's embed models.
var cohereDimensions = map[string]int{
	"embed-v4.0":                    1536,
	"embed-english-v3.0":            1024,
	"embed-multilingual-v3.0":       1024,
	"embed-english-light-v3.0":      384,
	"embed-multilingual-light-v3.0": 384,
}

// CohereConfig configures a Cohere embedder.
type CohereConfig struct {
	// BaseURL replaces DefaultCohereBaseURL; the path /v2/embed is
	// appended.
	BaseURL string
	// APIKey is sent as a bearer token. Required.
	APIKey string
	// Model is Cohere's model name, e.g. embed-v4.0. Required.
	Model string
	// Dimensions, when set, is sent as output_dimension (embed-v4.0 and
	// newer: 256, 512, 1024 or 1536) and every vector must have it. When
	// 0, the models above have their default and another model's is
	// learnt from the first answer: Dimensions() is 0, and Model() ends in
	// ":0", until then.
	Dimensions int
	// HTTPClient sends the requests; nil uses one with DefaultTimeout.
	HTTPClient *http.Client
}

// Cohere embeds texts through Cohere's v2 embed API (POST /v2/embed) with
// cohere-go: a Document as input_type search_document, a Query as
// search_query. It is safe for concurrent use.
//
// The SDK's client sends the request and decodes the answer; its HTTP
// client is one of this package's, which reads the answer whole within a
// bound and turns the failures the SDK would retry (429, 408, 5xx) into an
// *Error itself: the SDK sleeps before each retry without heeding the
// context, even when told to make one attempt, and its errors drop
// Retry-After. Other failures come back as the SDK's error types, whose
// status becomes the *Error's.
type Cohere struct {
	remote
	cfg    CohereConfig
	client *cohereclient.Client
}

var _ Embedder = (*Cohere)(nil)

// NewCohere checks cfg and returns a Cohere embedder.
func NewCohere(cfg CohereConfig) (*Cohere, error) {
	if cfg.Model == "" {
		return nil, errors.New("embed: cohere: no model name")
	}
	// Checked here: the SDK would read CO_API_KEY from the environment.
	if cfg.APIKey == "" {
		return nil, errors.New("embed: cohere: no API key")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultCohereBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embed: cohere: the base URL %q is not an http or https URL", cfg.BaseURL)
	}
	if cfg.Dimensions < 0 {
		return nil, fmt.Errorf("embed: cohere: dimensions %d below 0", cfg.Dimensions)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	c := &Cohere{remote: remote{provider: ProviderCohere, model: cfg.Model, maxBatch: CohereMaxBatch}, cfg: cfg}
	c.client = cohereclient.NewClient(
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")),
		option.WithToken(cfg.APIKey),
		option.WithMaxAttempts(1),
		option.WithHTTPClient(&cohereTransport{client: cfg.HTTPClient, key: cfg.APIKey}),
	)
	dims := cfg.Dimensions
	if dims == 0 {
		dims = cohereDimensions[cfg.Model]
	}
	c.dims.Store(int64(dims))
	return c, nil
}

// Embed implements Embedder.
func (c *Cohere) Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	return c.embed(ctx, texts, kind, c.call)
}

// call asks for the vectors of texts, none empty.
func (c *Cohere) call(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	req := &cohere.V2EmbedRequest{
		Texts:          texts,
		Model:          c.cfg.Model,
		InputType:      cohere.EmbedInputTypeSearchDocument,
		EmbeddingTypes: []cohere.EmbeddingType{cohere.EmbeddingTypeFloat},
	}
	if kind == Query {
		req.InputType = cohere.EmbedInputTypeSearchQuery
	}
	if c.cfg.Dimensions > 0 {
		n := c.cfg.Dimensions
		req.OutputDimension = &n
	}
	limit := responseLimit(len(texts), c.Dimensions())
	res, err := c.client.Embed(ctx, req, option.WithHTTPClient(&cohereTransport{client: c.cfg.HTTPClient, key: c.cfg.APIKey, limit: limit}))
	if err != nil {
		return nil, c.error(ctx, err)
	}
	floats := res.GetEmbeddings().GetFloat()
	if len(floats) != len(texts) {
		return nil, c.fail("the provider answered %d vectors for %d texts", len(floats), len(texts))
	}
	vecs := make([][]float32, len(floats))
	for i, f := range floats {
		v := make([]float32, len(f))
		for j, x := range f {
			v[j] = float32(x)
		}
		vecs[i] = v
	}
	return vecs, nil
}

// error is the *Error of a failed call of the SDK.
func (c *Cohere) error(ctx context.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e // cohereTransport's
	}
	if ctx.Err() != nil {
		return transportError(ctx, c.provider, err)
	}
	var api *core.APIError
	if errors.As(err, &api) && api.StatusCode != 0 {
		var detail string
		if cause := api.Unwrap(); cause != nil {
			detail = cohereMessage([]byte(cause.Error()))
		}
		return statusError(c.provider, api.StatusCode, nil, model.Redact(detail, c.cfg.APIKey))
	}
	// What is left is an answer the SDK could not decode (a request of
	// strings always encodes): the same texts would meet it again.
	return c.fail("the answer is not an embed response: %w", err)
}

// cohereTransport is the SDK's HTTP client: it sends with client, and
// hands the SDK an answer read whole within limit bytes (0: 1 MiB), or an
// *Error. Each call has its own, with the limit of its batch.
type cohereTransport struct {
	client *http.Client
	key    string
	limit  int64
}

func (t *cohereTransport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	res, err := t.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, ProviderCohere, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		detail, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		if sdkRetries(res.StatusCode) {
			return nil, statusError(ProviderCohere, res.StatusCode, res.Header, model.Redact(cohereMessage(detail), t.key))
		}
		res.Body = io.NopCloser(bytes.NewReader(detail))
		return res, nil
	}
	limit := t.limit
	if limit == 0 {
		limit = 1 << 20
	}
	body, err := readAll(res.Body, limit)
	if errors.Is(err, errTooLarge) {
		return nil, &Error{Provider: ProviderCohere, Err: err}
	}
	if err != nil {
		return nil, transportError(ctx, ProviderCohere, err)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// sdkRetries reports whether cohere-go retries an answer of status, as its
// Retrier.shouldRetry does.
func sdkRetries(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// cohereMessage is the message of a Cohere error body, {"message": ...},
// or the body itself when it has none.
func cohereMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return string(body)
}
