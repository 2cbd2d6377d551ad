package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/offstack"
	"github.com/companionhq/companion/internal/run"
	"github.com/companionhq/companion/internal/runlog"
)

// A streamed run is a log, and a stream is a reader of it (internal/run):
// the run goes on in a goroutine of its own, appending its records to the
// run's log; every connection that streams the run follows the log after
// an id and writes the records it reads in its dialect.

// runner is the Server's Runner as internal/run asks for it. It counts the
// turns the token quota refused, as the generate route does.
type runner struct{ s *Server }

func (r runner) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error) {
	out, err := r.s.cfg.Runner.Run(ctx, in, emit)
	r.s.countQuota(err)
	if err != nil {
		return nil, err
	}
	return out.Result, nil
}

// failedOf is err as a run's failure record.
func failedOf(err error) *run.Failed {
	ae := classify(err)
	ib := inBand(err)
	return &run.Failed{Code: ib.Code, Message: ib.Message, Kind: string(ae.Code), Error: ae.Message,
		RetryAfter: retrySeconds(retryAfterOf(err, ae))}
}

// CancelRuns cancels every run in progress: their streams end with an error
// event (CANCELLED) and run-finish.
func (s *Server) CancelRuns() { s.runs.CancelAll() }

// WaitRuns waits until the streamed runs in progress have ended, or ctx
// does.
func (s *Server) WaitRuns(ctx context.Context) error { return s.runs.Wait(ctx) }

// followRun writes run runID's records after after to w, in d's dialect,
// until the run has ended or the client has gone. A fresh stream (the
// request that started the run, which arrived at arrived; zero for a
// resumed one) holds the opening records back until the model has produced
// something, so that a run failing before that gets a status and a JSON
// body instead, and times its first event and text from its arrival.
func (s *Server) followRun(w http.ResponseWriter, r *http.Request, runID string, after int64, d dialect, arrived time.Time) {
	ew, err := newFrameWriter(w, r, d, runID, s.cfg.Limits.StreamStallTimeout)
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
	defer func() {
		if !f.ended {
			s.runs.CancelUnlessResumed(runID)
		}
	}()

	// A dialect that keeps state across records (an open text block) reads
	// from the start even when resuming: the records up to after go to it
	// unwritten, so that it goes on as if the stream had never broken.
	from := after
	if d.stateful() {
		from = 0
	}
	for entry, err := range s.cfg.RunLog.Follow(r.Context(), runID, from) {
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
	// dec decodes the records that come without their value; made at the
	// first, as most streams have none.
	dec *run.Decoder
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
	rec, ok := entry.Value.(*run.Record)
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
		case rec.Opening():
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
// JSON, so it goes off the stack (offstack): the connection's goroutine waits for the run for
// as long as it lasts, and would keep the stack the deepest call needed.
func (f *follower) decode(data []byte) *run.Record {
	var (
		rec *run.Record
		err error
	)
	if f.dec == nil {
		f.dec = new(run.Decoder)
	}
	offstack.Do(func() { rec, err = f.dec.Decode(data) })
	if err != nil {
		f.s.log.LogAttrs(f.r.Context(), slog.LevelError, "a run record does not decode", slog.String("run_id", f.runID), errAttr(err))
		return nil
	}
	return rec
}

// failedBeforeOutput answers a run that failed when nothing but its opening
// records had gone out: with a real status.
func (f *follower) failedBeforeOutput(failed *run.Failed) {
	f.s.writeError(f.w, f.r, failed.Err())
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

type heldRecord struct {
	seq int64
	rec *run.Record
}
