package api

import "encoding/json"

// AISDKChunk is one chunk of the AI SDK's UI message stream (protocol v1),
// which useChat, DefaultChatTransport and readUIMessageStream read: start,
// start-step, text-start/-delta/-end, tool-input-start/-delta/-available,
// tool-output-available or -error, finish-step, finish. The fields its type
// needs are set.
type AISDKChunk struct {
	Type      string  `json:"type"`
	ID        string  `json:"id,omitempty"`
	Delta     *string `json:"delta,omitempty"`
	MessageID string  `json:"messageId,omitempty"`
	// MessageMetadata rides on start: the run's id, to resume or cancel.
	MessageMetadata *AISDKMetadata  `json:"messageMetadata,omitempty"`
	ToolCallID      string          `json:"toolCallId,omitempty"`
	ToolName        string          `json:"toolName,omitempty"`
	InputTextDelta  *string         `json:"inputTextDelta,omitempty"`
	Input           json.RawMessage `json:"input,omitempty"`
	Output          json.RawMessage `json:"output,omitempty"`
	ErrorText       string          `json:"errorText,omitempty"`
	FinishReason    string          `json:"finishReason,omitempty"`
	// Data is a data part's (data-notice, data-tripwire).
	Data any `json:"data,omitempty"`
}

// DataTripwire is the data of a data-tripwire part (and of Mastra's).
type DataTripwire struct {
	TripwireReason string `json:"tripwireReason"`
}

// AISDKMetadata is the reply's message metadata: which run writes it (on
// start), what it cost (on finish).
type AISDKMetadata struct {
	RunID string `json:"runId,omitempty"`
	Cost  *Cost  `json:"cost,omitempty"`
}
