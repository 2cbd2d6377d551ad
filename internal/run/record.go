package run

import (
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// Record is one entry of a run's log: one of its fields is set. The run
// hands the Record itself to the readers in its own process, beside its
// bytes (runlog.Entry.Value), so that they need not decode it; readers
// elsewhere decode the bytes (Decode; wire.go has their format).
type Record struct {
	Start      *agent.RunStarted
	StepStart  *agent.StepStarted
	Text       *agent.TextDelta
	InputStart *agent.ToolInputStarted
	InputDelta *agent.ToolInputDelta
	InputEnd   *agent.ToolInputEnded
	Call       *agent.ToolCalled
	ToolFailed *agent.ToolFailed
	Returned   *agent.ToolReturned
	StepFinish *agent.StepFinished
	// Failed and Finished end a run: a failed run has both, in this order.
	Failed   *Failed
	Finished *Finished
}

// Failed is how a run failed: in-band (Code, Message) for a stream that
// has started, and as an error for one that has not (Kind, the apperr code
// its status comes from; Error; RetryAfter in seconds).
type Failed struct {
	Code       string
	Message    string
	Kind       string
	Error      string
	RetryAfter int
}

// Err is f as the error a stream that has not started answers with.
func (f *Failed) Err() error {
	return (&apperr.Error{Code: apperr.Code(f.Kind), Message: f.Error}).After(time.Duration(f.RetryAfter) * time.Second)
}

// Finished ends a run: its finish reason, and the usage of its steps and
// what it cost.
type Finished struct {
	Reason string
	Usage  model.Usage
	Cost   pricing.Cost
	// Tripwire is set when a processor stopped the run, and
	// TripwireReason says why.
	Tripwire       bool
	TripwireReason string
}

// Opening reports whether rec is held back until the model produced
// something: a run that fails before that gets a real status.
func (rec *Record) Opening() bool { return rec.Start != nil || rec.StepStart != nil }

// Event is the domain event rec holds, or nil for a run's end.
func (rec *Record) Event() agent.Event {
	switch {
	case rec.Start != nil:
		return *rec.Start
	case rec.StepStart != nil:
		return *rec.StepStart
	case rec.Text != nil:
		return *rec.Text
	case rec.InputStart != nil:
		return *rec.InputStart
	case rec.InputDelta != nil:
		return *rec.InputDelta
	case rec.InputEnd != nil:
		return *rec.InputEnd
	case rec.Call != nil:
		return *rec.Call
	case rec.ToolFailed != nil:
		return *rec.ToolFailed
	case rec.Returned != nil:
		return *rec.Returned
	case rec.StepFinish != nil:
		return *rec.StepFinish
	}
	return nil
}

// recordOf is ev as a record of the run's log.
func recordOf(ev agent.Event) *Record {
	switch e := ev.(type) {
	case agent.RunStarted:
		return &Record{Start: &e}
	case agent.StepStarted:
		return &Record{StepStart: &e}
	case agent.TextDelta:
		return &Record{Text: &e}
	case agent.ToolInputStarted:
		return &Record{InputStart: &e}
	case agent.ToolInputDelta:
		return &Record{InputDelta: &e}
	case agent.ToolInputEnded:
		return &Record{InputEnd: &e}
	case agent.ToolCalled:
		return &Record{Call: &e}
	case agent.ToolFailed:
		return &Record{ToolFailed: &e}
	case agent.ToolReturned:
		return &Record{Returned: &e}
	case agent.StepFinished:
		return &Record{StepFinish: &e}
	}
	return &Record{}
}
