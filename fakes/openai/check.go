package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// refusal is why the API refuses a request: its message and the param it
// names, as in OpenAI's error body.
type refusal struct {
	message, param string
}

func (r *refusal) Error() string { return r.message }

func refuse(param, format string, args ...any) *refusal {
	return &refusal{message: fmt.Sprintf(format, args...), param: param}
}

// Check returns why OpenAI's chat completions would refuse req with 400,
// or nil. The rules are those of openai-go's request types
// (ChatCompletionNewParams and its message params: "api:required" fields,
// and the assistant's content "required unless tool_calls or function_call
// is specified"; stream_options "only set this when you set stream: true")
// and two the API enforces between messages, whose messages are quoted as
// OpenAI sends them:
//
//   - a tool message must answer a tool call of the assistant message
//     before it ("Invalid parameter: messages with role 'tool' must be a
//     response to a preceeding message with 'tool_calls'.");
//   - an assistant message with tool_calls must be followed by a tool
//     message for each call ("An assistant message with 'tool_calls' must be
//     followed by tool messages responding to each 'tool_call_id'. The
//     following tool_call_ids did not have response messages: ...").
//
// The other messages are the fake's own words.
func Check(req chatRequest) error {
	if req.Model == "" {
		return refuse("model", "you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return refuse("messages", "[] is too short - 'messages'")
	}
	if req.StreamOptions != nil && !req.Stream {
		return refuse("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	var pending []string
	var calls map[string]bool
	for i, m := range req.Messages {
		at := func(field string) string { return fmt.Sprintf("messages.[%d].%s", i, field) }
		if m.Role != "tool" && len(pending) > 0 {
			return refuse(at("role"), "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
		}
		switch m.Role {
		case "system", "developer", "user":
			if !present(m.Content) {
				return refuse(at("content"), "Missing required parameter: '%s'.", at("content"))
			}
		case "assistant":
			if !present(m.Content) && len(m.ToolCalls) == 0 {
				return refuse(at("content"), "Missing required parameter: '%s': an assistant message needs content unless it has tool_calls.", at("content"))
			}
			calls = map[string]bool{}
			for j, c := range m.ToolCalls {
				field := fmt.Sprintf("tool_calls.[%d]", j)
				switch {
				case c.ID == "":
					return refuse(at(field+".id"), "Missing required parameter: '%s'.", at(field+".id"))
				case c.Type != "function":
					return refuse(at(field+".type"), "Invalid value for '%s': expected 'function'.", at(field+".type"))
				case c.Function.Name == "":
					return refuse(at(field+".function.name"), "Missing required parameter: '%s'.", at(field+".function.name"))
				}
				calls[c.ID] = true
				pending = append(pending, c.ID)
			}
		case "tool":
			switch {
			case m.ToolCallID == "":
				return refuse(at("tool_call_id"), "Missing required parameter: '%s'.", at("tool_call_id"))
			case !calls[m.ToolCallID]:
				return refuse(at("role"), "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			case !present(m.Content):
				return refuse(at("content"), "Missing required parameter: '%s'.", at("content"))
			}
			pending = slices.DeleteFunc(pending, func(id string) bool { return id == m.ToolCallID })
		default:
			return refuse(at("role"), "Invalid value: '%s'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.", m.Role)
		}
	}
	if len(pending) > 0 {
		return refuse("messages", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
	}
	for i, t := range req.Tools {
		switch {
		case t.Type != "function":
			return refuse(fmt.Sprintf("tools[%d].type", i), "Invalid value for 'tools[%d].type': expected 'function'.", i)
		case t.Function.Name == "":
			return refuse(fmt.Sprintf("tools[%d].function.name", i), "Missing required parameter: 'tools[%d].function.name'.", i)
		}
	}
	return nil
}

// present tells whether content was given: a string (empty or not) or a
// list, not null or absent.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
