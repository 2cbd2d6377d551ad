package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
)

// readBody reads the request body, refusing one larger than the limit or
// one that does not arrive within the body read timeout: a client that
// trickles its body byte by byte must not hold a connection for ever.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	lim := s.cfg.Limits
	// A body declared compressed would mean one thing to a proxy that
	// inflates it and another to this service, which reads it as sent:
	// only an uncompressed body is taken.
	for _, ce := range r.Header.Values("Content-Encoding") {
		if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
			return nil, apperr.New(apperr.UnsupportedMedia, "Content-Encoding %q is not accepted: send the body uncompressed", clip(ce))
		}
	}
	rc := http.NewResponseController(w)
	// Not every writer supports deadlines (a test recorder does not); the
	// server's does.
	deadline := rc.SetReadDeadline(time.Now().Add(lim.BodyReadTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lim.MaxBodyBytes))
	if deadline {
		// The rest of the exchange (a long stream) has no read deadline.
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, apperr.New(apperr.TooLarge, "request body is larger than %d bytes, the limit (-max-body-bytes)", lim.MaxBodyBytes)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			return nil, apperr.Wrap(apperr.SlowRequest, err, "request body did not arrive within %s, the limit (-body-read-timeout)", lim.BodyReadTimeout)
		}
		return nil, apperr.Wrap(apperr.Invalid, err, "request body could not be read")
	}
	return body, nil
}

// decodeJSON decodes body into v with messages that name the field at
// fault. The body is checked strictly first (see checkStrict) against
// shape, the type it stands for, or v's own type when shape is nil.
func decodeJSON(body []byte, v any, shape reflect.Type) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return apperr.New(apperr.Invalid, "request body is empty: send a JSON object")
	}
	if shape == nil {
		shape = reflect.TypeOf(v)
	}
	if err := checkStrict(trimmed, shape); err != nil && !errors.Is(err, errSyntax) {
		return err
	}
	err := api.Unmarshal(trimmed, v)
	if err == nil {
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return apperr.New(apperr.Invalid, "request body is not valid JSON: %s (at byte %d)", syntax.Error(), syntax.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return apperr.New(apperr.Invalid, "request body must be a JSON object, not %s", article(typ.Value))
	case errors.As(err, &typ):
		// The wire struct embeds api.GenerateRequest; clients know only its fields.
		field := strings.TrimPrefix(typ.Field, "GenerateRequest.")
		return apperr.New(apperr.Invalid, "%s must be %s, not %s", field, article(jsonKind(typ.Type.Kind().String())), article(typ.Value))
	case trimmed[0] != '{':
		return apperr.New(apperr.Invalid, "request body must be a JSON object")
	}
	// Errors from our own UnmarshalJSON methods are already readable.
	return apperr.New(apperr.Invalid, "invalid request body: %s", err.Error())
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "slice", "array":
		return "array"
	case "struct", "map":
		return "object"
	case "bool":
		return "boolean"
	}
	return "number"
}

func article(kind string) string {
	switch {
	case strings.HasPrefix(kind, "number"):
		return "a number"
	case kind == "array" || kind == "object" || strings.HasPrefix(kind, "array") || strings.HasPrefix(kind, "object"):
		return "an " + kind
	case kind == "bool":
		return "a boolean"
	}
	return "a " + kind
}

// decodeRun reads and validates a generate or stream request.
func decodeRun(body []byte, lim Limits) (agent.Input, error) {
	// Messages are decoded one by one so an error can say which one.
	var wire struct {
		api.GenerateRequest
		Messages json.RawMessage `json:"messages"`
	}
	if err := decodeJSON(body, &wire, reflect.TypeFor[api.GenerateRequest]()); err != nil {
		return agent.Input{}, err
	}
	req := wire.GenerateRequest
	if len(wire.Messages) > 0 && string(wire.Messages) != "null" {
		var raws []json.RawMessage
		if err := api.Unmarshal(wire.Messages, &raws); err != nil {
			return agent.Input{}, apperr.New(apperr.Invalid, `messages must be an array of messages, e.g. [{"role": "user", "content": "Hello"}]`)
		}
		if len(raws) > lim.MaxMessages {
			return agent.Input{}, apperr.New(apperr.Invalid, "messages holds %d messages, more than the limit of %d (-max-messages): send only the new ones, the thread keeps the rest", len(raws), lim.MaxMessages)
		}
		req.Messages = make([]api.Message, len(raws))
		for i, raw := range raws {
			if err := api.Unmarshal(raw, &req.Messages[i]); err != nil {
				return agent.Input{}, apperr.New(apperr.Invalid, "messages[%d]: %s", i, err.Error())
			}
		}
	}
	return validateRun(req, lim)
}

