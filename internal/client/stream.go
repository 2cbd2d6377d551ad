package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"sync"

	sse "github.com/tmaxmax/go-sse"

	"github.com/companionhq/companion/internal/api"
)

// Event is one event of a run's stream: its id in the run and the event,
// its Payload decoded to the api type of its kind (api.StartPayload,
// api.StepStartPayload, api.ToolCallStreamingStartPayload,
// api.ToolCallDeltaPayload, api.ToolCallStreamingEndPayload, api.ToolCall
// for tool-call, api.ToolResult for tool-result, api.StepFinishPayload,
// api.RunFinishPayload, api.ToolErrorPayload for a tool's error event), nil
// when the event has none, or json.RawMessage for a type this client does
// not know. A start's payload carries the notices the user must be told
// with the reply (Notices), a run-finish's whether a safety processor
// stopped the run (Tripwire).
type Event struct {
	// ID is the event's number in the run (its SSE id): 1, 2, 3...
	ID int64
	api.Event
}

// Notices are the notices of a start event, in the order the service sent
// them: that the user talks to an AI (api.NoticeAIDisclosure), to take a
// break (api.NoticeBreakReminder), where to find help
// (api.NoticeCrisisReferral). They are nil for any other event, and for a
// start without any.
func (e Event) Notices() []api.Notice {
	p, ok := e.Payload.(api.StartPayload)
	if !ok {
		return nil
	}
	return p.Notices
}

// Tripwire reports whether e is the run-finish of a run a safety processor
// stopped, and why (the service's tripwireReason, such as "crisis: suicidal
// ideation"). What the user is to read of such a run came before, as text
// events.
func (e Event) Tripwire() (reason string, tripped bool) {
	p, ok := e.Payload.(api.RunFinishPayload)
	if !ok || !p.Tripwire {
		return "", false
	}
	return p.TripwireReason, true
}

// ErrBroken is the error of a stream that broke off before its run-finish
// and could not be resumed.
var ErrBroken = errors.New("the stream broke off before the run finished")

// Stream is the event stream of one run. Read it once with Events, from one
// goroutine, and close it.
type Stream struct {
	c          *Client
	ctx        context.Context
	resourceID string

	runID   string
	last    int64
	resumed int

	mu   sync.Mutex
	body io.ReadCloser
}

// RunID is the run's id, once the stream has given it (with its first
// event).
func (s *Stream) RunID() string { return s.runID }

// LastEventID is the id of the last event read.
func (s *Stream) LastEventID() int64 { return s.last }

// Resumed is how many times the stream was resumed after a break.
func (s *Stream) Resumed() int { return s.resumed }

// Close closes the connection. It does not stop the run: Cancel does.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.body == nil {
		return nil
	}
	err := s.body.Close()
	s.body = nil
	return err
}

// Events yields the run's events until its run-finish. When the
// connection breaks before it, the stream is resumed after the last event
// read, up to the client's MaxResumes times, and the events go on without a
// gap or a repeat; past that it yields an error wrapping ErrBroken. It
// yields ctx's error when the stream's context ends.
func (s *Stream) Events() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			broke, err := s.read(yield)
			if !broke {
				return
			}
			if s.ctx.Err() != nil {
				yield(Event{}, s.ctx.Err())
				return
			}
			if s.runID == "" || s.resumed >= s.c.MaxResumes {
				yield(Event{}, s.brokenErr(err))
				return
			}
			if rerr := s.resume(); rerr != nil {
				if s.ctx.Err() != nil {
					rerr = s.ctx.Err()
				} else {
					rerr = fmt.Errorf("%w, after event %d, and resuming it failed: %w", ErrBroken, s.last, rerr)
				}
				yield(Event{}, rerr)
				return
			}
		}
	}
}

