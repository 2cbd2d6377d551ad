package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/offstack"
	"github.com/companionhq/companion/internal/run"
)

// The OpenAI-compatible front: POST /v1/chat/completions and GET
// /v1/models, for OpenAI's SDKs and the chat front ends that speak its Chat
// Completions API. A completion is a run like any other (the same
// authentication, limits, memory and telemetry); only the wire differs.

// openaiPrefix starts the paths whose errors are in OpenAI's shape.
const openaiPrefix = "/v1/"

// threadHeader names a completion's thread; without it (or the body's
// thread_id) the thread is derived from the conversation (openaiThread).
const threadHeader = "X-Companion-Thread-Id"

// modelsCreated is the creation time GET /v1/models gives every model id:
// the ids name voices of one agent, which have no date of their own.
const modelsCreated = 1767225600 // 2026-01-01T00:00:00Z

// errUnknownModel marks a request for a model id the service does not
// answer to: OpenAI's clients know it by its code, model_not_found.
var errUnknownModel = errors.New("unknown model")

// handleModels serves GET /v1/models: the companion, and the companion in
// each personality.
func (s *Server) handleModels() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list := api.OpenAIModelList{Object: "list", Data: []api.OpenAIModel{openaiModel(api.OpenAIModelPrefix)}}
		for _, p := range agent.Personalities() {
			list.Data = append(list.Data, openaiModel(api.OpenAIModelPrefix+"-"+string(p)))
		}
		writeJSON(w, http.StatusOK, list)
	}
}

func openaiModel(id string) api.OpenAIModel {
	return api.OpenAIModel{ID: id, Object: "model", Created: modelsCreated, OwnedBy: "companion"}
}

// openaiPersonality is the personality a model id names.
func openaiPersonality(id string) (agent.Personality, error) {
	if id == api.OpenAIModelPrefix {
		return agent.Friend, nil
	}
	if name, ok := strings.CutPrefix(id, api.OpenAIModelPrefix+"-"); ok {
		if p, err := agent.ParsePersonality(name); err == nil && name != "" {
			return p, nil
		}
	}
	return "", apperr.Wrap(apperr.NotFound, errUnknownModel, "the model %q does not exist: use companion or companion-<personality> (GET /v1/models lists them)", clip(id))
}

// openaiCall is what a completion request asks for besides its run.
type openaiCall struct {
	model        string
	stream       bool
	includeUsage bool
}

// handleChatCompletions serves POST /v1/chat/completions: the run's answer
// as a chat.completion, or with stream as chat.completion.chunk events.
func (s *Server) handleChatCompletions() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		var (
			in   agent.Input
			call openaiCall
			err  error
		)
		// Off the stack, as for any stream (streamRequest).
		offstack.Do(func() { in, call, err = s.openaiRequest(w, r) })
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if call.stream {
			s.streamWith(w, r, arrived, &in, func(runID string) dialect {
				return &openaiDialect{id: "chatcmpl-" + runID, created: arrived.Unix(), model: call.model, usage: call.includeUsage}
			})
			return
		}
		ctx, cancel := s.runContext(r)
		defer cancel()
		o, err := s.cfg.Runner.Run(ctx, in, nil)
		s.countQuota(err)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		res := o.Result
		safety := api.OpenAISafety{Notices: notices(res.Notices)}
		if res.Trip != nil {
			safety.Tripwire, safety.TripwireReason = true, res.Trip.Reason
		}
		writeJSON(w, http.StatusOK, api.OpenAIChatCompletion{
			ID: "chatcmpl-" + res.RunID, Object: "chat.completion", Created: arrived.Unix(), Model: call.model,
			Choices: []api.OpenAIChoice{{Message: api.OpenAIReplyMessage{Role: api.RoleAssistant, Content: res.Text()},
				FinishReason: openaiReason(res.FinishReason, safety.Tripwire)}},
			Usage:        openaiUsage(res.Usage),
			OpenAISafety: safety,
		})
	}
}

