package api

// Stream event types, in the order a run produces them.
const (
	EventStart                       = "start"
	EventStepStart                   = "step-start"
	EventText                        = "text"
	EventToolCallInputStreamingStart = "tool-call-input-streaming-start"
	EventToolCallDelta               = "tool-call-delta"
	EventToolCallInputStreamingEnd   = "tool-call-input-streaming-end"
	EventToolCall                    = "tool-call"
	EventToolResult                  = "tool-result"
	EventStepFinish                  = "step-finish"
	EventRunFinish                   = "run-finish"
	EventError                       = "error"
)

// Error codes of error events.
const (
	// CodeToolError: a tool call failed; the run goes on and the model is told.
	CodeToolError = "TOOL_ERROR"
	// CodeModelError: the model failed mid-run; the run ends.
	CodeModelError = "MODEL_ERROR"
	// CodeCancelled: the run was stopped because the server is shutting down.
	CodeCancelled = "CANCELLED"
	// CodeRunTimeout: the run took longer than the service allows a run
	// (-max-run-duration); the run ends.
	CodeRunTimeout = "RUN_TIMEOUT"
	// CodeInternal: an unexpected failure inside the service; the run ends.
	CodeInternal = "INTERNAL_ERROR"
)

// Event is one stream event, written as one `data: {json}` line. Text is set
// on text events only, Error on error events only, Payload on the others.
type Event struct {
	Type    string       `json:"type"`
	RunID   string       `json:"runId"`
	Text    string       `json:"text,omitempty"`
	Payload any          `json:"payload,omitempty"`
	Error   *StreamError `json:"error,omitempty"`
}

// StreamError is the error of an error event.
type StreamError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// StartPayload is the payload of a start event.
type StartPayload struct {
	AgentID     string `json:"agentId"`
	ThreadID    string `json:"threadId"`
	ResourceID  string `json:"resourceId"`
	Personality string `json:"personality"`
	TraceID     string `json:"traceId"`
	// Notices are what the user must be told with this reply; absent when
	// there are none.
	Notices []Notice `json:"notices,omitempty"`
}

// StepStartPayload is the payload of a step-start event.
type StepStartPayload struct {
	StepIndex int    `json:"stepIndex"`
	StepType  string `json:"stepType"`
	MessageID string `json:"messageId"`
}

// ToolCallStreamingStartPayload is the payload of tool-call-input-streaming-start.
type ToolCallStreamingStartPayload struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
}

// ToolCallDeltaPayload is the payload of tool-call-delta.
type ToolCallDeltaPayload struct {
	ArgsTextDelta string `json:"argsTextDelta"`
	ToolCallID    string `json:"toolCallId"`
	ToolName      string `json:"toolName"`
}

// ToolCallStreamingEndPayload is the payload of tool-call-input-streaming-end.
type ToolCallStreamingEndPayload struct {
	ToolCallID string `json:"toolCallId"`
}

// ToolErrorPayload is the payload of an error event with code TOOL_ERROR:
// which call failed.
type ToolErrorPayload struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
}

// StepFinishPayload is the payload of a step-finish event.
type StepFinishPayload struct {
	StepIndex    int    `json:"stepIndex"`
	StepType     string `json:"stepType"`
	FinishReason string `json:"finishReason"`
	Usage        Usage  `json:"usage"`
}

// RunFinishPayload is the payload of a run-finish event.
type RunFinishPayload struct {
	FinishReason string `json:"finishReason"`
	Usage        Usage  `json:"usage"`
	// Cost is what the run's usage cost.
	Cost Cost `json:"cost"`
	// Tripwire is set when a processor stopped the run (finishReason
	// "other"), and TripwireReason says why; both absent otherwise.
	Tripwire       bool   `json:"tripwire,omitempty"`
	TripwireReason string `json:"tripwireReason,omitempty"`
}