func (s *Stream) brokenErr(cause error) error {
	if cause == nil {
		cause = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w (after event %d): %w", ErrBroken, s.last, cause)
}

// read yields the events of the current connection. broke reports that it
// ended before the run-finish (with the read error, if any), and is false
// once the run has finished or the consumer stopped.
func (s *Stream) read(yield func(Event, error) bool) (broke bool, err error) {
	s.mu.Lock()
	body := s.body
	s.mu.Unlock()
	if body == nil {
		return true, errors.New("the stream is closed")
	}
	for raw, err := range sse.Read(body, &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			return true, err
		}
		ev, derr := decodeEvent(raw)
		if derr != nil {
			// A frame cut short by the break does not decode: resume
			// after the last whole one. Anything else is the service's.
			return true, derr
		}
		if ev.ID != 0 && ev.ID <= s.last {
			continue // already read before a resume
		}
		if ev.ID != 0 {
			s.last = ev.ID
		}
		if s.runID == "" {
			s.runID = ev.RunID
		}
		if !yield(ev, nil) || ev.Type == api.EventRunFinish {
			return false, nil
		}
	}
	return true, nil
}

// resume replaces the broken connection with the run's stream after the
// last event read.
func (s *Stream) resume() error {
	_ = s.Close()
	s.resumed++
	next, err := s.c.Resume(s.ctx, s.runID, s.resourceID, s.last)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.body = next.body
	s.mu.Unlock()
	return nil
}

// wireEvent is an event as it arrives, its payload left raw.
type wireEvent struct {
	Type    string           `json:"type"`
	RunID   string           `json:"runId"`
	Text    string           `json:"text"`
	Payload json.RawMessage  `json:"payload"`
	Error   *api.StreamError `json:"error"`
}

// decodeEvent decodes one SSE frame of the seed dialect.
func decodeEvent(raw sse.Event) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal([]byte(raw.Data), &w); err != nil {
		return Event{}, fmt.Errorf("an event does not decode: %w", err)
	}
	if w.Type == "" {
		return Event{}, errors.New("an event has no type: is the service speaking the seed dialect?")
	}
	ev := Event{Event: api.Event{Type: w.Type, RunID: w.RunID, Text: w.Text, Error: w.Error}}
	if raw.LastEventID != "" {
		id, err := strconv.ParseInt(raw.LastEventID, 10, 64)
		if err != nil {
			return Event{}, fmt.Errorf("an event's id %q is not a number", raw.LastEventID)
		}
		ev.ID = id
	}
	if len(w.Payload) == 0 || string(w.Payload) == "null" {
		return ev, nil
	}
	var err error
	switch w.Type {
	case api.EventStart:
		ev.Payload, err = decodeAs[api.StartPayload](w.Payload)
	case api.EventStepStart:
		ev.Payload, err = decodeAs[api.StepStartPayload](w.Payload)
	case api.EventToolCallInputStreamingStart:
		ev.Payload, err = decodeAs[api.ToolCallStreamingStartPayload](w.Payload)
	case api.EventToolCallDelta:
		ev.Payload, err = decodeAs[api.ToolCallDeltaPayload](w.Payload)
	case api.EventToolCallInputStreamingEnd:
		ev.Payload, err = decodeAs[api.ToolCallStreamingEndPayload](w.Payload)
	case api.EventToolCall:
		ev.Payload, err = decodeAs[api.ToolCall](w.Payload)
	case api.EventToolResult:
		ev.Payload, err = decodeAs[api.ToolResult](w.Payload)
	case api.EventStepFinish:
		ev.Payload, err = decodeAs[api.StepFinishPayload](w.Payload)
	case api.EventRunFinish:
		ev.Payload, err = decodeAs[api.RunFinishPayload](w.Payload)
	case api.EventError:
		ev.Payload, err = decodeAs[api.ToolErrorPayload](w.Payload)
	default:
		ev.Payload = w.Payload
	}
	if err != nil {
		return Event{}, fmt.Errorf("the payload of a %s event does not decode: %w", w.Type, err)
	}
	return ev, nil
}

func decodeAs[T any](b json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}