func validateRun(req api.GenerateRequest, lim Limits) (agent.Input, error) {
	in := agent.Input{
		ThreadID:   strings.TrimSpace(req.ThreadID),
		ResourceID: strings.TrimSpace(req.ResourceID),
		MaxSteps:   req.MaxSteps,
	}
	if in.ThreadID == "" {
		return in, apperr.New(apperr.Invalid, `threadId is required: name the conversation thread, e.g. "threadId": "thread-1"`)
	}
	if err := checkID("threadId", in.ThreadID, lim); err != nil {
		return in, err
	}
	if err := checkID("resourceId", in.ResourceID, lim); err != nil {
		return in, err
	}
	if len(req.Messages) == 0 {
		return in, apperr.New(apperr.Invalid, `messages is required: send at least one message, e.g. [{"role": "user", "content": "Hello"}]`)
	}
	users := 0
	for i, m := range req.Messages {
		switch m.Role {
		case api.RoleUser:
			users++
		case api.RoleAssistant, api.RoleSystem:
		case "":
			return in, apperr.New(apperr.Invalid, `messages[%d].role is required: "user", "assistant" or "system"`, i)
		default:
			return in, apperr.New(apperr.Invalid, `messages[%d].role must be "user", "assistant" or "system", not %q`, i, clip(m.Role))
		}
		if strings.TrimSpace(m.Content) == "" {
			return in, apperr.New(apperr.Invalid, "messages[%d].content is required and must not be empty", i)
		}
		if len(m.Content) > lim.MaxMessageBytes {
			return in, apperr.New(apperr.Invalid, "messages[%d].content is %d bytes, more than the limit of %d (-max-message-bytes)", i, len(m.Content), lim.MaxMessageBytes)
		}
		if err := checkID(fmt.Sprintf("messages[%d].id", i), m.ID, lim); err != nil {
			return in, err
		}
	}
	if users == 0 {
		return in, apperr.New(apperr.Invalid, "messages must include at least one user message")
	}
	in.Messages = make([]agent.Message, len(req.Messages))
	for i, m := range req.Messages {
		in.Messages[i] = agent.Message{ID: m.ID, Role: m.Role, Content: m.Content}
	}

	// runtimeContext wins over tracingOptions when both name a personality.
	name, field := "", ""
	if req.TracingOptions != nil && req.TracingOptions.Metadata.Personality != "" {
		name, field = req.TracingOptions.Metadata.Personality, "tracingOptions.metadata.personality"
	}
	if req.RuntimeContext != nil && req.RuntimeContext.Metadata.Personality != "" {
		name, field = req.RuntimeContext.Metadata.Personality, "runtimeContext.metadata.personality"
	}
	p, err := agent.ParsePersonality(name)
	if err != nil {
		return in, apperr.New(apperr.Invalid, "%s: %q is not a personality: use one of guru, wanderer, friend, philosopher", field, clip(name))
	}
	in.Personality = p
	if req.RuntimeContext != nil && req.RuntimeContext.Metadata.Minor {
		in.Minor = true
	}
	if req.RuntimeContext != nil && req.RuntimeContext.Metadata.Locale != "" {
		if in.Locale = localeTag(req.RuntimeContext.Metadata.Locale); in.Locale == "" {
			return in, apperr.New(apperr.Invalid, "runtimeContext.metadata.locale: %q is not a locale: use a BCP 47 tag such as en-US", clip(req.RuntimeContext.Metadata.Locale))
		}
	}

	if req.MaxSteps < 0 {
		return in, apperr.New(apperr.Invalid, "maxSteps must not be negative")
	}
	if req.ModelSettings != nil {
		if req.ModelSettings.MaxOutputTokens < 0 {
			return in, apperr.New(apperr.Invalid, "modelSettings.maxOutputTokens must not be negative")
		}
		in.MaxOutputTokens = req.ModelSettings.MaxOutputTokens
	}
	return in, nil
}

// localeTag is s as a locale tag (letters, digits and hyphens, at most 35
// bytes, starting with a letter), or "" when it is not one.
func localeTag(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 35 || !unicode.IsLetter(rune(s[0])) {
		return ""
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c < 0x80 && (unicode.IsLetter(c) || unicode.IsDigit(c))) {
			return ""
		}
	}
	return strings.ReplaceAll(s, "_", "-")
}

// acceptLocale is the first locale of an Accept-Language header, "" for
// none ("*" is none).
func acceptLocale(h string) string {
	first, _, _ := strings.Cut(h, ",")
	first, _, _ = strings.Cut(first, ";")
	return localeTag(first)
}

// checkID refuses an identifier (a thread's, a resource's, a message's)
// longer than the limit, or holding a control character: no store keeps
// NUL, and an id that prints differently from what it is cannot be named
// back. Every id a request carries, in its body, path or query, is
// checked here, once.
func checkID(field, id string, lim Limits) error {
	if len(id) > lim.MaxIDBytes {
		return apperr.New(apperr.Invalid, "%s is longer than %d bytes, the limit (-max-id-bytes)", field, lim.MaxIDBytes)
	}
	if strings.ContainsFunc(id, unicode.IsControl) {
		return apperr.New(apperr.Invalid, "%s must not contain control characters (such as NUL, tabs or line breaks)", field)
	}
	return nil
}

// agentID checks the {agentId} of a route.
func agentID(id string) error {
	if id != api.AgentID {
		return apperr.New(apperr.NotFound, "agent %q not found: the only agent is %s", clip(id), api.AgentID)
	}
	return nil
}

// strictQuery parses a raw query and refuses one that does not parse (a
// pair joined by ";", which url.URL.Query would drop in silence), a
// parameter given more than once, and a name that differs only in case
// from one the route reads.
func strictQuery(raw string, names ...string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return q, apperr.New(apperr.Invalid, "the query does not parse: %s (separate parameters with &, and escape ; as %%3B)", clip(err.Error()))
	}
	for key, vs := range q {
		if len(vs) > 1 {
			return q, apperr.New(apperr.Invalid, "query parameter %q is given %d times: give it once", clip(key), len(vs))
		}
		if slices.Contains(names, key) {
			continue
		}
		for _, n := range names {
			if strings.EqualFold(key, n) {
				return q, apperr.New(apperr.Invalid, "query parameter %q is not %q: parameter names are case-sensitive", clip(key), n)
			}
		}
	}
	return q, nil
}
