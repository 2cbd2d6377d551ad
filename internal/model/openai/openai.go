// Package openai is the provider for OpenAI-compatible chat completions
// (OpenAI, Ollama, vLLM, llama.cpp's server, OpenRouter, Groq, Mistral and
// others): "stream": true with stream_options.include_usage, tool-call
// deltas merged by index, usage with cached and reasoning tokens where the
// server gives them, any base URL.
//
// It speaks the API with net/http, encoding/json and the service's SSE
// parser (tmaxmax/go-sse), as the Cohere provider does, rather than through
// the official SDK: the provider reads a handful of fields and writes a
// handful more, and the SDK cost a third of the binary, megabytes of
// resident memory at rest, and a fifth of the service's CPU on a streamed
// answer (docs/providers.md, docs/performance.md). It retries nothing
// (model.Resilient retries, once for every provider) and reads nothing from
// the environment: its Config is all it knows.
package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/companionhq/companion/internal/model"
)

// Provider names.
const (
	// ProviderOpenAI is OpenAI itself.
	ProviderOpenAI = "openai"
	// ProviderOllama is a local Ollama.
	ProviderOllama = "ollama"
	// ProviderCompatible is any other OpenAI-compatible server.
	ProviderCompatible = "openai-compatible"
)

// Default base URLs.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	OllamaBaseURL  = "http://localhost:11434/v1"
)

// Config configures a Model.
type Config struct {
	// Provider is the name the model answers under: ProviderOpenAI,
	// ProviderOllama or ProviderCompatible (the default).
	Provider string
	// Model is the server's model name.
	Model string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// BaseURL is the API's base, e.g. https://api.openai.com/v1; the path
	// chat/completions is appended. Required.
	BaseURL string
	// HTTPClient sends the requests; nil uses a client without a timeout
	// (model.Resilient bounds the calls).
	HTTPClient *http.Client
}

// Model is an OpenAI-compatible chat model. It is safe for concurrent use.
type Model struct {
	cfg Config
	url string // of chat/completions
}

var _ model.Model = (*Model)(nil)

// New checks cfg and returns a Model.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: no model name")
	}
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: no base URL")
	}
	if cfg.Provider == "" {
		cfg.Provider = ProviderCompatible
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Model{cfg: cfg, url: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"}, nil
}

// Provider implements model.Model.
func (m *Model) Provider() string { return m.cfg.Provider }

// ID implements model.Model.
func (m *Model) ID() string { return m.cfg.Model }

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		p := m.cfg.Provider
		res, err := model.Post(ctx, m.cfg.HTTPClient, p, m.url, m.cfg.APIKey, newRequest(p, m.cfg.Model, req), model.OpenAIErrorMessage)
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		defer res.Body.Close()
		d := &decoder{}
		for data, err := range model.Events(res.Body) {
			if err != nil {
				yield(model.Part{}, model.TransportError(ctx, p, err, d.began))
				return
			}
			if strings.HasPrefix(data, "[DONE]") {
				break
			}
			var c chunk
			if err := c.decode([]byte(data)); err != nil {
				yield(model.Part{}, &model.Error{Kind: model.KindUpstream, Provider: p, Message: "the provider sent a malformed stream event", Err: err})
				return
			}
			if c.Error != nil {
				// An event with an "error" ends the stream.
				yield(model.Part{}, &model.Error{Kind: model.KindUpstream, Provider: p, Message: "the provider reported an error in the middle of the stream",
					Err: errors.New(model.Redact(data, m.cfg.APIKey))})
				return
			}
			for _, part := range d.chunk(c) {
				if !yield(part, nil) {
					return
				}
			}
		}
		if d.reason == "" {
			if ctx.Err() != nil {
				yield(model.Part{}, ctx.Err())
				return
			}
			yield(model.Part{}, &model.Error{Kind: model.KindUpstream, Provider: p, Temporary: !d.began,
				Message: "the stream ended before the model finished"})
			return
		}
		for _, part := range d.finish() {
			if !yield(part, nil) {
				return
			}
		}
	}
}

