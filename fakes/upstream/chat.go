package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

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

// ContentText reads a message's content, given as a string or as a list of
// parts, as the fake model's text: the text of the text parts and, with
// documents (Cohere's), the data of the document parts (the text itself when
// the data is a JSON string). parts names the list's entries in the error,
// as each API calls them.
func ContentText(raw json.RawMessage, parts string, documents bool) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var items []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Document json.RawMessage `json:"document"`
	}
	bad := fmt.Errorf("must be a string or a list of %s", parts)
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", bad
	}
	var b strings.Builder
	for _, it := range items {
		// Without documents, a document part is not read at all.
		var doc struct {
			Data json.RawMessage `json:"data"`
		}
		if documents && it.Document != nil && json.Unmarshal(it.Document, &doc) != nil {
			return "", bad
		}
		switch {
		case it.Type == "text":
			b.WriteString(it.Text)
		case it.Type == "document" && documents:
			var d string
			if json.Unmarshal(doc.Data, &d) == nil {
				b.WriteString(d)
			} else {
				b.Write(doc.Data)
			}
		}
	}
	return b.String(), nil
}

// FinishReasons are a provider's words for why an answer ended.
type FinishReasons struct{ Stop, Length, ToolCalls string }

// Of is the provider's word for the model's finish reason r.
func (f FinishReasons) Of(r string) string {
	switch r {
	case model.FinishLength:
		return f.Length
	case model.FinishToolCalls:
		return f.ToolCalls
	}
	return f.Stop
}

// HashRequest writes what identifies a request's conversation into h: the
// fakes derive a response id from it, the same for the same request.
func HashRequest(h io.Writer, req model.Request) {
	fmt.Fprint(h, req.System)
	for _, m := range req.Messages {
		fmt.Fprint(h, "\x00", m.Role, "\x00", m.Content, "\x00", m.ToolCallID)
	}
}

// ToModel reads n messages of a chat request as the fake model's request:
// at(i) is the i'th message and text(i) its text; the texts of the
// messages whose role is among systemRoles join its System, the others are
// its messages.
func ToModel(n int, at func(i int) Message, text func(i int) (string, error), systemRoles ...string) (model.Request, error) {
	var out model.Request
	var system []string
	for i := range n {
		m := at(i)
		t, err := text(i)
		if err != nil {
			return out, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		switch {
		case slices.Contains(systemRoles, m.Role):
			system = append(system, t)
		case m.Role == "user":
			out.Messages = append(out.Messages, model.Message{Role: model.RoleUser, Content: t})
		case m.Role == "assistant":
			out.Messages = append(out.Messages, model.Message{Role: model.RoleAssistant, Content: t, ToolCalls: m.ModelToolCalls()})
		case m.Role == "tool":
			out.Messages = append(out.Messages, model.Message{Role: model.RoleTool, ToolCallID: m.ToolCallID, Content: t})
		}
	}
	out.System = strings.Join(system, "\n\n")
	return out, nil
}
