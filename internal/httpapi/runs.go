package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/aside"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/runlog"
)

// A streamed run is a log, and a stream is a reader of it: the run goes on
// in a goroutine of its own, appending each domain event to the run's log
// (internal/runlog) under a gap-free id, then the run's end; every
// connection that streams the run follows the log after an id and writes
// the records it reads in its dialect. A connection that breaks can be
// resumed (GET .../runs/{runId}/stream with Last-Event-ID) on this
// instance, or on any other when the log is shared through Redis.

// record is one entry of a run's log: one of its fields is set.
type record struct {
	Start      *agent.RunStarted       `json:"start,omitempty"`
	StepStart  *agent.StepStarted      `json:"stepStart,omitempty"`
	Text       *agent.TextDelta        `json:"text,omitempty"`
	InputStart *agent.ToolInputStarted `json:"inputStart,omitempty"`
	InputDelta *agent.ToolInputDelta   `json:"inputDelta,omitempty"`
	InputEnd   *agent.ToolInputEnded   `json:"inputEnd,omitempty"`
	Call       *agent.ToolCalled       `json:"call,omitempty"`
	ToolFailed *agent.ToolFailed       `json:"toolFailed,omitempty"`
	Returned   *agent.ToolReturned     `json:"returned,omitempty"`
	StepFinish *agent.StepFinished     `json:"stepFinish,omitempty"`
	// Failed and Finished end a run: a failed run has both, in this order.
	Failed   *runFailed   `json:"failed,omitempty"`
	Finished *runFinished `json:"finished,omitempty"`
}

// runFailed is how a run failed: in-band (Code, Message) for a stream that
// has started, and as an error for one that has not (Kind, the apperr code
// its status comes from; Error; RetryAfter in seconds).
type runFailed struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Kind       string `json:"kind"`
	Error      string `json:"error"`
	RetryAfter int    `json:"retryAfter,omitempty"`
}

// failedOf is err as a run's failure record.
func failedOf(err error) *runFailed {
	ae := classify(err)
	ib := inBand(err)
	return &runFailed{Code: ib.Code, Message: ib.Message, Kind: string(ae.Code), Error: ae.Message,
		RetryAfter: retrySeconds(retryAfterOf(err, ae))}
}

// err is f as the error a stream that has not started answers with.
func (f *runFailed) err() error {
	return (&apperr.Error{Code: apperr.Code(f.Kind), Message: f.Error}).After(time.Duration(f.RetryAfter) * time.Second)
}

// runFinished ends a run: its finish reason, and the usage of its steps
// and what it cost.
type runFinished struct {
	Reason string       `json:"reason"`
	Usage  model.Usage  `json:"usage"`
	Cost   pricing.Cost `json:"cost"`
}

// opening reports whether rec is held back until the model produced
// something: a run that fails before that gets a real status.
func (rec *record) opening() bool { return rec.Start != nil || rec.StepStart != nil }

func recordOf(ev agent.Event) record {
	switch e := ev.(type) {
	case agent.RunStarted:
		return record{Start: &e}
	case agent.StepStarted:
		return record{StepStart: &e}
	case agent.TextDelta:
		return record{Text: &e}
	case agent.ToolInputStarted:
		return record{InputStart: &e}
	case agent.ToolInputDelta:
		return record{InputDelta: &e}
	case agent.ToolInputEnded:
		return record{InputEnd: &e}
	case agent.ToolCalled:
		return record{Call: &e}
	case agent.ToolFailed:
		return record{ToolFailed: &e}
	case agent.ToolReturned:
		return record{Returned: &e}
	case agent.StepFinished:
		return record{StepFinish: &e}
	}
	return record{}
}

// runs keeps the streamed runs this instance is running.
type runs struct {
	log runlog.Log
	// grace is how long a run whose readers all left goes on, waiting for
	// one to resume it; 0 cancels it when its first connection breaks.
	grace time.Duration
	mu    sync.Mutex
	live  map[string]*liveRun
	wg    sync.WaitGroup
	// stopCtx ends at the end of a shutdown's grace period: every run
	// ends with it.
	stopCtx context.Context
	stopAll context.CancelFunc
}

// liveRun is a run in progress on this instance.
type liveRun struct {
	w      runlog.Writer
	cancel context.CancelCauseFunc
}

// Causes of a run's cancellation.
var (
	errCancelled = errors.New("the run was cancelled by a request to cancel it")
	errAbandoned = errors.New("the run's stream broke off and was not resumed")
	errShutdown  = errors.New("the server is shutting down")
)

func newRuns(log runlog.Log, grace time.Duration) *runs {
	rs := &runs{log: log, grace: grace, live: map[string]*liveRun{}}
	rs.stopCtx, rs.stopAll = context.WithCancel(context.Background())
	return rs
}

