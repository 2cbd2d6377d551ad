package agent

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// Name is the agent's name: companionAgent.
const Name = "companionAgent"

// StepKind says what a step follows: the run's start, or a round of tool
// results.
type StepKind string

// The step kinds.
const (
	StepInitial    StepKind = "initial"
	StepToolResult StepKind = "tool-result"
)

// Event is something a run reports while it happens. A run reports, in
// order: RunStarted; for each step StepStarted, the step's TextDelta and
// tool events, StepFinished. A tool call is ToolInputStarted, its
// ToolInputDelta, ToolInputEnded, ToolCalled; its outcome is ToolFailed
// (when it failed) and then ToolReturned, reported in call order once the
// model's answer is complete. The run's end is not an event: Run returns.
type Event interface{ event() }

// RunStarted opens a run. MessageID is the id the reply will be stored
// under.
type RunStarted struct {
	RunID       string
	ThreadID    string
	ResourceID  string
	Personality Personality
	TraceID     string
	MessageID   string
	// Notices are what the user must be told with this reply (Input.Notices).
	Notices []Notice
}

// StepStarted opens step Index. MessageID is the id of the reply the run is
// writing, the same in every step.
type StepStarted struct {
	Index     int
	Kind      StepKind
	MessageID string
}

// TextDelta is a piece of the reply's text.
type TextDelta struct{ Text string }

// ToolInputStarted opens a tool call's arguments.
type ToolInputStarted struct{ CallID, Tool string }

// ToolInputDelta is a piece of a tool call's JSON arguments; a call's deltas
// concatenate to its arguments as the model wrote them.
type ToolInputDelta struct{ CallID, Tool, Delta string }

// ToolInputEnded closes a tool call's arguments.
type ToolInputEnded struct{ CallID string }

// ToolCalled is a complete tool call; its tool starts now.
type ToolCalled struct{ Call ToolCall }

// ToolFailed says a tool call failed; its ToolReturned follows.
type ToolFailed struct {
	CallID, Tool string
	// Message says what failed, for the client and the model alike.
	Message string
}

// ToolReturned is a tool call's outcome.
type ToolReturned struct{ Result ToolResult }

// StepFinished closes step Index.
type StepFinished struct {
	Index        int
	Kind         StepKind
	FinishReason string
	// Usage and Cost are the step's own.
	Usage model.Usage
	Cost  pricing.Cost
}

func (RunStarted) event()       {}
func (StepStarted) event()      {}
func (TextDelta) event()        {}
func (ToolInputStarted) event() {}
func (ToolInputDelta) event()   {}
func (ToolInputEnded) event()   {}
func (ToolCalled) event()       {}
func (ToolFailed) event()       {}
func (ToolReturned) event()     {}
func (StepFinished) event()     {}

// Emit receives a run's events in order. An error stops the run.
type Emit func(Event) error

// ToolCall is one call of a tool by the model, as the model asked for it.
// Args is a JSON object.
type ToolCall = model.ToolCall

// ToolResult is the outcome of a call. Output is the tool's result as
// JSON; for a failed call it is {"error": Error} and Error is set.
type ToolResult struct {
	CallID string
	Tool   string
	Output json.RawMessage
	Error  string
}

// Failed reports whether the call failed.
func (r ToolResult) Failed() bool { return r.Error != "" }

// Warning is something that went wrong without failing the run.
type Warning struct {
	// Kind is "tool-error" or "max-steps".
	Kind    string
	Message string
	CallID  string
	Tool    string
}

// Step is one model call and the tool calls it asked for.
type Step struct {
	Index        int
	Kind         StepKind
	Text         string
	Reasoning    string
	Calls        []ToolCall
	Results      []ToolResult
	Warnings     []Warning
	FinishReason string
	// Usage is the step's; Total is the run's up to and including it.
	Usage, Total model.Usage
	// Cost is what the step's usage cost.
	Cost pricing.Cost
	// Request is what the model was sent, and ModelID the model.
	Request model.Request
	ModelID string
	// ResponseID is the provider's id of the answer (made up when it gave
	// none), Started when the step began.
	ResponseID string
	Started    time.Time
	// ProviderMetadata is what the provider reported, keyed by provider.
	ProviderMetadata map[string]any
	// Messages are the model messages the step added: the assistant's, and
	// one tool message per result.
	Messages []model.Message
}

// Result is a finished run.
type Result struct {
	RunID        string
	TraceID      string
	ThreadID     string
	ResourceID   string
	Personality  Personality
	Started      time.Time
	Steps        []Step
	FinishReason string
	Usage        model.Usage
	Cost         pricing.Cost
	Warnings     []Warning
	// ReplyID is the id of the reply message (the StepStarted MessageID).
	ReplyID string
	// Input are the request's new conversation messages, with their ids
	// (made up where the request gave none); system messages are not among
	// them.
	Input []Message
	// Reply is what the run added to the conversation, in order: assistant
	// messages and the tool messages that answer their calls.
	Reply []model.Message
	// Notices are Input.Notices, and a tripped run's Trip notice.
	Notices []Notice
	// Trip is why a processor stopped the run (FinishReason FinishTripped),
	// nil when none did.
	Trip *Trip
}

// Text is the reply's text: every step's, in order.
func (r *Result) Text() string {
	var n int
	for _, s := range r.Steps {
		n += len(s.Text)
	}
	b := make([]byte, 0, n)
	for _, s := range r.Steps {
		b = append(b, s.Text...)
	}
	return string(b)
}

// RunErrorKind says why a run failed.
type RunErrorKind int

// The ways a run fails.
const (
	// FailedInternal: a failure inside the service.
	FailedInternal RunErrorKind = iota
	// FailedModel: the model failed (the error wraps a *model.Error).
	FailedModel
	// FailedCancelled: the run's context was cancelled (shutdown, a client
	// that asked, or one that went away).
	FailedCancelled
	// FailedTimeout: the run took longer than it may (ErrRunTimeout).
	FailedTimeout
)

// String names the kind as spans report it (error.type): MODEL_ERROR,
// CANCELLED, RUN_TIMEOUT or INTERNAL_ERROR.
func (k RunErrorKind) String() string {
	switch k {
	case FailedModel:
		return "MODEL_ERROR"
	case FailedCancelled:
		return "CANCELLED"
	case FailedTimeout:
		return "RUN_TIMEOUT"
	}
	return "INTERNAL_ERROR"
}

// RunError is a run that failed after it started.
type RunError struct {
	Kind RunErrorKind
	Err  error
	// Usage counts the tokens the run used before it failed, and Cost what
	// they cost.
	Usage model.Usage
	Cost  pricing.Cost
}

func (e *RunError) Error() string {
	var me *model.Error
	switch {
	case e.Kind == FailedTimeout:
		return "the run took longer than it may: " + e.Err.Error()
	case e.Kind == FailedCancelled:
		return "the run was cancelled before it finished: " + e.Err.Error()
	case e.Kind == FailedModel && errors.As(e.Err, &me):
		return me.Provider + " model failed: " + me.Message + ": " + e.Err.Error()
	}
	return "the run failed inside the service: " + e.Err.Error()
}
func (e *RunError) Unwrap() error { return e.Err }
