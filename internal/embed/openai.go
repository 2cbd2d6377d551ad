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

	"github.com/companionhq/companion/internal/model"
)

// DefaultOpenAIBaseURL is OpenAI's API.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// DefaultOpenAIMaxBatch is the texts of one call by default: far below the
// API's 2048 inputs, so that a batch of long messages stays below its
// bound on the tokens of one request too.
const DefaultOpenAIMaxBatch = 64

// openAIDimensions are the default dimensions of OpenAI's models.
var openAIDimensions = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

// OpenAIConfig configures an OpenAI embedder.
type OpenAIConfig struct {
	// BaseURL is the API's base, as the chat provider takes it, e.g.
	// https://api.openai.com/v1 (the default) or http://localhost:11434/v1;
	// the path embeddings is appended.
	BaseURL string
	// APIKey is sent as a bearer token when set. OpenAI's own API needs
	// one; other servers may not.
	APIKey string
	// Model is the server's model name, e.g. text-embedding-3-small.
	// Required.
	Model string
	// Dimensions, when set, is sent as "dimensions" (OpenAI's
	// text-embedding-3 models shorten their vectors to it) and every
	// vector must have it. When 0, OpenAI's models have their default
	// and another model's is learnt from the first answer: Dimensions()
	// is 0, and Model() ends in ":0", until then.
	Dimensions int
	// MaxBatch is the most texts one call takes; 0 is
	// DefaultOpenAIMaxBatch.
	MaxBatch int
	// DocumentPrefix and QueryPrefix are put before each text of that
	// Kind: OpenAI's models embed both alike, but some models of other
	// servers are trained with prefixes (nomic-embed-text:
	// "search_document: " and "search_query: ").
	DocumentPrefix, QueryPrefix string
	// HTTPClient sends the requests; nil uses one with DefaultTimeout.
	HTTPClient *http.Client
}

// OpenAI embeds texts through an OpenAI-compatible embeddings API (POST
// {BaseURL}/embeddings). It is safe for concurrent use.
type OpenAI struct {
	remote
	cfg OpenAIConfig
	url string // of embeddings
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI checks cfg and returns an OpenAI embedder.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, errors.New("embed: openai: no model name")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embed: openai: the base URL %q is not an http or https URL", cfg.BaseURL)
	}
	if cfg.APIKey == "" && u.Hostname() == "api.openai.com" {
		return nil, errors.New("embed: openai: no API key: OpenAI's API needs one")
	}
	if cfg.Dimensions < 0 {
		return nil, fmt.Errorf("embed: openai: dimensions %d below 0", cfg.Dimensions)
	}
	if cfg.MaxBatch < 0 {
		return nil, fmt.Errorf("embed: openai: batch size %d below 0", cfg.MaxBatch)
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultOpenAIMaxBatch
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	o := &OpenAI{remote: remote{provider: ProviderOpenAI, model: cfg.Model, maxBatch: cfg.MaxBatch}, cfg: cfg,
		url: strings.TrimRight(cfg.BaseURL, "/") + "/embeddings"}
	dims := cfg.Dimensions
	if dims == 0 {
		dims = openAIDimensions[cfg.Model]
	}
	o.dims.Store(int64(dims))
	return o, nil
}

// Embed implements Embedder.
func (o *OpenAI) Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	return o.embed(ctx, texts, kind, o.call)
}

// openAIRequest is the body of an embeddings request.
type openAIRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// openAIResponse is what the embedder reads of an answer.
type openAIResponse struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// call asks for the vectors of texts, none empty.
func (o *OpenAI) call(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	prefix := o.cfg.DocumentPrefix
	if kind == Query {
		prefix = o.cfg.QueryPrefix
	}
	input := texts
	if prefix != "" {
		input = make([]string, len(texts))
		for i, t := range texts {
			input[i] = prefix + t
		}
	}
	body, err := json.Marshal(openAIRequest{Model: o.cfg.Model, Input: input, EncodingFormat: "float", Dimensions: o.cfg.Dimensions})
	if err != nil {
		return nil, o.fail("the request could not be encoded: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return nil, o.fail("the base URL is not valid: %w", err)
	}
	if o.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := o.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, transportError(ctx, o.provider, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		detail, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		return nil, statusError(o.provider, res.StatusCode, res.Header, model.Redact(model.OpenAIErrorMessage(detail), o.cfg.APIKey))
	}
	data, err := readAll(res.Body, responseLimit(len(texts), o.Dimensions()))
	if errors.Is(err, errTooLarge) {
		return nil, o.fail("%w", err)
	}
	if err != nil {
		return nil, transportError(ctx, o.provider, err)
	}
	var r openAIResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, o.fail("the answer is not an embeddings response: %w", err)
	}
	if len(r.Data) != len(texts) {
		return nil, o.fail("the provider answered %d vectors for %d texts", len(r.Data), len(texts))
	}
	// The API does not promise the order of data: index says whose each is.
	vecs := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index == nil || *d.Index < 0 || *d.Index >= len(texts) {
			return nil, o.fail("the provider answered a vector without an index in [0, %d)", len(texts))
		}
		if vecs[*d.Index] != nil {
			return nil, o.fail("the provider answered two vectors for the text at %d", *d.Index)
		}
		if d.Embedding == nil {
			d.Embedding = []float32{} // empty, not missing: remote.embed refuses it
		}
		vecs[*d.Index] = d.Embedding
	}
	return vecs, nil
}