// start starts in as a streamed run and returns its id once its log
// exists. The run's context keeps the request's values (its span, its
// request id) but not its cancellation: it ends when the run is cancelled,
// abandoned, too long, or the server stops.
func (s *Server) startRun(r *http.Request, in *agent.Input) (string, error) {
	in.RunID = uuid.NewString()
	w, err := s.runs.log.Start(r.Context(), runlog.Meta{RunID: in.RunID, ThreadID: in.ThreadID, ResourceID: in.ResourceID, Started: time.Now()})
	if err != nil {
		return "", apperr.Wrap(apperr.Unavailable, err, "the run could not be started: the details are in the server log")
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, s.cfg.Limits.MaxRunDuration, agent.ErrRunTimeout)
	lr := &liveRun{w: w, cancel: cancel}
	rs := s.runs
	rs.mu.Lock()
	rs.live[in.RunID] = lr
	rs.mu.Unlock()
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		defer func() {
			cancelTimeout()
			cancel(nil)
			rs.mu.Lock()
			delete(rs.live, in.RunID)
			rs.mu.Unlock()
			if err := w.End(context.WithoutCancel(ctx)); err != nil {
				s.log.LogAttrs(ctx, slog.LevelWarn, "the run's log could not be ended", slog.String("run_id", in.RunID), errAttr(err))
			}
		}()
		// Callbacks, not a goroutine watching both: an open stream costs
		// a goroutine less.
		defer context.AfterFunc(w.Cancelled(), func() { cancel(errCancelled) })()
		defer context.AfterFunc(rs.stopCtx, func() { cancel(errShutdown) })()
		s.execute(ctx, *in, w)
	}()
	return in.RunID, nil
}

// execute runs in, appending its events to w, then its end.
func (s *Server) execute(ctx context.Context, in agent.Input, w runlog.Writer) {
	var usage model.Usage
	var cost pricing.Cost
	appendRec := func(rec record) error {
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encoding a run record: %w", err)
		}
		// The record itself goes with its bytes: this process's streams
		// write it without decoding it again.
		_, err = w.Append(context.WithoutCancel(ctx), b, &rec)
		return err
	}
	defer func() {
		// A panic in the run still ends its stream.
		if p := recover(); p != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "panic in a run", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			_ = appendRec(record{Failed: failedOf(apperr.Wrap(apperr.Internal, fmt.Errorf("panic: %v", p), "internal server error: the details are in the server log"))})
			_ = appendRec(record{Finished: &runFinished{Reason: model.FinishError, Usage: usage, Cost: cost}})
		}
	}()
	res, err := s.cfg.Runner.Run(ctx, in, func(ev agent.Event) error {
		if sf, ok := ev.(agent.StepFinished); ok {
			usage = usage.Add(sf.Usage)
			cost = cost.Add(sf.Cost)
		}
		return appendRec(recordOf(ev))
	})
	s.countQuota(err)
	if err == nil {
		err = appendRec(record{Finished: &runFinished{Reason: res.FinishReason, Usage: res.Usage, Cost: res.Cost}})
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "the run's end could not be logged", errAttr(err))
		}
		return
	}
	s.log.LogAttrs(ctx, levelOf(err), "stream ended with an error", errAttr(err))
	_ = appendRec(record{Failed: failedOf(err)})
	_ = appendRec(record{Finished: &runFinished{Reason: model.FinishError, Usage: usage, Cost: cost}})
}

// left is told that a reader of runID on this instance went away. When
// nobody reads the run within the grace period, it is cancelled: a closed
// connection no longer means stop, unless no one comes back for the run.
func (rs *runs) left(runID string, abandoned bool) {
	rs.mu.Lock()
	lr := rs.live[runID]
	rs.mu.Unlock()
	if lr == nil || !abandoned {
		return
	}
	if rs.grace <= 0 {
		lr.cancel(errAbandoned)
		return
	}
	time.AfterFunc(rs.grace, func() {
		if lr.w.Readers() == 0 {
			lr.cancel(errAbandoned)
		}
	})
}

// CancelRuns cancels every run in progress: their streams end with an error
// event (CANCELLED) and run-finish.
func (s *Server) CancelRuns() {
	s.runs.stopAll()
}