// openaiRequest reads a completion request as a run: its messages, its
// resource (user), its thread, and the model's personality.
func (s *Server) openaiRequest(w http.ResponseWriter, r *http.Request) (agent.Input, openaiCall, error) {
	var call openaiCall
	body, err := s.readBody(w, r)
	if err != nil {
		return agent.Input{}, call, err
	}
	var req api.OpenAIChatRequest
	if err := decodeJSON(body, &req, nil); err != nil {
		return agent.Input{}, call, err
	}
	if strings.TrimSpace(req.Model) == "" {
		return agent.Input{}, call, apperr.New(apperr.Invalid, "model is required: companion, or companion-<personality>")
	}
	p, err := openaiPersonality(req.Model)
	if err != nil {
		return agent.Input{}, call, err
	}
	call = openaiCall{model: req.Model, stream: req.Stream, includeUsage: req.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	gen := api.GenerateRequest{ResourceID: req.User,
		RuntimeContext: &api.RuntimeContext{Metadata: api.RuntimeMetadata{Personality: string(p)}}}
	if err := openaiSettings(req, &gen); err != nil {
		return agent.Input{}, call, err
	}
	if gen.Messages, err = openaiMessages(req.Messages, s.cfg.Limits); err != nil {
		return agent.Input{}, call, err
	}
	if err := checkID("user", req.User, s.cfg.Limits); err != nil {
		return agent.Input{}, call, err
	}
	if gen.ResourceID, err = s.resource(r.Context(), strings.TrimSpace(req.User)); err != nil {
		return agent.Input{}, call, err
	}
	if gen.ThreadID, err = openaiThread(r, req.ThreadID, gen.ResourceID, gen.Messages); err != nil {
		return agent.Input{}, call, err
	}
	in, err := validateRun(gen, s.cfg.Limits)
	in.Temperature = req.Temperature
	// A completion's user is a minor, and has a locale, as on every other
	// route: the safety rules that depend on them apply here too.
	userOf(r, &in)
	return in, call, err
}

// openaiSettings checks the request's sampling fields and puts those the
// run takes into gen.
func openaiSettings(req api.OpenAIChatRequest, gen *api.GenerateRequest) error {
	if req.N != nil && *req.N != 1 {
		return apperr.New(apperr.Invalid, "n must be 1: the companion gives one answer")
	}
	if len(req.Tools) > 0 && !isJSONNull(req.Tools) && string(bytes.TrimSpace(req.Tools)) != "[]" {
		return apperr.New(apperr.Invalid, "tools are not accepted: the companion runs its own tools and answers with the result")
	}
	// temperature goes to the model (openaiRequest); top_p and n are
	// checked only.
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2) {
		return apperr.New(apperr.Invalid, "temperature must be between 0 and 2")
	}
	if req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1) {
		return apperr.New(apperr.Invalid, "top_p must be between 0 and 1")
	}
	limit, field := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		limit, field = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if limit != nil {
		if *limit < 1 {
			return apperr.New(apperr.Invalid, "%s must be at least 1", field)
		}
		gen.ModelSettings = &api.ModelSettings{MaxOutputTokens: *limit}
	}
	return nil
}

func isJSONNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

