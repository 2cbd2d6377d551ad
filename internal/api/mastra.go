package api

import "encoding/json"

// The shapes of the mastra dialect: Mastra 0.24's stream chunks, as its own
// server sends them and @mastra/client-js reads them, and the page of a
// thread's messages its client reads.

// MastraChunk is one chunk of a Mastra stream: {"type", "runId",
// "from": "AGENT", "payload"}, written as one `data: {json}` line.
type MastraChunk struct {
	Type    string `json:"type"`
	RunID   string `json:"runId"`
	From    string `json:"from"`
	Payload any    `json:"payload"`
}

// MastraStart is the payload of a start chunk: the agent's name.
type MastraStart struct {
	ID string `json:"id"`
}

// MastraStepStart is the payload of a step-start chunk. This service sends
// no request and no warnings there: they are empty.
type MastraStepStart struct {
	MessageID string   `json:"messageId"`
	Request   struct{} `json:"request"`
	Warnings  []any    `json:"warnings"`
}

// MastraTextBlock is the payload of a text-start chunk, and with Type
// "text-end" of a text-end chunk: the block's id.
type MastraTextBlock struct {
	ID   string `json:"id"`
	Type string `json:"type,omitempty"`
}

// The tool-call-input-streaming-start, tool-call-delta and
// tool-call-input-streaming-end chunks carry the seed's payloads of the
// same events (ToolCallStreamingStartPayload, ToolCallDeltaPayload,
// ToolCallStreamingEndPayload): the seed's events are Mastra's.

// MastraTextDelta is the payload of a text-delta chunk: a struct, as its
// keys are always the same, is encoded at half the cost of a map (once
// for every token).
type MastraTextDelta struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// MastraToolCall is the payload of a tool-call chunk, and a call in a
// finish's output.
type MastraToolCall struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
}

// MastraToolResult is the payload of a tool-result chunk: a call's
// output, with the call's args when the stream carried the call, and
// IsError when the call failed (Mastra's client throws on an error chunk).
// Its keys, and MastraError's, are in the order the service has always
// written them (a map's, sorted): golden streams hold the bytes.
type MastraToolResult struct {
	Args       *json.RawMessage `json:"args,omitempty"`
	IsError    bool             `json:"isError,omitempty"`
	Result     json.RawMessage  `json:"result"`
	ToolCallID string           `json:"toolCallId"`
	ToolName   string           `json:"toolName"`
}

// MastraErrorPayload is the payload of an error chunk: the run failed.
type MastraErrorPayload struct {
	Error MastraError `json:"error"`
}

// MastraError is why a run failed, with a code of StreamError's.
type MastraError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// MastraStepResult says how a step or a run ended: the finish reason in
// the AI SDK's words, and whether another step follows.
type MastraStepResult struct {
	Reason      string `json:"reason"`
	IsContinued bool   `json:"isContinued"`
}

// MastraOutput is what a run has produced so far: its text, its tool
// calls and its usage.
type MastraOutput struct {
	Text      string           `json:"text"`
	ToolCalls []MastraToolCall `json:"toolCalls"`
	Usage     Usage            `json:"usage"`
}

// MastraFinish is the payload of a step-finish or a finish chunk.
type MastraFinish struct {
	MessageID  string           `json:"messageId"`
	StepResult MastraStepResult `json:"stepResult"`
	Metadata   map[string]any   `json:"metadata"`
	Output     MastraOutput     `json:"output"`
	// Usage and TotalUsage repeat output.usage: the client reads usage
	// from payload.usage on finish.
	Usage      *Usage `json:"usage,omitempty"`
	TotalUsage *Usage `json:"totalUsage,omitempty"`
	// Cost is what the run cost, on finish.
	Cost *Cost `json:"cost,omitempty"`
}

// MastraMessageList is a page of a thread's messages in Mastra's shape,
// with the page's counts beside.
type MastraMessageList struct {
	Messages       []CoreMessage `json:"messages"`
	UIMessages     []UIMessage   `json:"uiMessages"`
	LegacyMessages []any         `json:"legacyMessages"`
	Total          int           `json:"total"`
	Page           int           `json:"page"`
	PerPage        int           `json:"perPage"`
	HasMore        bool          `json:"hasMore"`
}

// CoreMessage is a model message in the AI SDK's core shape, which Mastra
// stores and returns: text content (a string), or CoreParts for tool calls
// and results.
type CoreMessage struct {
	ID      string `json:"id,omitempty"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// CorePart is one part of a CoreMessage's content: a text, a tool call or
// a tool result.
type CorePart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
}

// MastraTripwire is the payload of Mastra's tripwire chunk: a processor
// stopped the run.
type MastraTripwire struct {
	TripwireReason string `json:"tripwireReason"`
}
