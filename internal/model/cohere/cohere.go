// Package cohere is the Cohere provider: the v2 chat API (POST /v2/chat,
// streaming, tools) with the request and event types of
// github.com/cohere-ai/cohere-go/v2.
//
// The SDK's own stream reader is not used. In cohere-go v2.15.3,
// Stream.Recv splits the body on newlines and hands any line without a
// "data: " prefix to json.Unmarshal, so the blank line that ends every
// Server-Sent Event fails with "unexpected end of JSON input" as soon as
// events arrive one per read, which is how a live stream arrives (see
// docs/providers.md). This package sends the SDK's V2ChatStreamRequest
// itself and reads the events with a standard SSE parser, then decodes each
// one into the SDK's V2ChatStreamResponse. It also keeps the status and
// Retry-After of failures, which the SDK's errors drop, and leaves retries
// to model.Resilient.
package cohere

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strings"

	cohere "github.com/cohere-ai/cohere-go/v2"

	"github.com/companionhq/companion/internal/model"
)

// Provider is the provider's name in errors, modelId and providerMetadata.
const Provider = "cohere"

// DefaultBaseURL is Cohere's API.
const DefaultBaseURL = "https://api.cohere.com"

// Config configures a Model.
type Config struct {
	// Model is Cohere's model name, e.g. command-a-03-2025.
	Model string
	// APIKey is sent as a bearer token.
	APIKey string
	// BaseURL replaces DefaultBaseURL; the path /v2/chat is appended.
	BaseURL string
	// HTTPClient sends the requests; nil uses a client without a timeout
	// (model.Resilient bounds the calls).
	HTTPClient *http.Client
}

// Model is a Cohere chat model. It is safe for concurrent use.
type Model struct {
	cfg Config
	url string
}

var _ model.Model = (*Model)(nil)

// New checks cfg and returns a Model.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("cohere: no model name")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("cohere: no API key")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Model{cfg: cfg, url: strings.TrimRight(cfg.BaseURL, "/") + "/v2/chat"}, nil
}

// Provider implements model.Model.
func (m *Model) Provider() string { return Provider }

// ID implements model.Model.
func (m *Model) ID() string { return m.cfg.Model }

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		res, err := model.Post(ctx, m.cfg.HTTPClient, Provider, m.url, m.cfg.APIKey, Request(m.cfg.Model, req), errorMessage)
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		defer res.Body.Close()
		d := &decoder{}
		for data, err := range model.Events(res.Body) {
			if err != nil {
				yield(model.Part{}, model.TransportError(ctx, Provider, err, d.began))
				return
			}
			parts, done, err := d.event(data)
			if err != nil {
				yield(model.Part{}, err)
				return
			}
			for _, p := range parts {
				if !yield(p, nil) {
					return
				}
			}
			if done {
				return
			}
		}
		// The body ended without message-end: the stream was cut.
		if ctx.Err() != nil {
			yield(model.Part{}, ctx.Err())
			return
		}
		yield(model.Part{}, &model.Error{Kind: model.KindUpstream, Provider: Provider, Temporary: !d.began,
			Message: "the stream ended before message-end"})
	}
}

// Request is the v2 chat request for req.
func Request(modelName string, req model.Request) *cohere.V2ChatStreamRequest {
	out := &cohere.V2ChatStreamRequest{Model: modelName}
	if req.System != "" {
		out.Messages = append(out.Messages, &cohere.ChatMessageV2{Role: "system",
			System: &cohere.SystemMessageV2{Content: &cohere.SystemMessageV2Content{String: req.System}}})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			out.Messages = append(out.Messages, &cohere.ChatMessageV2{Role: "user",
				User: &cohere.UserMessageV2{Content: &cohere.UserMessageV2Content{String: msg.Content}}})
		case model.RoleAssistant:
			am := &cohere.AssistantMessage{}
			switch {
			case msg.Content == "":
			case len(msg.ToolCalls) > 0:
				// The API refuses text content beside tool calls (400, "text
				// content is not allowed when tool_calls are provided"): the
				// text a step wrote before its calls is its tool plan.
				plan := msg.Content
				am.ToolPlan = &plan
			default:
				am.Content = &cohere.AssistantMessageV2Content{String: msg.Content}
			}
			for _, c := range msg.ToolCalls {
				id, name, args, typ := c.ID, c.Name, string(c.Args), "function"
				if args == "" {
					args = "{}"
				}
				am.ToolCalls = append(am.ToolCalls, &cohere.ToolCallV2{Id: &id, Type: &typ,
					Function: &cohere.ToolCallV2Function{Name: &name, Arguments: &args}})
			}
			out.Messages = append(out.Messages, &cohere.ChatMessageV2{Role: "assistant", Assistant: am})
		case model.RoleTool:
			out.Messages = append(out.Messages, &cohere.ChatMessageV2{Role: "tool",
				Tool: &cohere.ToolMessageV2{ToolCallId: msg.ToolCallID, Content: &cohere.ToolMessageV2Content{String: msg.Content}}})
		}
	}
	for _, t := range req.Tools {
		params := map[string]any{}
		if len(t.Parameters) > 0 {
			_ = json.Unmarshal(t.Parameters, &params)
		}
		desc, typ := t.Description, "function"
		out.Tools = append(out.Tools, &cohere.ToolV2{Type: &typ, Function: &cohere.ToolV2Function{Name: t.Name, Description: &desc, Parameters: params}})
	}
	if req.MaxOutputTokens > 0 {
		n := req.MaxOutputTokens
		out.MaxTokens = &n
	}
	out.Temperature = req.Temperature
	return out
}

