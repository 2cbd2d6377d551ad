package run

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// The format of a run's records in its log, as other instances read them
// from Redis. During a rolling deploy two versions of the service share one
// Redis, each reading the records the other writes, so every name is
// spelled out here rather than taken from the Go names of agent's events:
// renaming a field there fails to compile here, or changes nothing.
//
// Format 1 is the one the service wrote before formats had a number: its
// keys are the Go names its records then had (RunID, Usage, ...), and its
// records carry no "v". testdata/records-v1.jsonl holds records written by
// that version; the tests decode them and write them again byte for byte.
//
// A new format takes two deploys: first a version that reads it, and still
// writes the one before, replaces every instance; then a version that writes
// it, with "v" set. A reader that meets a record of a format newer than its
// Version does not guess at it: Decode returns ErrUnknownFormat, and the
// stream reading the record ends as it does at a record that does not decode.
// (Versions from before formats had a number ignore "v" and take from a
// record what they recognise; hence the first deploy.) A new kind of record
// within a format reaches older readers as a Record with no field set, which
// a stream skips: only a kind they may skip can come without a new format.

// Version is the format of the records this version writes, and the newest
// it reads.
const Version = 1

// ErrUnknownFormat is returned by Decode for a record of a format newer than
// Version: one written by a newer version of the service.
var ErrUnknownFormat = errors.New("run: a record of a newer format than this version reads")

// wireRecord is a Record in the log: one of its events is set.
type wireRecord struct {
	// V is the record's format; absent (0) in format 1.
	V          int                   `json:"v,omitempty"`
	Start      *wireRunStarted       `json:"start,omitempty"`
	StepStart  *wireStepStarted      `json:"stepStart,omitempty"`
	Text       *wireTextDelta        `json:"text,omitempty"`
	InputStart *wireToolInputStarted `json:"inputStart,omitempty"`
	InputDelta *wireToolInputDelta   `json:"inputDelta,omitempty"`
	InputEnd   *wireToolInputEnded   `json:"inputEnd,omitempty"`
	Call       *wireToolCalled       `json:"call,omitempty"`
	ToolFailed *wireToolFailed       `json:"toolFailed,omitempty"`
	Returned   *wireToolReturned     `json:"returned,omitempty"`
	StepFinish *wireStepFinished     `json:"stepFinish,omitempty"`
	Failed     *wireFailed           `json:"failed,omitempty"`
	Finished   *wireFinished         `json:"finished,omitempty"`
}

// The events of strings and numbers only: a pointer to one converts to a
// pointer to its wire type and back at no cost (the two differ in their
// tags only), and a field added to or renamed in the event stops the
// conversion compiling.
type (
	wireTextDelta struct {
		Text string `json:"Text"`
	}
	wireToolInputStarted struct {
		CallID string `json:"CallID"`
		Tool   string `json:"Tool"`
	}
	wireToolInputDelta struct {
		CallID string `json:"CallID"`
		Tool   string `json:"Tool"`
		Delta  string `json:"Delta"`
	}
	wireToolInputEnded struct {
		CallID string `json:"CallID"`
	}
	wireToolFailed struct {
		CallID  string `json:"CallID"`
		Tool    string `json:"Tool"`
		Message string `json:"Message"`
	}
	wireFailed struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Kind       string `json:"kind"`
		Error      string `json:"error"`
		RetryAfter int    `json:"retryAfter,omitempty"`
	}
)

// The events with values of named types in them are copied: field by field,
// or by conversion where the two differ in their tags only (a tool call and
// result, usage, cost), which stops compiling when those types change.
type (
	wireRunStarted struct {
		RunID       string `json:"RunID"`
		ThreadID    string `json:"ThreadID"`
		ResourceID  string `json:"ResourceID"`
		Personality string `json:"Personality"`
		TraceID     string `json:"TraceID"`
		MessageID   string `json:"MessageID"`
		// Notices came with format 1 unchanged: a reader without them
		// skips them, and its stream tells no notices.
		Notices []wireNotice `json:"notices,omitempty"`
	}
	wireNotice struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	wireStepStarted struct {
		Index     int    `json:"Index"`
		Kind      string `json:"Kind"`
		MessageID string `json:"MessageID"`
	}
	wireToolCalled struct {
		Call wireToolCall `json:"Call"`
	}
	wireToolCall struct {
		ID   string          `json:"ID"`
		Name string          `json:"Name"`
		Args json.RawMessage `json:"Args"`
	}
	wireToolReturned struct {
		Result wireToolResult `json:"Result"`
	}
	wireToolResult struct {
		CallID string          `json:"CallID"`
		Tool   string          `json:"Tool"`
		Output json.RawMessage `json:"Output"`
		Error  string          `json:"Error"`
	}
	wireStepFinished struct {
		Index        int       `json:"Index"`
		Kind         string    `json:"Kind"`
		FinishReason string    `json:"FinishReason"`
		Usage        wireUsage `json:"Usage"`
		Cost         wireCost  `json:"Cost"`
	}
	wireFinished struct {
		Reason string    `json:"reason"`
		Usage  wireUsage `json:"usage"`
		Cost   wireCost  `json:"cost"`
		// The tripwire came with format 1 unchanged, as notices did.
		Tripwire       bool   `json:"tripwire,omitempty"`
		TripwireReason string `json:"tripwireReason,omitempty"`
	}
	wireUsage struct {
		InputTokens       int `json:"InputTokens"`
		OutputTokens      int `json:"OutputTokens"`
		TotalTokens       int `json:"TotalTokens"`
		ReasoningTokens   int `json:"ReasoningTokens"`
		CachedInputTokens int `json:"CachedInputTokens"`
	}
	wireCost struct {
		Input       float64 `json:"Input"`
		CachedInput float64 `json:"CachedInput"`
		Output      float64 `json:"Output"`
	}
)

