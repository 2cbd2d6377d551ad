package run_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/run"
	"github.com/companionhq/companion/internal/runlog"
)

// runnerFunc is a Runner of a function.
type runnerFunc func(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error)

func (f runnerFunc) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
	return f(ctx, in, emit)
}

// failure names a run's failure as the edge would: its code, and the
// cause's text.
func failure(err error) *run.Failed {
	return &run.Failed{Code: "FAILED", Message: err.Error(), Kind: string(apperr.CodeOf(err)), Error: err.Error()}
}

// newRuns is a Runs of runner on a log of its own in memory.
func newRuns(t *testing.T, runner runnerFunc, configure ...func(*run.Config)) (*run.Runs, *runlog.Memory) {
	t.Helper()
	log := runlog.NewMemory(runlog.MemoryOptions{Retention: time.Minute})
	t.Cleanup(func() { _ = log.Close() })
	cfg := run.Config{Log: log, Runner: runner, Failure: failure, MaxDuration: time.Minute}
	for _, f := range configure {
		f(&cfg)
	}
	rs := run.New(cfg)
	t.Cleanup(func() {
		rs.CancelAll()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rs.Wait(ctx); err != nil {
			t.Errorf("the runs did not end: %v", err)
		}
	})
	return rs, log
}

// start starts a run of thread t1 for resource u1.
func start(t *testing.T, rs *run.Runs) string {
	t.Helper()
	in := &agent.Input{ThreadID: "t1", ResourceID: "u1"}
	runID, err := rs.Start(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if runID == "" || in.RunID != runID {
		t.Fatalf("run id %q, the input's %q", runID, in.RunID)
	}
	return runID
}

// records follows run runID to its end. Each entry's bytes decode to the
// record handed over beside them.
func records(t *testing.T, log runlog.Log, runID string) []*run.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*run.Record
	for e, err := range log.Follow(ctx, runID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := run.Decode(e.Data)
		if err != nil {
			t.Fatalf("record %d (%s) does not decode: %v", e.Seq, e.Data, err)
		}
		rec, ok := e.Value.(*run.Record)
		if !ok {
			rec = decoded
		} else if !reflect.DeepEqual(rec, decoded) {
			t.Fatalf("record %d: its bytes %s decode to %+v, not to the record written, %+v", e.Seq, e.Data, decoded, rec)
		}
		out = append(out, rec)
	}
	return out
}