// decoder turns the events of one answer into parts.
type decoder struct {
	id    string
	calls map[int]*toolCall // by the events' index
	ids   map[string]bool   // every call's id, to keep them unique
	began bool
}

// toolCall is a call the stream has started.
type toolCall struct {
	id   string
	open bool // not ended yet
}

// malformed is the error of a stream that breaks the event protocol.
func malformed(err error) error {
	return &model.Error{Kind: model.KindUpstream, Provider: Provider, Message: "the provider sent a malformed stream event", Err: err}
}

// start opens the call at index i under id, or under an id made up for it
// when the provider gave none: an empty id would leave deltas of two
// calls open at once without a name to tell them apart.
func (d *decoder) start(i int, id string) (string, error) {
	if d.calls == nil {
		d.calls, d.ids = map[int]*toolCall{}, map[string]bool{}
	}
	if c := d.calls[i]; c != nil && c.open {
		return "", malformed(fmt.Errorf("tool call %d started again before it ended", i))
	}
	if id == "" {
		for n := len(d.ids); id == "" || d.ids[id]; n++ {
			id = fmt.Sprintf("call_%d", n)
		}
	} else if d.ids[id] {
		return "", malformed(fmt.Errorf("tool call id %q used twice", id))
	}
	d.ids[id] = true
	d.calls[i] = &toolCall{id: id, open: true}
	return id, nil
}

// open returns the open call at index i.
func (d *decoder) open(i int, event string) (*toolCall, error) {
	c := d.calls[i]
	if c == nil || !c.open {
		return nil, malformed(fmt.Errorf("%s for tool call %d, which is not open", event, i))
	}
	return c, nil
}

// event decodes one event's data. done is set after message-end (or the
// [DONE] that follows it).
func (d *decoder) event(data string) (parts []model.Part, done bool, err error) {
	data = strings.TrimSpace(data)
	if data == "" {
		return nil, false, nil
	}
	if data == "[DONE]" {
		// The same cut as a body that ends early: retryable before any part.
		return nil, false, &model.Error{Kind: model.KindUpstream, Provider: Provider, Temporary: !d.began,
			Message: "the stream ended before message-end"}
	}
	var ev cohere.V2ChatStreamResponse
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		return nil, false, malformed(err)
	}
	switch {
	case ev.MessageStart != nil:
		if ev.MessageStart.Id != nil {
			d.id = *ev.MessageStart.Id
		}
	case ev.ContentDelta != nil:
		c := ev.ContentDelta.GetDelta().GetMessage().GetContent()
		if t := c.GetText(); t != nil && *t != "" {
			parts = append(parts, model.Part{Kind: model.PartText, Text: *t})
		}
		if t := c.GetThinking(); t != nil && *t != "" {
			parts = append(parts, model.Part{Kind: model.PartReasoning, Text: *t})
		}
	case ev.ToolPlanDelta != nil:
		// The plan a Cohere model writes before it calls tools is reasoning,
		// not reply text.
		if t := ev.ToolPlanDelta.GetDelta().GetMessage().GetToolPlan(); t != nil && *t != "" {
			parts = append(parts, model.Part{Kind: model.PartReasoning, Text: *t})
		}
	case ev.ToolCallStart != nil:
		tc := ev.ToolCallStart.GetDelta().GetMessage().GetToolCalls()
		p := model.Part{Kind: model.PartToolCallStart}
		if tc.GetId() != nil {
			p.ToolCallID = *tc.GetId()
		}
		if f := tc.GetFunction(); f != nil {
			if f.Name != nil {
				p.ToolName = *f.Name
			}
			if f.Arguments != nil {
				p.Text = *f.Arguments
			}
		}
		id, err := d.start(index(ev.ToolCallStart.Index), p.ToolCallID)
		if err != nil {
			return nil, false, err
		}
		p.ToolCallID = id
		parts = append(parts, p)
	case ev.ToolCallDelta != nil:
		c, err := d.open(index(ev.ToolCallDelta.Index), "tool-call-delta")
		if err != nil {
			return nil, false, err
		}
		f := ev.ToolCallDelta.GetDelta().GetMessage().GetToolCalls().GetFunction()
		if f != nil && f.Arguments != nil && *f.Arguments != "" {
			parts = append(parts, model.Part{Kind: model.PartToolCallDelta, ToolCallID: c.id, Text: *f.Arguments})
		}
	case ev.ToolCallEnd != nil:
		c, err := d.open(index(ev.ToolCallEnd.Index), "tool-call-end")
		if err != nil {
			return nil, false, err
		}
		c.open = false
		parts = append(parts, model.Part{Kind: model.PartToolCallEnd, ToolCallID: c.id})
	case ev.MessageEnd != nil:
		p, err := d.finish(ev.MessageEnd)
		if err != nil {
			return nil, true, err
		}
		return []model.Part{p}, true, nil
	}
	if len(parts) > 0 {
		d.began = true
	}
	return parts, false, nil
}