// chunk is what the provider reads of a streamed chat completion chunk,
// plus the reasoning text some servers add and an in-band error.
type chunk struct {
	ID                string          `json:"id"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []choice        `json:"choices"`
	Usage             *usage          `json:"usage"`
	Error             json.RawMessage `json:"error"`
}

type choice struct {
	Index        int64  `json:"index"`
	Delta        delta  `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type delta struct {
	Content string `json:"content"`
	// ReasoningContent (vLLM, DeepSeek, llama.cpp) or Reasoning (Ollama,
	// OpenRouter): the reasoning text some servers stream beside the
	// content.
	ReasoningContent string     `json:"reasoning_content"`
	Reasoning        string     `json:"reasoning"`
	ToolCalls        []toolCall `json:"tool_calls"`
}

type toolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// usage counts are numbers of any form: model.Tokens bounds them.
type usage struct {
	PromptTokens        *float64 `json:"prompt_tokens"`
	CompletionTokens    float64  `json:"completion_tokens"`
	TotalTokens         float64  `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens float64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// decode reads one event's data. Data that is not a JSON object is a
// malformed event; a field of an unexpected type is skipped (read as
// absent), as OpenAI's SDKs do, and the rest is read.
//
// It decodes with encoding/json's rules as the Go team's jsonv2 engine
// implements them (the encoding/json of GOEXPERIMENT=jsonv2): a chunk in
// less than half the time of encoding/json, with 3 allocations instead of
// 15, on the path every token takes (BenchmarkChunkDecode). FuzzChunkDecode holds it to encoding/json.
func (c *chunk) decode(data []byte) error {
	err := jsonv1.Unmarshal(data, c)
	var te *jsonv1.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return nil
	}
	return err
}

// request is the body of a streamed chat completion request.
type request struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	Tools    []tool    `json:"tools,omitempty"`
	// OpenAI's newer models take only max_completion_tokens; most other
	// servers know only max_tokens.
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	MaxTokens           int      `json:"max_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	Stream              bool     `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type message struct {
	Role string `json:"role"`
	// Content is absent only from an assistant message of tool calls alone.
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []toolCallItem `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type toolCallItem struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"` // function
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string       `json:"type"` // function
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// newRequest is the chat completions request for req, to a server of
// provider.
func newRequest(provider, modelName string, req model.Request) request {
	r := request{Model: modelName, Stream: true}
	r.StreamOptions.IncludeUsage = true
	text := func(s string) *string { return &s }
	if req.System != "" {
		r.Messages = append(r.Messages, message{Role: "system", Content: text(req.System)})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			r.Messages = append(r.Messages, message{Role: "user", Content: text(msg.Content)})
		case model.RoleAssistant:
			am := message{Role: "assistant"}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				am.Content = text(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				am.ToolCalls = append(am.ToolCalls, toolCallItem{ID: c.ID, Type: "function", Function: function{Name: c.Name, Arguments: args}})
			}
			r.Messages = append(r.Messages, am)
		case model.RoleTool:
			r.Messages = append(r.Messages, message{Role: "tool", Content: text(msg.Content), ToolCallID: msg.ToolCallID})
		}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if !json.Valid(params) {
			params = json.RawMessage(`{}`)
		}
		r.Tools = append(r.Tools, tool{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if req.MaxOutputTokens > 0 {
		if provider == ProviderOpenAI {
			r.MaxCompletionTokens = req.MaxOutputTokens
		} else {
			r.MaxTokens = req.MaxOutputTokens
		}
	}
	r.Temperature = req.Temperature
	return r
}

// decoder turns the chunks of one answer into parts.
type decoder struct {
	id     string
	calls  []call // by index of first appearance
	reason string
	usage  *usage
	// modelName and fingerprint are the last the chunks named, for the
	// finish's metadata.
	modelName   string
	fingerprint string
	began       bool
}

type call struct {
	index int64
	id    string
}

func (d *decoder) chunk(c chunk) []model.Part {
	if d.id == "" {
		d.id = c.ID
	}
	if c.Usage != nil && c.Usage.PromptTokens != nil {
		d.usage = c.Usage
	}
	if c.Model != "" {
		d.modelName = c.Model
	}
	if c.SystemFingerprint != "" {
		d.fingerprint = c.SystemFingerprint
	}
	var parts []model.Part
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one answer is asked for; other choices are not ours
		}
		delta := ch.Delta
		if r := cmp.Or(delta.ReasoningContent, delta.Reasoning); r != "" {
			parts = append(parts, model.Part{Kind: model.PartReasoning, Text: r})
		}
		if delta.Content != "" {
			parts = append(parts, model.Part{Kind: model.PartText, Text: delta.Content})
		}
		for _, tc := range delta.ToolCalls {
			id, args := tc.ID, tc.Function.Arguments
			i := d.find(tc.Index, id)
			if i < 0 {
				if id == "" {
					id = d.newID()
				}
				d.calls = append(d.calls, call{index: tc.Index, id: id})
				parts = append(parts, model.Part{Kind: model.PartToolCallStart, ToolCallID: id, ToolName: tc.Function.Name, Text: args})
				continue
			}
			if args != "" {
				parts = append(parts, model.Part{Kind: model.PartToolCallDelta, ToolCallID: d.calls[i].id, Text: args})
			}
		}
		if ch.FinishReason != "" {
			d.reason = ch.FinishReason
		}
	}
	if len(parts) > 0 {
		d.began = true
	}
	return parts
}

// find returns the position in d.calls of the call a tool-call chunk
// continues, or -1 when it starts a new one. A chunk that names an id
// continues the call of that id, wherever it is; one without an id
// continues the last call at its index. Some servers send every call
// complete at index 0, each with its own id.
func (d *decoder) find(index int64, id string) int {
	for k := len(d.calls) - 1; k >= 0; k-- {
		if id != "" && d.calls[k].id == id {
			return k
		}
		if id == "" && d.calls[k].index == index {
			return k
		}
	}
	return -1
}

// newID makes up an id for a call the server gave none, so that the deltas
// of two calls without ids stay apart.
func (d *decoder) newID() string {
	for n := len(d.calls); ; n++ {
		id := fmt.Sprintf("call_%d", n)
		if d.find(-1, id) < 0 {
			return id
		}
	}
}

// finish closes the open tool calls and reports the finish with its usage.
func (d *decoder) finish() []model.Part {
	var parts []model.Part
	for _, c := range d.calls {
		parts = append(parts, model.Part{Kind: model.PartToolCallEnd, ToolCallID: c.id})
	}
	fin := &model.Finish{ResponseID: d.id, ProviderMetadata: map[string]any{"finishReason": d.reason}}
	if d.modelName != "" {
		fin.ProviderMetadata["model"] = d.modelName
	}
	if d.fingerprint != "" {
		fin.ProviderMetadata["systemFingerprint"] = d.fingerprint
	}
	switch d.reason {
	case "length":
		fin.Reason = model.FinishLength
	case "tool_calls", "function_call":
		fin.Reason = model.FinishToolCalls
	default: // stop, content_filter, and what servers add
		fin.Reason = model.FinishStop
	}
	if u := d.usage; u != nil {
		fin.Usage = model.Usage{
			InputTokens:       model.Tokens(*u.PromptTokens),
			OutputTokens:      model.Tokens(u.CompletionTokens),
			TotalTokens:       model.Tokens(u.TotalTokens),
			CachedInputTokens: model.Tokens(u.PromptTokensDetails.CachedTokens),
			ReasoningTokens:   model.Tokens(u.CompletionTokensDetails.ReasoningTokens),
		}
		if fin.Usage.TotalTokens == 0 {
			fin.Usage.TotalTokens = fin.Usage.InputTokens + fin.Usage.OutputTokens
		}
	}
	return append(parts, model.Part{Kind: model.PartFinish, Finish: fin})
}
