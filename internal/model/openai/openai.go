// Package openai is the provider for OpenAI-compatible chat completions
// (OpenAI, Ollama, vLLM, llama.cpp's server, OpenRouter, Groq, Mistral and
// others), through the official SDK github.com/openai/openai-go/v3:
// "stream": true with stream_options.include_usage, tool-call deltas merged
// by index, usage with cached and reasoning tokens where the server gives
// them, any base URL.
//
// The SDK's retries are switched off (model.Resilient retries, once for
// every provider), and its client is built from this package's Config
// alone: nothing is read from the environment here.
//
// The SDK sends the request and reports its errors; the stream's chunks are
// read with the SDK's event decoder into chunk, the few fields of the SDK's
// ChatCompletionChunk this provider uses, by encoding/json. The SDK's own
// reflective decoding of every field was a sixth of the service's CPU on a
// streamed answer (docs/performance.md).
package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

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
	cfg  Config
	chat oai.ChatCompletionService
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
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// The service, not oai.NewClient: NewClient adds options read from
	// OPENAI_* variables, and the configuration must come from Config only.
	// (An oai.Client of our own would link every service of the SDK: a
	// binary a quarter larger, and megabytes more resident.)
	return &Model{cfg: cfg, chat: oai.NewChatCompletionService(opts...)}, nil
}

// Provider implements model.Model.
func (m *Model) Provider() string { return m.cfg.Provider }

// ID implements model.Model.
func (m *Model) ID() string { return m.cfg.Model }

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		// The SDK sends the request; its response is read here, not by the
		// SDK's stream (which is never advanced).
		var raw *http.Response
		if err := m.chat.NewStreaming(ctx, Params(m.cfg.Provider, m.cfg.Model, req), option.WithResponseInto(&raw)).Err(); err != nil {
			if raw != nil && raw.Body != nil {
				raw.Body.Close()
			}
			yield(model.Part{}, m.failure(ctx, err, false))
			return
		}
		events := ssestream.NewDecoder(raw)
		if events == nil {
			yield(model.Part{}, m.failure(ctx, errors.New("the response has no body"), false))
			return
		}
		defer events.Close()
		d := &decoder{}
		for events.Next() {
			ev := events.Event()
			if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
				break
			}
			var c chunk
			if err := c.decode(ev.Data); err != nil {
				yield(model.Part{}, m.failure(ctx, err, d.began))
				return
			}
			if c.Error != nil {
				// As the SDK's stream: an event with an "error" ends it.
				yield(model.Part{}, m.failure(ctx, &ssestream.StreamError{
					Message: "received error while streaming: " + string(c.Error), Event: ev}, d.began))
				return
			}
			for _, p := range d.chunk(c) {
				if !yield(p, nil) {
					return
				}
			}
		}
		if err := events.Err(); err != nil {
			yield(model.Part{}, m.failure(ctx, err, d.began))
			return
		}
		if d.reason == "" {
			if ctx.Err() != nil {
				yield(model.Part{}, ctx.Err())
				return
			}
			yield(model.Part{}, &model.Error{Kind: model.KindUpstream, Provider: m.cfg.Provider, Temporary: !d.began,
				Message: "the stream ended before the model finished"})
			return
		}
		for _, p := range d.finish() {
			if !yield(p, nil) {
				return
			}
		}
	}
}

// chunk is what the provider reads of a streamed chat completion chunk: the
// fields of the SDK's ChatCompletionChunk it uses, by the same names, plus
// the reasoning text some servers add and an in-band error.
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
// absent), as the SDK's decoder does, and the rest is read.
func (c *chunk) decode(data []byte) error {
	err := json.Unmarshal(data, c)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return nil
	}
	return err
}

// Params is the chat completions request for req.
func Params(provider, modelName string, req model.Request) oai.ChatCompletionNewParams {
	p := oai.ChatCompletionNewParams{
		Model:         shared.ChatModel(modelName),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			p.Messages = append(p.Messages, oai.UserMessage(msg.Content))
		case model.RoleAssistant:
			am := oai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				am.Content.OfString = oai.String(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				am.ToolCalls = append(am.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args}}})
			}
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		case model.RoleTool:
			p.Messages = append(p.Messages, oai.ToolMessage(msg.Content, msg.ToolCallID))
		}
	}
	for _, t := range req.Tools {
		params := shared.FunctionParameters{}
		if len(t.Parameters) > 0 {
			_ = json.Unmarshal(t.Parameters, &params)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: oai.String(t.Description), Parameters: params}))
	}
	if req.MaxOutputTokens > 0 {
		// OpenAI's newer models take only max_completion_tokens; most other
		// servers know only max_tokens.
		if provider == ProviderOpenAI {
			p.MaxCompletionTokens = oai.Int(int64(req.MaxOutputTokens))
		} else {
			p.MaxTokens = oai.Int(int64(req.MaxOutputTokens))
		}
	}
	return p
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

// failure classifies what the SDK's stream reports.
func (m *Model) failure(ctx context.Context, err error, began bool) error {
	p := m.cfg.Provider
	var ae *oai.Error
	var se *ssestream.StreamError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ae):
		var h http.Header
		if ae.Response != nil {
			h = ae.Response.Header
		}
		return model.StatusError(p, ae.StatusCode, h, model.Redact(ae.Message, m.cfg.APIKey), time.Now())
	case errors.As(err, &se):
		return &model.Error{Kind: model.KindUpstream, Provider: p, Message: "the provider reported an error in the middle of the stream",
			Err: errors.New(model.Redact(string(se.Event.Data), m.cfg.APIKey))}
	case errors.As(err, &syn), errors.As(err, &typ):
		return &model.Error{Kind: model.KindUpstream, Provider: p, Message: "the provider sent a malformed stream event", Err: err}
	}
	// A failure to send the request, or to read the answer.
	return model.TransportError(ctx, p, err, began)
}
