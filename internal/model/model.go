// Package model defines what the agent needs from a language model: a
// request (instructions, messages, tools, limits) and a stream of parts
// (text deltas, tool-call deltas, a finish with usage). Providers live in
// subpackages; the deterministic fake lives in fakes/fakemodel.
package model

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/companionhq/companion/internal/api"
)

// Model is a language model that streams its answer.
type Model interface {
	// Provider names who answers: "fake", "cohere", "openai", ...
	Provider() string
	// ID is the model's name at its provider.
	ID() string
	// Stream sends req and yields the answer's parts in order. It ends after
	// a PartFinish, or with a non-nil error (wrap upstream failures in
	// *Error). Breaking out of the loop cancels the upstream request.
	Stream(ctx context.Context, req Request) iter.Seq2[Part, error]
}

// Roles of model messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request is one call of a model.
type Request struct {
	// System holds the instructions.
	System string
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools the model may call.
	Tools []ToolSpec
	// MaxOutputTokens caps the answer; 0 leaves it to the model.
	MaxOutputTokens int
}

// Message is one message of the conversation the model sees.
type Message struct {
	Role    string
	Content string
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall
	// ToolCallID and ToolName identify the call a tool message answers;
	// Content then holds the result as JSON.
	ToolCallID string
	ToolName   string
	// IsError marks a tool message whose call failed.
	IsError bool
}

// ToolCall is one complete tool call.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments.
	Parameters json.RawMessage
}

// PartKind tells what a Part carries.
type PartKind int

// Part kinds.
const (
	// PartText carries a text delta in Text.
	PartText PartKind = iota + 1
	// PartReasoning carries a reasoning delta in Text.
	PartReasoning
	// PartToolCallStart opens tool call ToolCallID of tool ToolName.
	PartToolCallStart
	// PartToolCallDelta carries a fragment of the call's JSON arguments in Text.
	PartToolCallDelta
	// PartToolCallEnd closes the call: its arguments are complete.
	PartToolCallEnd
	// PartFinish ends the answer; Finish is set.
	PartFinish
)

// Part is one element of a model's streamed answer. Its strings are valid
// UTF-8: a provider replaces what is not with U+FFFD, and a delta never
// splits a character. modeltest.CheckStream states the rest of the contract.
type Part struct {
	Kind       PartKind
	Text       string
	ToolCallID string
	ToolName   string
	Finish     *Finish
}

// Finish closes an answer.
type Finish struct {
	// Reason is api.FinishStop, api.FinishLength or api.FinishToolCalls.
	Reason string
	Usage  api.Usage
	// ResponseID is the provider's id of the response, when it gives one.
	ResponseID string
	// ProviderMetadata is what the provider reports beyond the usage.
	ProviderMetadata map[string]any
}

// MaxTokens caps a token count read from a provider.
const MaxTokens = 1<<31 - 1

// Tokens reads a token count a provider reported: one that is negative or
// not a number reads 0 and a huge one is cut to MaxTokens, so that a bogus
// count never turns into a negative usage or a sum that wraps.
func Tokens(n float64) int {
	if !(n > 0) {
		return 0
	}
	return int(min(n, MaxTokens))
}

// Request body shape reported in a step's request.body.
type requestBody struct {
	Model           string        `json:"model"`
	Messages        []bodyMessage `json:"messages"`
	Tools           []string      `json:"tools"`
	MaxOutputTokens int           `json:"maxOutputTokens,omitempty"`
}

type bodyMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []bodyToolCall `json:"toolCalls,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
}

type bodyToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Body describes req as a provider-neutral JSON value for a step's
// request.body: the model, the messages (instructions first), the tool names
// and the output limit.
func Body(modelID string, req Request) any {
	b := requestBody{Model: modelID, Tools: []string{}, MaxOutputTokens: req.MaxOutputTokens}
	b.Messages = make([]bodyMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		b.Messages = append(b.Messages, bodyMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		bm := bodyMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			bm.ToolCalls = append(bm.ToolCalls, bodyToolCall(c))
		}
		b.Messages = append(b.Messages, bm)
	}
	for _, t := range req.Tools {
		b.Tools = append(b.Tools, t.Name)
	}
	return b
}
