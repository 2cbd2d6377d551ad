// Package run runs a streamed turn apart from the request that asked for
// it. A run is a log, and a stream is a reader of it: the run goes on in a
// goroutine of its own, appending each domain event to the run's log
// (internal/runlog) under a gap-free id, then the run's end; every
// connection that streams the run follows the log after an id. A
// connection that breaks can be resumed on this instance, or on any other
// when the log is shared through Redis.
//
// Runs starts runs and keeps those of this instance: it cancels one on
// request (from any instance), when its readers left and none came back
// within the resume grace, when it took too long, and all of them at the
// end of a shutdown's grace period, which waits for them. Writing to a
// client is not its business: the HTTP edge follows the log. The format of
// the records, which instances of two versions share during a rolling
// deploy, is in wire.go.
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/runlog"
)

// Runner runs one turn: the agent, with the thread's memory. It calls emit
// for each event, in order, from one goroutine at a time, and not after it
// returned; its result is nil only with an error.
type Runner interface {
	Run(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error)
}

// Config is what Runs needs.
type Config struct {
	// Log keeps the runs' records.
	Log runlog.Log
	// Runner runs a turn.
	Runner Runner
	// Failure is err, a run's failure, as its record: how the edge will
	// name it to a client, in-band and as a status.
	Failure func(err error) *Failed
	// MaxDuration is the longest a run may take: its context then ends
	// with agent.ErrRunTimeout.
	MaxDuration time.Duration
	// Grace is how long a run whose readers all left goes on, waiting for
	// one to resume it; 0 cancels it when its first reader leaves.
	Grace time.Duration
	// Logger gets the runs' failures; nil discards.
	Logger *slog.Logger
}

// Runs keeps the streamed runs this instance is running.
type Runs struct {
	cfg  Config
	log  *slog.Logger
	mu   sync.Mutex
	live map[string]*liveRun
	wg   sync.WaitGroup
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

// Causes of a run's cancellation, as context.Cause reports them to the
// runner.
var (
	// ErrCancelled: a request to cancel the run, to any instance.
	ErrCancelled = errors.New("the run was cancelled by a request to cancel it")
	// ErrAbandoned: the run's readers left and none came back in time.
	ErrAbandoned = errors.New("the run's stream broke off and was not resumed")
	// ErrShutdown: the shutdown's grace period is over (CancelAll).
	ErrShutdown = errors.New("the server is shutting down")
)

// New returns an empty Runs.
func New(cfg Config) *Runs {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rs := &Runs{cfg: cfg, log: cfg.Logger, live: map[string]*liveRun{}}
	rs.stopCtx, rs.stopAll = context.WithCancel(context.Background())
	return rs
}

// Start starts in as a run and returns its id once its log exists. The
// run's context keeps ctx's values (its span, its request id) but not its
// cancellation: it ends when the run is cancelled, abandoned, too long, or
// the server stops.
func (rs *Runs) Start(ctx context.Context, in *agent.Input) (string, error) {
	in.RunID = uuid.NewString()
	w, err := rs.cfg.Log.Start(ctx, runlog.Meta{RunID: in.RunID, ThreadID: in.ThreadID, ResourceID: in.ResourceID, Started: time.Now()})
	if err != nil {
		return "", apperr.Wrap(apperr.Unavailable, err, "the run could not be started: the details are in the server log")
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, rs.cfg.MaxDuration, agent.ErrRunTimeout)
	lr := &liveRun{w: w, cancel: cancel}
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
				rs.log.LogAttrs(ctx, slog.LevelWarn, "the run's log could not be ended", slog.String("run_id", in.RunID), errAttr(err))
			}
		}()
		// Callbacks, not a goroutine watching both: an open stream costs
		// a goroutine less.
		defer context.AfterFunc(w.Cancelled(), func() { cancel(ErrCancelled) })()
		defer context.AfterFunc(rs.stopCtx, func() { cancel(ErrShutdown) })()
		rs.execute(ctx, *in, w)
	}()
	return in.RunID, nil
}

