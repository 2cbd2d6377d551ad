package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	sse "github.com/tmaxmax/go-sse"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
)

// eventWriter writes a run's events as Server-Sent Events, one
// `data: {json}` frame per event, flushed per event.
//
// It holds back the opening events (start, step-start) until the model has
// produced something: a run that fails before that, because its input is
// refused or the model is unreachable, still gets a real HTTP status and a
// JSON error body instead of a stream. The run's own terminal events (error,
// run-finish) are held too while nothing has been sent, for the same reason.
type eventWriter struct {
	w       http.ResponseWriter
	session *sse.Session
	// buf and enc encode each event, reused from one to the next.
	buf   bytes.Buffer
	enc   *json.Encoder
	held  []api.Event
	runID string
	// usage sums the usage of the steps finished so far.
	usage model.Usage
	// committed is set once headers are out: errors must go in-band.
	committed bool
	// finished is set once a run-finish went out.
	finished bool
	// onFirst is called once, when the first event is written, and
	// onFirstText when the first text event is.
	onFirst, onFirstText func()
}

func newEventWriter(w http.ResponseWriter, r *http.Request) (*eventWriter, error) {
	s, err := sse.Upgrade(w, r)
	if err != nil {
		return nil, fmt.Errorf("streaming is not supported by this connection: %w", err)
	}
	e := &eventWriter{w: w, session: s}
	e.enc = newEncoder(&e.buf)
	return e, nil
}

// Emit is the run's agent.Emit: it writes ev in the seed dialect.
func (e *eventWriter) Emit(ev agent.Event) error {
	switch ev := ev.(type) {
	case agent.RunStarted:
		e.runID = ev.RunID
	case agent.StepFinished:
		e.usage = e.usage.Add(ev.Usage)
	}
	return e.emit(seedEvent(e.runID, ev))
}

// finish ends the stream of a run that finished: run-finish.
func (e *eventWriter) finish(reason string) error {
	return e.emit(api.Event{Type: api.EventRunFinish, RunID: e.runID, Payload: api.RunFinishPayload{FinishReason: reason, Usage: usageOf(e.usage)}})
}

// fail ends the stream of a run that failed after it started: an error
// event, then run-finish.
func (e *eventWriter) fail(se api.StreamError) error {
	if err := e.emit(api.Event{Type: api.EventError, RunID: e.runID, Error: &se}); err != nil {
		return err
	}
	return e.emit(api.Event{Type: api.EventRunFinish, RunID: e.runID, Payload: api.RunFinishPayload{FinishReason: api.FinishError, Usage: usageOf(e.usage)}})
}

func (e *eventWriter) emit(ev api.Event) error {
	if !e.committed {
		switch ev.Type {
		case api.EventStart, api.EventStepStart, api.EventError, api.EventRunFinish:
			e.held = append(e.held, ev)
			return nil
		}
	}
	if !e.committed {
		if err := e.commit(); err != nil {
			return err
		}
	}
	return e.write(ev)
}

// commit sends the headers and the held events. The handler calls it at the
// end of a successful run that had nothing but held events.
func (e *eventWriter) commit() error {
	if e.committed {
		return nil
	}
	h := e.w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	e.committed = true
	held := e.held
	e.held = nil
	for _, ev := range held {
		if err := e.write(ev); err != nil {
			return err
		}
	}
	return nil
}

func (e *eventWriter) write(ev api.Event) error {
	e.buf.Reset()
	if err := e.enc.Encode(ev); err != nil {
		return fmt.Errorf("encoding %s event: %w", ev.Type, err)
	}
	var m sse.Message
	m.AppendData(string(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))))
	if err := e.session.Send(&m); err != nil {
		return err
	}
	if err := e.session.Flush(); err != nil {
		return err
	}
	if e.onFirst != nil {
		e.onFirst()
		e.onFirst = nil
	}
	if ev.Type == api.EventText && e.onFirstText != nil {
		e.onFirstText()
		e.onFirstText = nil
	}
	if ev.Type == api.EventRunFinish {
		e.finished = true
	}
	return nil
}

// abort ends a committed stream that broke off without its terminal frame
// (a panic): an error event, then run-finish, so clients never see a silent
// cut.
func (e *eventWriter) abort(message string) {
	if !e.committed || e.finished {
		return
	}
	_ = e.write(api.Event{Type: api.EventError, RunID: e.runID, Error: &api.StreamError{Message: message, Code: api.CodeInternal}})
	_ = e.write(api.Event{Type: api.EventRunFinish, RunID: e.runID, Payload: api.RunFinishPayload{FinishReason: api.FinishError}})
}