// openaiMessages are a completion's messages as a run's: system and
// developer messages add to the instructions; user and assistant messages
// are the conversation, resent whole each turn, which the thread's
// de-duplication stores once (docs/memory.md). An assistant message
// without text (one that only called tools) is left out; tool calls and
// results are the companion's own business and are refused.
func openaiMessages(msgs []api.OpenAIMessage, lim Limits) ([]api.Message, error) {
	if len(msgs) > lim.MaxMessages {
		return nil, apperr.New(apperr.Invalid, "messages holds %d messages, more than the limit of %d (-max-messages): start a new conversation", len(msgs), lim.MaxMessages)
	}
	out := make([]api.Message, 0, len(msgs))
	last := ""
	for i, m := range msgs {
		var text string
		if len(m.Content) > 0 && !isJSONNull(m.Content) {
			var parsed api.Message
			if err := parsed.UnmarshalJSON([]byte(`{"content":` + string(m.Content) + `}`)); err != nil {
				return nil, apperr.New(apperr.Invalid, "messages[%d]: %s", i, err.Error())
			}
			text = parsed.Content
		}
		role := m.Role
		switch role {
		case "system", "developer":
			role = api.RoleSystem
		case api.RoleUser:
		case api.RoleAssistant:
			if len(m.ToolCalls) > 0 && !isJSONNull(m.ToolCalls) && string(bytes.TrimSpace(m.ToolCalls)) != "[]" {
				return nil, apperr.New(apperr.Invalid, "messages[%d].tool_calls are not accepted: the companion runs its own tools", i)
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
		case "tool", "function":
			return nil, apperr.New(apperr.Invalid, "messages[%d]: %s messages are not accepted: the companion runs its own tools", i, role)
		case "":
			return nil, apperr.New(apperr.Invalid, `messages[%d].role is required: "system", "user" or "assistant"`, i)
		default:
			return nil, apperr.New(apperr.Invalid, `messages[%d].role must be "system", "developer", "user" or "assistant", not %q`, i, clip(role))
		}
		out = append(out, api.Message{Role: role, Content: text})
		if role != api.RoleSystem {
			last = role
		}
	}
	if last != api.RoleUser {
		return nil, apperr.New(apperr.Invalid, "the last message (system messages aside) must be the user's: it is the one answered")
	}
	return out, nil
}

// openaiThread is a completion's thread: the X-Companion-Thread-Id header
// or the thread_id field when sent, else one derived from the resource,
// the system messages and the first user message, which every turn of a
// conversation resent whole repeats: one conversation, one thread.
func openaiThread(r *http.Request, field, resource string, msgs []api.Message) (string, error) {
	vs := r.Header.Values(threadHeader)
	switch {
	case len(vs) > 1:
		return "", apperr.New(apperr.Invalid, "send one %s header, not %d", threadHeader, len(vs))
	case len(vs) == 1 && field != "" && field != vs[0]:
		return "", apperr.New(apperr.Invalid, "the %s header and thread_id name different threads", threadHeader)
	case len(vs) == 1:
		return vs[0], nil
	case field != "":
		return field, nil
	}
	h := sha256.New()
	h.Write([]byte(resource))
	for _, m := range msgs {
		if m.Role == api.RoleSystem {
			h.Write([]byte{0})
			h.Write([]byte(m.Content))
		}
	}
	for _, m := range msgs {
		if m.Role == api.RoleUser {
			h.Write([]byte{1})
			h.Write([]byte(m.Content))
			break
		}
	}
	return "chat-" + hex.EncodeToString(h.Sum(nil))[:32], nil
}

// openaiReason is a run's finish reason in OpenAI's words. The companion's
// tools run inside the run, so a client never sees tool_calls. A run a
// processor stopped ends content_filter, OpenAI's word for an answer a
// filter stopped or replaced; its "other" is not one of OpenAI's values.
func openaiReason(r string, tripped bool) string {
	if tripped {
		return "content_filter"
	}
	switch r {
	case model.FinishLength, "content_filter":
		return r
	}
	return model.FinishStop
}

func openaiUsage(u model.Usage) api.OpenAIUsage {
	return api.OpenAIUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

// openaiDialect writes a run as OpenAI's chat.completion.chunk events: a
// first chunk with the role (and the notices), one per text delta, one
// with the finish reason (and the tripwire), then
// (stream_options.include_usage) one with the usage and no choices, then
// [DONE]. Every chunk has the same id and created.
type openaiDialect struct {
	id, model string
	created   int64
	usage     bool
	failed    bool
}

func (*openaiDialect) headers(http.Header) {}
func (*openaiDialect) ids() bool           { return false }
func (*openaiDialect) stateful() bool      { return false }
func (*openaiDialect) trailer() string     { return "[DONE]" }

func (d *openaiDialect) chunk(choices []api.OpenAIChunkChoice) api.OpenAIChunk {
	c := api.OpenAIChunk{ID: d.id, Object: "chat.completion.chunk", Created: d.created, Model: d.model, Choices: choices}
	if d.usage {
		c.Usage = jsonNull
	}
	return c
}

// jsonNull is the usage of every chunk but the last, when usage is asked for.
var jsonNull = rawJSON("null")

type rawJSON string

func (j rawJSON) MarshalJSON() ([]byte, error) { return []byte(j), nil }

func (d *openaiDialect) frames(rec *run.Record, out []frame) []frame {
	switch {
	case rec.Start != nil:
		empty := ""
		c := d.chunk([]api.OpenAIChunkChoice{{Delta: api.OpenAIDelta{Role: api.RoleAssistant, Content: &empty}}})
		c.Notices = notices(rec.Start.Notices)
		return append(out, frame{v: c})
	case rec.Text != nil:
		return append(out, frame{v: d.chunk([]api.OpenAIChunkChoice{{Delta: api.OpenAIDelta{Content: &rec.Text.Text}}}), text: true})
	case rec.Failed != nil:
		d.failed = true
		code := strings.ToLower(rec.Failed.Code)
		return append(out, frame{v: api.OpenAIErrorBody{Error: api.OpenAIError{Message: rec.Failed.Message, Type: "server_error", Code: &code}}})
	case rec.Finished != nil && !d.failed:
		reason := openaiReason(rec.Finished.Reason, rec.Finished.Tripwire)
		fin := d.chunk([]api.OpenAIChunkChoice{{FinishReason: &reason}})
		fin.Tripwire, fin.TripwireReason = rec.Finished.Tripwire, rec.Finished.TripwireReason
		out = append(out, frame{v: fin})
		if d.usage {
			c := d.chunk([]api.OpenAIChunkChoice{})
			c.Usage = openaiUsage(rec.Finished.Usage)
			out = append(out, frame{v: c})
		}
	}
	return out
}

// openaiErrorBody is err in OpenAI's error shape: the type and code its
// clients branch on, from the status.
func openaiErrorBody(err error, ae *apperr.Error, status int) api.OpenAIErrorBody {
	typ, code := "invalid_request_error", string(ae.Code)
	switch {
	case status == http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case errors.Is(err, errUnknownModel):
		code = "model_not_found"
	case status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	return api.OpenAIErrorBody{Error: api.OpenAIError{Message: ae.Message, Type: typ, Code: &code}}
}