// WaitRuns waits until the runs in progress have ended, or ctx does.
func (s *Server) WaitRuns(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.runs.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// followRun writes run runID's records after after to w, in d's dialect,
// until the run has ended or the client has gone. A fresh stream (the
// request that started the run, which arrived at arrived; zero for a
// resumed one) holds the opening records back until the model has produced
// something, so that a run failing before that gets a status and a JSON
// body instead, and times its first event and text from its arrival.
func (s *Server) followRun(w http.ResponseWriter, r *http.Request, runID string, after int64, d dialect, arrived time.Time) {
	ew, err := newFrameWriter(w, r, d, runID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.obs.StreamOpened()
	defer s.obs.StreamClosed()
	f := &follower{s: s, w: w, r: r, runID: runID, after: after, ew: ew, committed: arrived.IsZero()}
	if !arrived.IsZero() {
		// A resumed stream's replayed records would time nothing.
		ew.onFirst = func() { s.obs.StreamFirstEvent(time.Since(arrived)) }
		ew.onFirstText = func() { s.obs.StreamFirstText(time.Since(arrived)) }
	}
	defer func() { s.runs.left(runID, !f.ended) }()

	// A dialect that keeps state across records (an open text block) reads
	// from the start even when resuming: the records up to after go to it
	// unwritten, so that it goes on as if the stream had never broken.
	from := after
	if d.stateful() {
		from = 0
	}
	for entry, err := range s.runs.log.Follow(r.Context(), runID, from) {
		if err != nil {
			f.failed(err)
			return
		}
		if !f.next(entry) {
			return
		}
	}
	if !f.committed {
		_ = f.flushHeld(false)
	}
}

// follower is followRun's state.
type follower struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	runID string
	after int64
	ew    *frameWriter
	// held are the opening records held back until the stream commits.
	held []heldRecord
	// committed is set once a record went out (at once for a resumed
	// stream); ended once the run's end was read.
	committed, ended bool
}

// next handles one entry of the run's log and reports whether to go on.
//
// Its frames are on the connection's stack while the stream writes, under
// the dialect's encoding and net/http's writing: what is rare (a record to
// decode, an error) is in methods of its own, so that the whole fits in the
// goroutine's first 8 KiB (docs/performance.md).
func (f *follower) next(entry runlog.Entry) bool {
	rec, ok := entry.Value.(*record)
	if !ok {
		if rec = f.decode(entry.Data); rec == nil {
			return false
		}
	}
	if rec.Finished != nil {
		f.ended = true
	}
	if entry.Seq <= f.after {
		f.ew.skip(rec)
		return true
	}
	if !f.committed {
		switch {
		case rec.opening():
			f.held = append(f.held, heldRecord{entry.Seq, rec})
			return true
		case rec.Failed != nil:
			f.failedBeforeOutput(rec.Failed)
			return false
		}
		f.committed = true
		if f.flushHeld(true) != nil {
			return false
		}
	}
	if err := f.ew.write(entry.Seq, rec, entry.More); err != nil {
		return false
	}
	if rec.Finished != nil {
		_ = f.ew.end()
		return false
	}
	return true
}

// decode decodes a record read from Redis (a run of another instance), or
// logs why it cannot and returns nil. Decoding goes as deep as the record's
// JSON, so it goes aside: the connection's goroutine waits for the run for
// as long as it lasts, and would keep the stack the deepest call needed.
func (f *follower) decode(data []byte) *record {
	var (
		rec *record
		err error
	)
	aside.Do(func() { rec, err = decodeRecord(data) })
	if err != nil {
		f.s.log.LogAttrs(f.r.Context(), slog.LevelError, "a run record does not decode", slog.String("run_id", f.runID), errAttr(err))
		return nil
	}
	return rec
}

// failedBeforeOutput answers a run that failed when nothing but its opening
// records had gone out: with a real status.
func (f *follower) failedBeforeOutput(failed *runFailed) {
	f.s.writeError(f.w, f.r, failed.err())
	f.ended = true
}

// failed reports that reading the run's log failed, unless the client left.
func (f *follower) failed(err error) {
	ctx := f.r.Context()
	if ctx.Err() != nil {
		return
	}
	f.s.log.LogAttrs(ctx, slog.LevelWarn, "following a run failed", slog.String("run_id", f.runID), errAttr(err))
	if !f.committed {
		f.s.writeError(f.w, f.r, apperr.Wrap(apperr.Unavailable, err, "the run's events could not be read: the details are in the server log"))
		f.ended = true
	}
}

// flushHeld writes the opening records held back (write commits the
// stream's headers), and flushes them unless more records follow.
func (f *follower) flushHeld(more bool) error {
	for i, h := range f.held {
		if err := f.ew.write(h.seq, h.rec, more || i < len(f.held)-1); err != nil {
			return err
		}
	}
	f.held = nil
	return nil
}

// decodeRecord decodes a record of a run's log.
func decodeRecord(data []byte) (*record, error) {
	rec := new(record)
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

type heldRecord struct {
	seq int64
	rec *record
}

// event is the domain event rec holds, or nil for a run's end.
func (rec *record) event() agent.Event {
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
