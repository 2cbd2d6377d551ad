package memory

import (
	"encoding/json"
	"fmt"

	"github.com/companionhq/companion/internal/model"
)

// storedModel is how a message's model messages are stored (Message.Model).
type storedModel struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	ToolCalls  []storedToolCall `json:"toolCalls,omitempty"`
	ToolCallID string           `json:"toolCallId,omitempty"`
	ToolName   string           `json:"toolName,omitempty"`
	IsError    bool             `json:"isError,omitempty"`
}

type storedToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// EncodeModel encodes msgs as Message.Model keeps them.
func EncodeModel(msgs []model.Message) (json.RawMessage, error) {
	out := make([]storedModel, len(msgs))
	for i, m := range msgs {
		s := storedModel{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
		for _, c := range m.ToolCalls {
			s.ToolCalls = append(s.ToolCalls, storedToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		out[i] = s
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the reply's model messages: %w", err)
	}
	return b, nil
}

// ModelMessages decodes the model messages m is made of: what the model
// sees of it, and what its UI parts are drawn from.
func (m Message) ModelMessages() ([]model.Message, error) {
	if m.Model == nil {
		return []model.Message{{Role: m.Role, Content: m.Text}}, nil
	}
	var stored []storedModel
	if err := json.Unmarshal(m.Model, &stored); err != nil {
		return nil, fmt.Errorf("reading stored message %q: %w", m.ID, err)
	}
	out := make([]model.Message, len(stored))
	for i, s := range stored {
		mm := model.Message{Role: s.Role, Content: s.Content, ToolCallID: s.ToolCallID, ToolName: s.ToolName, IsError: s.IsError}
		for _, c := range s.ToolCalls {
			mm.ToolCalls = append(mm.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		out[i] = mm
	}
	return out, nil
}