// encoder encodes the records of one run, one at a time, in memory of its
// own: of a record's encoding, only its bytes are new.
type encoder struct {
	w          wireRecord
	start      wireRunStarted
	stepStart  wireStepStarted
	call       wireToolCalled
	returned   wireToolReturned
	stepFinish wireStepFinished
	finished   wireFinished
}

// encode is rec's bytes in the log, in format Version. They are rec's to
// keep: the encoder does not reuse them.
func (e *encoder) encode(rec *Record) ([]byte, error) {
	// Format 1 writes no "v".
	e.w = wireRecord{
		Text:       (*wireTextDelta)(rec.Text),
		InputStart: (*wireToolInputStarted)(rec.InputStart),
		InputDelta: (*wireToolInputDelta)(rec.InputDelta),
		InputEnd:   (*wireToolInputEnded)(rec.InputEnd),
		ToolFailed: (*wireToolFailed)(rec.ToolFailed),
		Failed:     (*wireFailed)(rec.Failed),
	}
	if ev := rec.Start; ev != nil {
		e.start = wireRunStarted{RunID: ev.RunID, ThreadID: ev.ThreadID, ResourceID: ev.ResourceID,
			Personality: string(ev.Personality), TraceID: ev.TraceID, MessageID: ev.MessageID}
		for _, n := range ev.Notices {
			e.start.Notices = append(e.start.Notices, wireNotice(n))
		}
		e.w.Start = &e.start
	}
	if ev := rec.StepStart; ev != nil {
		e.stepStart = wireStepStarted{Index: ev.Index, Kind: string(ev.Kind), MessageID: ev.MessageID}
		e.w.StepStart = &e.stepStart
	}
	if ev := rec.Call; ev != nil {
		e.call = wireToolCalled{Call: wireToolCall(ev.Call)}
		e.w.Call = &e.call
	}
	if ev := rec.Returned; ev != nil {
		e.returned = wireToolReturned{Result: wireToolResult(ev.Result)}
		e.w.Returned = &e.returned
	}
	if ev := rec.StepFinish; ev != nil {
		e.stepFinish = wireStepFinished{Index: ev.Index, Kind: string(ev.Kind), FinishReason: ev.FinishReason,
			Usage: wireUsage(ev.Usage), Cost: wireCost(ev.Cost)}
		e.w.StepFinish = &e.stepFinish
	}
	if f := rec.Finished; f != nil {
		e.finished = wireFinished{Reason: f.Reason, Usage: wireUsage(f.Usage), Cost: wireCost(f.Cost), Tripwire: f.Tripwire, TripwireReason: f.TripwireReason}
		e.w.Finished = &e.finished
	}
	return json.Marshal(&e.w)
}

// Decoder decodes the records of one reader, one at a time, in memory of
// its own: of a record's decoding, only the Record and its event are new.
// The zero Decoder is ready to use.
type Decoder struct{ w wireRecord }

// Decode decodes one record (Decoder.Decode).
func Decode(data []byte) (*Record, error) { return new(Decoder).Decode(data) }

// Decode decodes a record of a run's log, of format Version or one before;
// a record of a newer format is ErrUnknownFormat. The Record is the
// caller's to keep: the Decoder does not reuse it.
func (d *Decoder) Decode(data []byte) (*Record, error) {
	w := &d.w
	*w = wireRecord{}
	err := json.Unmarshal(data, w)
	// The format first: a newer one may not even decode.
	if w.V < 0 || w.V > Version {
		return nil, fmt.Errorf("%w: format %d, this version reads up to %d", ErrUnknownFormat, w.V, Version)
	}
	if err != nil {
		return nil, err
	}
	rec := &Record{
		Text:       (*agent.TextDelta)(w.Text),
		InputStart: (*agent.ToolInputStarted)(w.InputStart),
		InputDelta: (*agent.ToolInputDelta)(w.InputDelta),
		InputEnd:   (*agent.ToolInputEnded)(w.InputEnd),
		ToolFailed: (*agent.ToolFailed)(w.ToolFailed),
		Failed:     (*Failed)(w.Failed),
	}
	if s := w.Start; s != nil {
		rec.Start = &agent.RunStarted{RunID: s.RunID, ThreadID: s.ThreadID, ResourceID: s.ResourceID,
			Personality: agent.Personality(s.Personality), TraceID: s.TraceID, MessageID: s.MessageID}
		for _, n := range s.Notices {
			rec.Start.Notices = append(rec.Start.Notices, agent.Notice(n))
		}
	}
	if s := w.StepStart; s != nil {
		rec.StepStart = &agent.StepStarted{Index: s.Index, Kind: agent.StepKind(s.Kind), MessageID: s.MessageID}
	}
	if c := w.Call; c != nil {
		rec.Call = &agent.ToolCalled{Call: agent.ToolCall(c.Call)}
	}
	if r := w.Returned; r != nil {
		rec.Returned = &agent.ToolReturned{Result: agent.ToolResult(r.Result)}
	}
	if s := w.StepFinish; s != nil {
		rec.StepFinish = &agent.StepFinished{Index: s.Index, Kind: agent.StepKind(s.Kind), FinishReason: s.FinishReason,
			Usage: model.Usage(s.Usage), Cost: pricing.Cost(s.Cost)}
	}
	if f := w.Finished; f != nil {
		rec.Finished = &Finished{Reason: f.Reason, Usage: model.Usage(f.Usage), Cost: pricing.Cost(f.Cost), Tripwire: f.Tripwire, TripwireReason: f.TripwireReason}
	}
	return rec, nil
}
