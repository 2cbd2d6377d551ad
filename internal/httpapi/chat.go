package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
)

// handleChat serves POST /api/agents/{agentId}/chat: the AI SDK's chat
// request, answered with its UI message stream. Only the newest user
// message is new: the thread holds the rest, so a client that resends the
// whole conversation (useChat does) stores nothing twice. The resource and
// the personality come from the body (resourceId, personality,
// runtimeContext.metadata.personality) or the X-Resource-Id and
// X-Personality headers.
func (s *Server) handleChat() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		in, err := s.streamRequest(w, r, func(body []byte) (agent.Input, error) {
			var req api.ChatRequest
			if err := decodeJSON(body, &req, nil); err != nil {
				return agent.Input{}, err
			}
			gen, err := s.chatRun(r, req)
			if err != nil {
				return agent.Input{}, err
			}
			return validateRun(gen, s.cfg.Limits)
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.stream(w, r, arrived, in, FormatAISDK)
	}
}

// chatRun is the run a chat request asks for, as a generate request: the
// newest user message, in the thread the chat id names.
func (s *Server) chatRun(r *http.Request, req api.ChatRequest) (api.GenerateRequest, error) {
	gen := api.GenerateRequest{ThreadID: req.ID, ResourceID: req.ResourceID,
		RuntimeContext: req.RuntimeContext, TracingOptions: req.TracingOptions}
	if strings.TrimSpace(req.ID) == "" {
		return gen, apperr.New(apperr.Invalid, `id is required: the chat's id, which names its thread`)
	}
	switch req.Trigger {
	case "", "submit-message":
	case "regenerate-message":
		return gen, apperr.New(apperr.Conflict, "regenerating a reply is not supported: the thread keeps every reply; send a new message")
	default:
		return gen, apperr.New(apperr.Invalid, `trigger must be "submit-message", not %q`, clip(req.Trigger))
	}
	for _, h := range []struct {
		name string
		into *string
	}{{"X-Resource-Id", &gen.ResourceID}, {"X-Personality", &req.Personality}} {
		vs := r.Header.Values(h.name)
		if len(vs) > 1 {
			return gen, apperr.New(apperr.Invalid, "send one %s header, not %d", h.name, len(vs))
		}
		if len(vs) == 1 {
			if *h.into != "" && *h.into != vs[0] {
				return gen, apperr.New(apperr.Invalid, "the %s header and the body name different values", h.name)
			}
			*h.into = vs[0]
		}
	}
	// Only the newest user message is the turn's, but the others are the
	// client's conversation all the same: they get the rules of a run's
	// messages, so that what one route refuses no other takes.
	if n := len(req.Messages); n > s.cfg.Limits.MaxMessages {
		return gen, apperr.New(apperr.Invalid, "messages holds %d messages, more than the limit of %d (-max-messages): start a new chat, the thread keeps the rest", n, s.cfg.Limits.MaxMessages)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case api.RoleUser, api.RoleAssistant, api.RoleSystem:
		default:
			return gen, apperr.New(apperr.Invalid, `messages[%d].role must be "user", "assistant" or "system", not %q`, i, clip(m.Role))
		}
	}
	if req.Personality != "" && (gen.RuntimeContext == nil || gen.RuntimeContext.Metadata.Personality == "") {
		gen.RuntimeContext = &api.RuntimeContext{Metadata: api.RuntimeMetadata{Personality: req.Personality}}
	}
	// The newest user message is the turn's.
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		text, err := chatText(i, m)
		if err != nil {
			return gen, err
		}
		gen.Messages = []api.Message{{ID: m.ID, Role: api.RoleUser, Content: text}}
		break
	}
	if len(gen.Messages) == 0 {
		return gen, apperr.New(apperr.Invalid, "messages must include a user message with a text part")
	}
	return gen, nil
}

// chatText is the text of a UI message's text parts.
func chatText(i int, m api.ChatMessage) (string, error) {
	var b strings.Builder
	for j, raw := range m.Parts {
		var p api.ChatPart
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", apperr.New(apperr.Invalid, "messages[%d].parts[%d] must be an object with a type", i, j)
		}
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}