// blocked runs until its context ends, and fails with its cause.
func blocked(started chan<- struct{}) runnerFunc {
	return func(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
		if err := emit(agent.RunStarted{RunID: in.RunID}); err != nil {
			return nil, err
		}
		close(started)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
}

// causeOf is the cause a blocked run's failure record names.
func causeOf(t *testing.T, log runlog.Log, runID string) string {
	t.Helper()
	recs := records(t, log, runID)
	n := len(recs)
	if n < 2 || recs[n-2].Failed == nil || recs[n-1].Finished == nil || recs[n-1].Finished.Reason != model.FinishError {
		t.Fatalf("the run ended with %+v", recs[max(0, n-2):])
	}
	return recs[n-2].Failed.Error
}

// TestARunIsItsLog: a run's events go to its log in order, then its end
// with the result's reason, usage and cost; the log knows who it is for.
func TestARunIsItsLog(t *testing.T) {
	events := []agent.Event{
		agent.RunStarted{RunID: "r", ThreadID: "t1", ResourceID: "u1"},
		agent.StepStarted{Index: 0, Kind: agent.StepInitial, MessageID: "m"},
		agent.TextDelta{Text: "Hello"},
		agent.ToolInputStarted{CallID: "c", Tool: "weatherTool"},
		agent.ToolInputDelta{CallID: "c", Tool: "weatherTool", Delta: "{}"},
		agent.ToolInputEnded{CallID: "c"},
		agent.ToolCalled{Call: agent.ToolCall{ID: "c", Name: "weatherTool", Args: []byte("{}")}},
		agent.ToolFailed{CallID: "c", Tool: "weatherTool", Message: "no"},
		agent.ToolReturned{Result: agent.ToolResult{CallID: "c", Tool: "weatherTool", Output: []byte(`{"error":"no"}`), Error: "no"}},
		agent.StepFinished{Index: 0, Kind: agent.StepInitial, FinishReason: model.FinishStop, Usage: model.Usage{TotalTokens: 3}},
	}
	res := &agent.Result{FinishReason: model.FinishStop, Usage: model.Usage{InputTokens: 2, OutputTokens: 1, TotalTokens: 3}, Cost: pricing.Cost{Input: 0.5}}
	rs, log := newRuns(t, func(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
		for _, ev := range events {
			if err := emit(ev); err != nil {
				return nil, err
			}
		}
		return res, nil
	})
	runID := start(t, rs)
	meta, err := log.Meta(context.Background(), runID)
	if err != nil || meta.ThreadID != "t1" || meta.ResourceID != "u1" || meta.Started.IsZero() {
		t.Fatalf("the run's meta: %+v, %v", meta, err)
	}
	recs := records(t, log, runID)
	if len(recs) != len(events)+1 {
		t.Fatalf("%d records, want the %d events and the end", len(recs), len(events))
	}
	for i, ev := range events {
		if got := recs[i].Event(); !reflect.DeepEqual(got, ev) {
			t.Fatalf("record %d holds %#v, want %#v", i, got, ev)
		}
	}
	want := run.Finished{Reason: res.FinishReason, Usage: res.Usage, Cost: res.Cost}
	if end := recs[len(recs)-1]; end.Finished == nil || *end.Finished != want || end.Event() != nil {
		t.Fatalf("the run ended with %+v, want %+v", end, want)
	}
}

// TestAFailedRunEndsWithItsFailure: a run that fails ends with its failure,
// named by Config.Failure, then its end with the usage and cost of the
// steps it finished.
func TestAFailedRunEndsWithItsFailure(t *testing.T) {
	cause := errors.New("the model broke")
	rs, log := newRuns(t, func(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
		for _, ev := range []agent.Event{
			agent.StepFinished{Usage: model.Usage{TotalTokens: 3}, Cost: pricing.Cost{Output: 0.25}},
			agent.StepFinished{Usage: model.Usage{TotalTokens: 4}, Cost: pricing.Cost{Output: 0.5}},
		} {
			if err := emit(ev); err != nil {
				return nil, err
			}
		}
		return nil, cause
	})
	recs := records(t, log, start(t, rs))
	n := len(recs)
	if n != 4 || recs[2].Failed == nil || *recs[2].Failed != *failure(cause) {
		t.Fatalf("the run ended with %+v, want its failure", recs[max(0, n-2):])
	}
	want := run.Finished{Reason: model.FinishError, Usage: model.Usage{TotalTokens: 7}, Cost: pricing.Cost{Output: 0.75}}
	if recs[3].Finished == nil || *recs[3].Finished != want {
		t.Fatalf("the run ended with %+v, want %+v", recs[3].Finished, want)
	}
}

// TestAPanicStillEndsTheRun: a run whose runner panics ends with an
// internal failure and its end.
func TestAPanicStillEndsTheRun(t *testing.T) {
	rs, log := newRuns(t, func(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
		panic("boom")
	})
	recs := records(t, log, start(t, rs))
	if len(recs) != 2 || recs[0].Failed == nil || recs[0].Failed.Kind != string(apperr.Internal) || recs[1].Finished == nil {
		t.Fatalf("the run ended with %+v", recs)
	}
}

// TestStartKeepsTheValuesNotTheCancellation: the run's context has the
// caller's values, and goes on when the caller's is cancelled.
func TestStartKeepsTheValuesNotTheCancellation(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "request-1"))
	release := make(chan struct{})
	var value any
	var cause atomic.Value
	rs, log := newRuns(t, func(rctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
		value = rctx.Value(key{})
		<-release
		if err := context.Cause(rctx); err != nil {
			cause.Store(err)
		}
		return &agent.Result{FinishReason: model.FinishStop}, nil
	})
	runID, err := rs.Start(ctx, &agent.Input{ResourceID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	close(release)
	recs := records(t, log, runID)
	if value != "request-1" || cause.Load() != nil || recs[len(recs)-1].Finished.Reason != model.FinishStop {
		t.Fatalf("value %v, cause %v, end %+v", value, cause.Load(), recs[len(recs)-1].Finished)
	}
}

// brokenLog is a log that cannot start a run.
type brokenLog struct{ runlog.Log }

func (brokenLog) Start(context.Context, runlog.Meta) (runlog.Writer, error) {
	return nil, errors.New("the log is down")
}

// TestStartFailsWithoutALog: a run whose log cannot start is not started,
// and the error is Unavailable.
func TestStartFailsWithoutALog(t *testing.T) {
	rs, _ := newRuns(t, func(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
		t.Error("a run without a log ran")
		return nil, errors.New("ran")
	}, func(c *run.Config) { c.Log = brokenLog{c.Log} })
	if _, err := rs.Start(context.Background(), &agent.Input{}); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("starting a run on a broken log: %v", err)
	}
}

// TestCancel: a run cancelled by id stops with ErrCancelled; cancelling an
// ended run is no error, and an unknown one is runlog.ErrNotFound.
func TestCancel(t *testing.T) {
	started := make(chan struct{})
	rs, log := newRuns(t, blocked(started))
	runID := start(t, rs)
	<-started
	if err := rs.Cancel(context.Background(), runID); err != nil {
		t.Fatal(err)
	}
	if cause := causeOf(t, log, runID); cause != run.ErrCancelled.Error() {
		t.Fatalf("the cancelled run failed with %q", cause)
	}
	if err := rs.Cancel(context.Background(), runID); err != nil {
		t.Fatalf("cancelling an ended run: %v", err)
	}
	if err := rs.Cancel(context.Background(), "nope"); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("cancelling an unknown run: %v", err)
	}
}

