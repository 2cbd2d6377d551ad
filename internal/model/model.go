// Package model defines what the agent needs from a language model: a
// request (instructions, messages, tools, limits) and a stream of parts
// (text deltas, tool-call deltas, a finish with usage). Providers live in
// subpackages; the deterministic fake lives in internal/model/fake.
package model

import (
	"context"
	"encoding/json"
	"iter"
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

// TitleInstructions are the instructions of a request for a thread's
// title: a short name for a conversation, from its first exchange. The fake
// model answers them with a title of its own making.
const TitleInstructions = "Give this conversation a short title: at most six words, naming its subject, without quotes or a full stop. Answer with the title alone."

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
	// Temperature is the sampling temperature; nil leaves it to the model.
	Temperature *float64
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

// Why an answer ended: Finish.Reason.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
	// FinishError ends a run that failed; no model reports it.
	FinishError = "error"
)

// Usage counts the tokens of a model call, or of a run's calls summed.
type Usage struct {
	InputTokens       int
	OutputTokens      int
	TotalTokens       int
	ReasoningTokens   int
	CachedInputTokens int
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + o.InputTokens,
		OutputTokens:      u.OutputTokens + o.OutputTokens,
		TotalTokens:       u.TotalTokens + o.TotalTokens,
		ReasoningTokens:   u.ReasoningTokens + o.ReasoningTokens,
		CachedInputTokens: u.CachedInputTokens + o.CachedInputTokens,
	}
}

// Finish closes an answer.
type Finish struct {
	// Reason is FinishStop, FinishLength or FinishToolCalls.
	Reason string
	Usage  Usage
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
