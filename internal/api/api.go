// Package api holds the wire types of the companion HTTP API, in every
// dialect it speaks: the request body shared by generate and stream, the
// generate response body, the seed's stream events, the threads API's
// bodies; Mastra's stream chunks and thread-message list (mastra.go); the AI
// SDK's UI message stream chunks (aisdk.go) and chat request (chat.go). It is
// the public contract (docs/api.md) and is shared by the server, which
// projects domain values onto these shapes, and Go clients that consume them.
package api

import "encoding/json"

// AgentID is the id of the service's one agent.
const AgentID = "companionAgent"

// Personality modes.
const (
	PersonalityGuru        = "guru"
	PersonalityWanderer    = "wanderer"
	PersonalityFriend      = "friend"
	PersonalityPhilosopher = "philosopher"
)

// Finish reasons of a step and of a run.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
	FinishError     = "error"
)

// Message roles accepted in a request.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Usage counts tokens. All five counters are always present.
type Usage struct {
	InputTokens       int `json:"inputTokens"`
	OutputTokens      int `json:"outputTokens"`
	TotalTokens       int `json:"totalTokens"`
	ReasoningTokens   int `json:"reasoningTokens"`
	CachedInputTokens int `json:"cachedInputTokens"`
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

// Cost is what a usage cost, at the service's prices table: in US dollars,
// the input (less its cached part), the cached input and the output.
type Cost struct {
	Currency    string  `json:"currency"`
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cachedInput"`
	Output      float64 `json:"output"`
	Total       float64 `json:"total"`
}

// ToolCall is one call of a tool by the model.
type ToolCall struct {
	ToolCallID       string          `json:"toolCallId"`
	ToolName         string          `json:"toolName"`
	Args             json.RawMessage `json:"args"`
	ProviderMetadata map[string]any  `json:"providerMetadata"`
}

// ToolResult is the outcome of one tool call. A failed call carries
// {"error": "<message>"} as its result and IsError true.
type ToolResult struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Result     json.RawMessage `json:"result"`
	IsError    bool            `json:"isError,omitempty"`
}

// ContentPart is an element of a step's content.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// RequestInfo carries the body of the request sent to the model: a
// RequestBody.
type RequestInfo struct {
	Body any `json:"body"`
}

// RequestBody is a step's request.body: what the model was sent,
// provider-neutral: the model, the messages (instructions first), the tool
// names and the output limit.
type RequestBody struct {
	Model           string           `json:"model"`
	Messages        []RequestMessage `json:"messages"`
	Tools           []string         `json:"tools"`
	MaxOutputTokens int              `json:"maxOutputTokens,omitempty"`
}

// RequestMessage is one message of a RequestBody.
type RequestMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	ToolCalls  []RequestToolCall `json:"toolCalls,omitempty"`
	ToolCallID string            `json:"toolCallId,omitempty"`
}

// RequestToolCall is a tool call of a RequestMessage.
type RequestToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// UIMessage is a message in the shape chat UIs render: parts with metadata.
type UIMessage struct {
	ID       string     `json:"id"`
	Role     string     `json:"role"`
	Metadata UIMetadata `json:"metadata"`
	Parts    []UIPart   `json:"parts"`
}

// UIMetadata is the metadata of a UIMessage.
type UIMetadata struct {
	CreatedAt  string `json:"createdAt"`
	ThreadID   string `json:"threadId"`
	ResourceID string `json:"resourceId"`
	// Pending marks a stored message that no reply answers yet (its run
	// failed, or is under way); it is left out otherwise.
	Pending bool `json:"pending,omitempty"`
}

// UIPart is one part of a UIMessage. Text parts have Type "text" and Text.
// Tool parts have Type "tool-<toolName>" and the call's id, state
// ("output-available" or "output-error"), input and output or errorText.
type UIPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	State      string          `json:"state,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
}

// ModelMessage is a message as the model saw or produced it, in
// response.messages: an assistant message (text and tool calls) or a tool
// message (one result).
type ModelMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	ToolName   string     `json:"toolName,omitempty"`
}

// Response is the raw response object of a step or a run.
type Response struct {
	ID            string            `json:"id"`
	Timestamp     string            `json:"timestamp"`
	ModelID       string            `json:"modelId"`
	Headers       map[string]string `json:"headers"`
	ModelMetadata map[string]any    `json:"modelMetadata"`
	Messages      []ModelMessage    `json:"messages"`
	UIMessages    []UIMessage       `json:"uiMessages"`
}

// Warning is an element of warnings: something that went wrong without
// failing the run, such as a tool error.
type Warning struct {
	Type       string `json:"type"`
	Message    string `json:"message"`
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
}

// Step is one model call and the tool calls it asked for.
type Step struct {
	StepType           string         `json:"stepType"`
	Text               string         `json:"text"`
	ReasoningText      string         `json:"reasoningText"`
	Content            []ContentPart  `json:"content"`
	Sources            []any          `json:"sources"`
	Files              []any          `json:"files"`
	Reasoning          []any          `json:"reasoning"`
	ToolCalls          []ToolCall     `json:"toolCalls"`
	StaticToolCalls    []ToolCall     `json:"staticToolCalls"`
	DynamicToolCalls   []ToolCall     `json:"dynamicToolCalls"`
	ToolResults        []ToolResult   `json:"toolResults"`
	StaticToolResults  []ToolResult   `json:"staticToolResults"`
	DynamicToolResults []ToolResult   `json:"dynamicToolResults"`
	Warnings           []Warning      `json:"warnings"`
	FinishReason       string         `json:"finishReason"`
	Usage              Usage          `json:"usage"`
	TotalUsage         Usage          `json:"totalUsage"`
	Request            RequestInfo    `json:"request"`
	Response           Response       `json:"response"`
	ProviderMetadata   map[string]any `json:"providerMetadata"`
	Tripwire           bool           `json:"tripwire"`
	TripwireReason     string         `json:"tripwireReason"`
	TraceID            string         `json:"traceId"`
}

// GenerateResponse is the body of a successful generate call.
type GenerateResponse struct {
	Text             string         `json:"text"`
	Usage            Usage          `json:"usage"`
	TotalUsage       Usage          `json:"totalUsage"`
	Steps            []Step         `json:"steps"`
	FinishReason     string         `json:"finishReason"`
	Warnings         []Warning      `json:"warnings"`
	ProviderMetadata map[string]any `json:"providerMetadata"`
	TraceID          string         `json:"traceId"`
	RunID            string         `json:"runId"`
	Request          RequestInfo    `json:"request"`
	Reasoning        []any          `json:"reasoning"`
	ReasoningText    string         `json:"reasoningText"`
	ToolCalls        []ToolCall     `json:"toolCalls"`
	ToolResults      []ToolResult   `json:"toolResults"`
	Sources          []any          `json:"sources"`
	Files            []any          `json:"files"`
	Response         Response       `json:"response"`
	Tripwire         bool           `json:"tripwire"`
	TripwireReason   string         `json:"tripwireReason"`
	// Notices are what the user must be told with the reply: that they
	// talk to an AI, to take a break, where to find help in a crisis.
	Notices []Notice `json:"notices"`
}

// Notice is something the user must be told with a reply. Kind is
// NoticeAIDisclosure, NoticeBreakReminder or NoticeCrisisReferral.
type Notice struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// The kinds of notice.
const (
	NoticeAIDisclosure   = "ai-disclosure"
	NoticeBreakReminder  = "break-reminder"
	NoticeCrisisReferral = "crisis-referral"
)

// ErrorBody is the body of every non-2xx JSON response.
type ErrorBody struct {
	Error string `json:"error"`
}
