package upstream

import (
	"encoding/json"

	"github.com/companionhq/companion/internal/model"
)

// Message is one message of a chat request as both wire formats send it:
// Cohere's v2 chat takes OpenAI's chat completions shapes for messages,
// tool calls and tools. How content is framed, which roles exist and what
// errors say differ, and stay in the fakes.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
}

// ToolCall is one call of an assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is one function tool on offer.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ModelToolCalls returns the message's tool calls as the fake model reads
// them; nil when there are none.
func (m Message) ModelToolCalls() []model.ToolCall {
	var out []model.ToolCall
	for _, c := range m.ToolCalls {
		out = append(out, model.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
	}
	return out
}

// ToolSpecs returns tools as the fake model reads them; nil when there are
// none.
func ToolSpecs(tools []Tool) []model.ToolSpec {
	var out []model.ToolSpec
	for _, t := range tools {
		out = append(out, model.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return out
}