// execute runs in, appending its events to w, then its end.
func (rs *Runs) execute(ctx context.Context, in agent.Input, w runlog.Writer) {
	var usage model.Usage
	var cost pricing.Cost
	// One encoder for the run's records: they are appended one at a time.
	enc := new(encoder)
	appendRec := func(rec *Record) error {
		b, err := enc.encode(rec)
		if err != nil {
			return fmt.Errorf("encoding a run record: %w", err)
		}
		// The record itself goes with its bytes: this process's streams
		// write it without decoding it again.
		_, err = w.Append(context.WithoutCancel(ctx), b, rec)
		return err
	}
	defer func() {
		// A panic in the run still ends its stream.
		if p := recover(); p != nil {
			rs.log.LogAttrs(ctx, slog.LevelError, "panic in a run", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			_ = appendRec(&Record{Failed: rs.cfg.Failure(apperr.Wrap(apperr.Internal, fmt.Errorf("panic: %v", p), "internal server error: the details are in the server log"))})
			_ = appendRec(&Record{Finished: &Finished{Reason: model.FinishError, Usage: usage, Cost: cost}})
		}
	}()
	res, err := rs.cfg.Runner.Run(ctx, in, func(ev agent.Event) error {
		if sf, ok := ev.(agent.StepFinished); ok {
			usage = usage.Add(sf.Usage)
			cost = cost.Add(sf.Cost)
		}
		return appendRec(recordOf(ev))
	})
	if err == nil {
		fin := &Finished{Reason: res.FinishReason, Usage: res.Usage, Cost: res.Cost}
		if res.Trip != nil {
			fin.Tripwire, fin.TripwireReason = true, res.Trip.Reason
		}
		err = appendRec(&Record{Finished: fin})
		if err != nil {
			rs.log.LogAttrs(ctx, slog.LevelError, "the run's end could not be logged", errAttr(err))
		}
		return
	}
	rs.log.LogAttrs(ctx, levelOf(err), "stream ended with an error", errAttr(err))
	_ = appendRec(&Record{Failed: rs.cfg.Failure(err)})
	_ = appendRec(&Record{Finished: &Finished{Reason: model.FinishError, Usage: usage, Cost: cost}})
}

// CancelUnlessResumed is told that a reader of runID on this instance left
// before the run's end. The run is cancelled unless a reader, on any
// instance, follows it when the resume grace is over: a closed connection
// no longer means stop, unless no one comes back for the run. A run this
// instance does not run is left alone.
func (rs *Runs) CancelUnlessResumed(runID string) {
	rs.mu.Lock()
	lr := rs.live[runID]
	rs.mu.Unlock()
	if lr == nil {
		return
	}
	if rs.cfg.Grace <= 0 {
		lr.cancel(ErrAbandoned)
		return
	}
	time.AfterFunc(rs.cfg.Grace, func() {
		if lr.w.Readers() == 0 {
			lr.cancel(ErrAbandoned)
		}
	})
}

// Cancel cancels run runID on whichever instance runs it: it stops at
// once, and its streams end with its failure (ErrCancelled) and its end.
// It returns runlog.ErrNotFound for a run the log does not know, and nil
// for one that has already ended.
func (rs *Runs) Cancel(ctx context.Context, runID string) error {
	return rs.cfg.Log.Cancel(ctx, runID)
}

// Attached is the context of a run that stays attached to its caller, who
// waits for it (a generate request's): ctx's, ended after the longest a run
// may take (agent.ErrRunTimeout) or by CancelAll (ErrShutdown). cancel
// releases it.
func (rs *Runs) Attached(ctx context.Context) (_ context.Context, cancel context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	stop := context.AfterFunc(rs.stopCtx, func() { cancelCause(ErrShutdown) })
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, rs.cfg.MaxDuration, agent.ErrRunTimeout)
	return ctx, func() {
		stop()
		cancelTimeout()
		cancelCause(nil)
	}
}

// CancelAll cancels every run in progress, started or attached: their
// streams end with their failure (ErrShutdown) and their end.
func (rs *Runs) CancelAll() {
	rs.stopAll()
}

// Wait waits until the runs Start started have ended, or ctx does.
func (rs *Runs) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		rs.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// levelOf is the level a run's failure is logged at: a warning when it
// failed inside the service.
func levelOf(err error) slog.Level {
	if apperr.CodeOf(err) != apperr.Internal {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func errAttr(err error) slog.Attr { return slog.String("error", err.Error()) }
