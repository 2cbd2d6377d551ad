// Package runlog keeps each run's events as a log with gap-free ids, so that
// a stream is a reader of the log: it starts after an id and follows until
// the run ends. A client that lost its connection resumes after the last id
// it got, while the run goes on and for a retention time after it ends.
//
// Memory keeps the logs of this process's runs. Redis writes them through to
// Redis as well, so that any instance sharing it can resume a run another
// instance runs, and cancel it. Events are opaque bytes here; while a run goes
// on, readers in its writer's process also get the value the bytes encode,
// as the writer handed it over, and need not decode them.
package runlog

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Meta is what is known of a run from its start: who may read it.
type Meta struct {
	RunID      string
	ThreadID   string
	ResourceID string
	Started    time.Time
}

// Entry is one event of a run. Seq counts 1, 2, 3... without gaps within a
// run. Data must not be modified: readers share it.
type Entry struct {
	Seq  int64
	Data []byte
	// Value is what the writer handed to Append with Data (the value Data
	// encodes), when the entry is read from this process's memory while
	// the run goes on, or by a follower that began before the run's end,
	// so that a reader need not decode Data again; nil when the entry was
	// read from elsewhere (Redis), or once the run ended and its followers
	// of that time stopped, or when the writer gave none. Readers share
	// it and must not modify it.
	Value any
	// More is set when the follower already has the next entry in hand: a
	// reader writing to a network can hold its flush until the last, and
	// send a burst of entries in one write.
	More bool
}

// ErrNotFound is returned for a run that is unknown, or whose retention is
// over.
var ErrNotFound = errors.New("runlog: run not found")

// ErrTooLong is returned by Append when the run's log is full: it holds the
// most entries or bytes a run may have.
var ErrTooLong = errors.New("runlog: the run's log is full")

// ErrEnded is returned by Append after End.
var ErrEnded = errors.New("runlog: the run has ended")

// Log holds the event logs of runs.
type Log interface {
	// Start registers a new run and returns its writer. RunIDs are unique
	// (the caller makes them). The caller must End every run it starts.
	Start(ctx context.Context, meta Meta) (Writer, error)
	// Meta returns a run's metadata, ErrNotFound when the run is unknown
	// or expired.
	Meta(ctx context.Context, runID string) (Meta, error)
	// Follow yields the run's entries with Seq > after, in order, then
	// waits for new ones. It returns when the run has ended and every
	// entry was yielded, or when ctx ends (yielding ctx's error). It
	// yields ErrNotFound for an unknown run. A reader that starts after
	// the run ended gets the rest at once.
	Follow(ctx context.Context, runID string, after int64) iter.Seq2[Entry, error]
	// Cancel asks whoever runs runID, this instance or another, to cancel
	// it. It returns ErrNotFound when the run is unknown, and nil when it
	// has already ended (there is nothing to do).
	Cancel(ctx context.Context, runID string) error
	// Close releases what the log holds.
	Close() error
}

// Writer appends a run's events. It is safe for concurrent use.
type Writer interface {
	// Append adds the next event, data, and returns its Seq (1 for the
	// first). value, which may be nil, is what data encodes: readers in
	// this process get it as Entry.Value until End (and those following
	// at End until they stop); it must not be modified after.
	// Append fails with ErrTooLong when the log is full, and ErrEnded
	// after End.
	Append(ctx context.Context, data []byte, value any) (int64, error)
	// End marks the run over: followers get the remaining entries and
	// stop. The log is kept for the retention time. Ending twice is a
	// no-op.
	End(ctx context.Context) error
	// Cancelled is done when Log.Cancel was called for the run, from any
	// instance. A context rather than a channel, so that what waits for it
	// can be a context.AfterFunc instead of a goroutine (one less for each
	// open stream).
	Cancelled() context.Context
	// Readers reports how many Follow calls are reading the run right now,
	// on this instance and, through Redis, on others.
	Readers() int
}