// finish maps message-end: its finish reason and usage.
func (d *decoder) finish(e *cohere.ChatMessageEndEvent) (model.Part, error) {
	delta := e.GetDelta()
	reason := ""
	if r := delta.GetFinishReason(); r != nil {
		reason = string(*r)
	}
	fin := &model.Finish{ResponseID: d.id, ProviderMetadata: map[string]any{"finishReason": reason}}
	if e.Id != nil && d.id == "" {
		fin.ResponseID = *e.Id
	}
	switch strings.ToUpper(reason) {
	case "COMPLETE", "STOP_SEQUENCE":
		fin.Reason = model.FinishStop
	case "MAX_TOKENS":
		fin.Reason = model.FinishLength
	case "TOOL_CALL":
		fin.Reason = model.FinishToolCalls
	case "TIMEOUT":
		return model.Part{}, &model.Error{Kind: model.KindTimeout, Provider: Provider, Message: "the model timed out while answering"}
	default:
		msg := "the model stopped with an error"
		var causes []error
		if reason != "ERROR" {
			// The reason is the provider's text: it is named only when it
			// looks like a finish reason, and goes to the log in any case.
			msg = "the model stopped for an unknown reason"
			if reasonName.MatchString(reason) {
				msg += fmt.Sprintf(" %q", reason)
			}
			causes = append(causes, fmt.Errorf("finish reason %q", reason))
		}
		if e := delta.GetError(); e != nil {
			causes = append(causes, errors.New(*e))
		}
		return model.Part{}, &model.Error{Kind: model.KindUpstream, Provider: Provider, Message: msg, Err: errors.Join(causes...)}
	}
	if u := delta.GetUsage(); u != nil {
		fin.Usage = usage(u)
		meta := fin.ProviderMetadata
		if b := u.GetBilledUnits(); b != nil {
			meta["billedUnits"] = map[string]any{"inputTokens": tokens(b.GetInputTokens()), "outputTokens": tokens(b.GetOutputTokens())}
		}
		if t := u.GetTokens(); t != nil {
			meta["tokens"] = map[string]any{"inputTokens": tokens(t.GetInputTokens()), "outputTokens": tokens(t.GetOutputTokens())}
		}
		if c, ok := u.GetExtraProperties()["cached_tokens"].(float64); ok {
			meta["cachedTokens"] = model.Tokens(c)
		}
	}
	return model.Part{Kind: model.PartFinish, Finish: fin}, nil
}

// usage is what a call cost: the billed units, which is what the caller
// pays for. The token counts (tokens) are more: they count what the API
// adds under the hood, its prompt template and the special tokens around
// tool calls, which are not billed; they go to the provider metadata, with
// cached_tokens, which counts prompt tokens of that larger kind and may
// exceed the billed input. Only a usage without billed units is read from
// the token counts.
func usage(u *cohere.Usage) model.Usage {
	in, out := tokens(u.GetBilledUnits().GetInputTokens()), tokens(u.GetBilledUnits().GetOutputTokens())
	if u.GetBilledUnits() == nil {
		in, out = tokens(u.GetTokens().GetInputTokens()), tokens(u.GetTokens().GetOutputTokens())
	}
	return model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// reasonName is what a finish reason looks like: COMPLETE, MAX_TOKENS, ...
var reasonName = regexp.MustCompile(`^[A-Z][A-Z_]{0,39}$`)

func index(i *int) int {
	if i == nil {
		return 0
	}
	return *i
}

func tokens(f *float64) int {
	if f == nil {
		return 0
	}
	return model.Tokens(*f)
}

// errorMessage reads the message of Cohere's error body
// {"id": ..., "message": ...}, or the body itself.
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return string(body)
}