// TestCancelUnlessResumed: without a grace period, a run whose reader left
// is cancelled at once (ErrAbandoned); with one, it is cancelled when the
// period ends unless a reader follows it then.
func TestCancelUnlessResumed(t *testing.T) {
	t.Run("no grace", func(t *testing.T) {
		started := make(chan struct{})
		rs, log := newRuns(t, blocked(started))
		runID := start(t, rs)
		<-started
		rs.CancelUnlessResumed(runID)
		if cause := causeOf(t, log, runID); cause != run.ErrAbandoned.Error() {
			t.Fatalf("the abandoned run failed with %q", cause)
		}
	})
	t.Run("nobody came back", func(t *testing.T) {
		started := make(chan struct{})
		rs, log := newRuns(t, blocked(started), func(c *run.Config) { c.Grace = 50 * time.Millisecond })
		runID := start(t, rs)
		<-started
		rs.CancelUnlessResumed(runID)
		// Read once the run ended: a reader during the grace period would
		// resume it.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rs.Wait(ctx); err != nil {
			t.Fatalf("the abandoned run goes on: %v", err)
		}
		if cause := causeOf(t, log, runID); cause != run.ErrAbandoned.Error() {
			t.Fatalf("the abandoned run failed with %q", cause)
		}
	})
	t.Run("resumed", func(t *testing.T) {
		started := make(chan struct{})
		rs, log := newRuns(t, blocked(started), func(c *run.Config) { c.Grace = 50 * time.Millisecond })
		runID := start(t, rs)
		<-started
		// A reader follows the run through the grace period and past it.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		reading, ended := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(ended)
			for e, err := range log.Follow(ctx, runID, 0) {
				if err != nil {
					return
				}
				if e.Seq == 1 {
					close(reading)
				}
			}
		}()
		<-reading
		rs.CancelUnlessResumed(runID)
		time.Sleep(150 * time.Millisecond)
		select {
		case <-ended:
			t.Fatal("the run was cancelled though a reader followed it")
		default:
		}
		if err := rs.Cancel(context.Background(), runID); err != nil {
			t.Fatal(err)
		}
		if cause := causeOf(t, log, runID); cause != run.ErrCancelled.Error() {
			t.Fatalf("the run failed with %q, want the cancel's cause", cause)
		}
	})
	t.Run("not this instance's", func(t *testing.T) {
		rs, _ := newRuns(t, blocked(make(chan struct{})))
		rs.CancelUnlessResumed("elsewhere") // no run: nothing to do
	})
}

// TestMaxDuration: a run that takes longer than it may ends with
// agent.ErrRunTimeout.
func TestMaxDuration(t *testing.T) {
	started := make(chan struct{})
	rs, log := newRuns(t, blocked(started), func(c *run.Config) { c.MaxDuration = 20 * time.Millisecond })
	runID := start(t, rs)
	if cause := causeOf(t, log, runID); cause != agent.ErrRunTimeout.Error() {
		t.Fatalf("the run failed with %q, want the timeout", cause)
	}
}

// TestDrain: Wait waits for the started runs, until its context ends;
// CancelAll ends them (ErrShutdown) and attached runs alike.
func TestDrain(t *testing.T) {
	started := make(chan struct{})
	rs, log := newRuns(t, blocked(started))
	runID := start(t, rs)
	<-started
	attached, release := rs.Attached(context.Background())
	defer release()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := rs.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a run that goes on: %v", err)
	}
	rs.CancelAll()
	if err := rs.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cause := causeOf(t, log, runID); cause != run.ErrShutdown.Error() {
		t.Fatalf("the run failed with %q, want the shutdown", cause)
	}
	<-attached.Done()
	if cause := context.Cause(attached); cause != run.ErrShutdown {
		t.Fatalf("the attached run ended with %v", cause)
	}
}

// TestAttached: an attached run's context is its caller's, and ends after
// the longest a run may take.
func TestAttached(t *testing.T) {
	rs, _ := newRuns(t, nil, func(c *run.Config) { c.MaxDuration = 20 * time.Millisecond })
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, release := rs.Attached(parent)
	<-ctx.Done()
	if cause := context.Cause(ctx); cause != agent.ErrRunTimeout {
		t.Fatalf("the attached run ended with %v, want the timeout", cause)
	}
	release()

	ctx, release = rs.Attached(parent)
	defer release()
	cancelParent()
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("the attached run of a cancelled caller ended with %v", context.Cause(ctx))
	}
}
