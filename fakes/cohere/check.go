package cohere

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Check returns why the real v2 chat API would refuse req with 400, or nil.
// The rules are those of Cohere's API reference (the request schema of
// POST /v2/chat in cohere-openapi.yaml, as the SDK's V2ChatStreamRequest
// carries it) and two that the API enforces beyond the schema, whose
// messages are quoted as Cohere sends them:
//
//   - an assistant message with tool_calls may carry no text content: the
//     model's text before its calls goes in tool_plan ("text content is not
//     allowed when tool_calls are provided. If you wish to pass a tool plan,
//     either pass thinking content (with thinking enabled) or use
//     'tool_plan': 'messages[N].content[0]'");
//   - an assistant message with tool_calls must be followed by a tool
//     message for each call ("An assistant message with 'tool_calls' must be
//     followed by tool messages responding to each 'tool_call_id'. The
//     following tool_call_ids did not have response messages: ...").
//
// From the schema: model and messages are required; a message's role is
// system, user, assistant or tool; system and user messages need content;
// a tool call needs an id, the type function and a function name; a tool
// message needs a tool_call_id, which must answer a call of the assistant
// message before it, and content; a tool needs the type function, a name
// and parameters; stop_sequences holds at most 5; temperature is from 0 to
// 1, p from 0.01 to 0.99, k from 0 to 500, the penalties from 0 to 1;
// max_tokens is at least 1; tool_choice needs tools; safety_mode is not
// configurable with tools or documents. Those messages are the fake's own
// words.
func Check(req chatRequest) error {
	if req.Model == nil || strings.TrimSpace(*req.Model) == "" {
		return errors.New("model is required")
	}
	if len(req.Messages) == 0 {
		return errors.New("messages must not be empty")
	}
	var pending []string // calls of the last assistant message not answered yet
	var calls map[string]bool
	for i, m := range req.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			return fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
		}
		switch m.Role {
		case "system", "user":
			if len(m.Content) == 0 || string(m.Content) == "null" {
				return fmt.Errorf("messages[%d]: content is required", i)
			}
		case "assistant":
			if len(m.ToolCalls) > 0 && hasText(m.Content) {
				return fmt.Errorf("text content is not allowed when tool_calls are provided. If you wish to pass a tool plan, either pass thinking content (with thinking enabled) or use 'tool_plan': 'messages[%d].content[0]'", i)
			}
			calls = map[string]bool{}
			for j, c := range m.ToolCalls {
				switch {
				case c.ID == "":
					return fmt.Errorf("messages[%d].tool_calls[%d]: id is required", i, j)
				case c.Type != "function":
					return fmt.Errorf("messages[%d].tool_calls[%d]: type must be \"function\"", i, j)
				case c.Function.Name == "":
					return fmt.Errorf("messages[%d].tool_calls[%d].function: name is required", i, j)
				case calls[c.ID]:
					return fmt.Errorf("messages[%d].tool_calls[%d]: id %q is used twice", i, j, c.ID)
				}
				calls[c.ID] = true
				pending = append(pending, c.ID)
			}
		case "tool":
			switch {
			case m.ToolCallID == "":
				return fmt.Errorf("messages[%d]: tool_call_id is required", i)
			case !calls[m.ToolCallID]:
				return fmt.Errorf("messages[%d]: tool_call_id %q answers no tool call of the assistant message before it", i, m.ToolCallID)
			case !hasContent(m.Content):
				return fmt.Errorf("messages[%d]: content is required", i)
			}
			pending = slices.DeleteFunc(pending, func(id string) bool { return id == m.ToolCallID })
		default:
			return fmt.Errorf("messages[%d]: role %q is not one of system, user, assistant, tool", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
	}
	for i, t := range req.Tools {
		switch {
		case t.Type != "function":
			return fmt.Errorf("tools[%d]: type must be \"function\"", i)
		case t.Function.Name == "":
			return fmt.Errorf("tools[%d].function: name is required", i)
		case !isObject(t.Function.Parameters):
			return fmt.Errorf("tools[%d].function: parameters must be a JSON schema object", i)
		}
	}
	between := func(name string, v *float64, lo, hi float64) error {
		if v != nil && (*v < lo || *v > hi) {
			return fmt.Errorf("%s must be between %g and %g", name, lo, hi)
		}
		return nil
	}
	for _, err := range []error{
		between("temperature", req.Temperature, 0, 1),
		between("p", req.P, 0.01, 0.99),
		between("frequency_penalty", req.FrequencyPenalty, 0, 1),
		between("presence_penalty", req.PresencePenalty, 0, 1),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case req.K != nil && (*req.K < 0 || *req.K > 500):
		return errors.New("k must be between 0 and 500")
	case req.MaxTokens != nil && *req.MaxTokens < 1:
		return errors.New("max_tokens must be at least 1")
	case len(req.StopSequences) > 5:
		return errors.New("stop_sequences holds at most 5 strings")
	case req.ToolChoice != nil && *req.ToolChoice != "REQUIRED" && *req.ToolChoice != "NONE":
		return errors.New(`tool_choice must be "REQUIRED" or "NONE"`)
	case req.ToolChoice != nil && len(req.Tools) == 0:
		return errors.New("tool_choice needs tools")
	case req.SafetyMode != nil && (len(req.Tools) > 0 || len(req.Documents) > 0):
		return errors.New("safety_mode is not configurable in combination with tools and documents")
	}
	return nil
}

// hasText tells whether content holds text: a non-empty string, or a list
// with a text item (thinking items are not text).
func hasText(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s != ""
	}
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return len(raw) > 0 && string(raw) != "null"
	}
	for _, it := range items {
		if it.Type == "text" {
			return true
		}
	}
	return false
}

// hasContent tells whether a tool message's content says anything: a
// non-empty string or a non-empty list.
func hasContent(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s != ""
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) == nil {
		return len(items) > 0
	}
	return false
}

func isObject(raw json.RawMessage) bool {
	var m map[string]any
	return json.Unmarshal(raw, &m) == nil && m != nil
}
