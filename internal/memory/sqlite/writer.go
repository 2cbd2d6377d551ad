package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// SQLite writes one transaction at a time, and a commit costs far more
// than the statements in it. So the store's writes commit in groups: each
// write runs in a savepoint of the group's transaction (a write that fails
// is rolled back alone), and the group commits once; every writer of the
// group learns the outcome. A write is acknowledged only once its group
// has committed: the durability of a transaction per write, at the cost
// of one commit per group.
//
// The writes queue, and one of their writers at a time leads: it takes
// the writes queued, its own first among them, commits them, and hands the
// lead to the writer of the next write queued, if any. A write that finds
// no leader leads at once, on its own goroutine: alone, it waits for no
// other goroutine to run it and wake it again, and on two cores each such
// hand-over woke a thread that the scheduler then put back to sleep
// (docs/performance.md). Under load, the writes queued behind a commit go
// in the next, as with a writer goroutine of its own.

// maxGroup bounds the writes of one commit.
const maxGroup = 64

// write is one write: fn runs inside the group's transaction.
type write struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan error // its outcome, or errLead
	// probe marks Ping's write, whose success does not show that the
	// store writes again: it is smaller than a turn's.
	probe bool
}

// errClosed is the error of a write to a closed store.
var errClosed = errors.New("sqlite: the store is closed")

// errLead, on a write's done channel, hands the lead to its writer.
var errLead = errors.New("sqlite: lead")

// writeTx runs fn in a transaction, with other writes in the same commit,
// and returns once it is committed (or failed).
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return s.queueWrite(&write{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// queueWrite queues w and returns its outcome (writeTx).
func (s *Store) queueWrite(w *write) error {
	ctx := w.ctx
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return errClosed
	}
	s.queue = append(s.queue, w)
	s.inflight.Add(1)
	defer s.inflight.Done()
	lead := !s.leading
	s.leading = true
	s.wmu.Unlock()
	// Once queued, the write's outcome is awaited whatever ctx does: it
	// may be in a transaction that is committing.
	if !lead {
		if err := <-w.done; err != errLead {
			return err
		}
	}
	s.lead()
	return <-w.done
}

// errPanicked is the outcome of the writes of a group in which a write
// panicked: the group was rolled back, and the panic goes on in the
// leader's goroutine.
var errPanicked = errors.New("sqlite: a write of the same commit panicked; nothing was written")

// lead commits the writes queued, up to maxGroup, the leader's own first,
// then hands the lead on to the next write queued, or leaves none. When a
// write panics, the group learns it and the lead is handed on all the
// same: the writes of other requests go on.
func (s *Store) lead() {
	s.wmu.Lock()
	n := min(len(s.queue), maxGroup)
	group := make([]*write, n)
	copy(group, s.queue)
	// The queue's array is reused while it drains; a new one once empty.
	s.queue = s.queue[n:]
	if len(s.queue) == 0 {
		s.queue = nil
	}
	s.wmu.Unlock()
	defer s.handOn()
	committed := false
	defer func() {
		if !committed {
			for _, w := range group {
				w.done <- errPanicked
			}
		}
	}()
	s.commitGroup(group)
	committed = true
}

// handOn hands the lead to the writer of the next write queued, or leaves
// none.
func (s *Store) handOn() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(s.queue) == 0 {
		s.leading = false
		return
	}
	s.queue[0].done <- errLead
}

func (s *Store) commitGroup(group []*write) {
	// A load first: the swap writes, and the flag is almost always clear.
	if s.restart.Load() && s.restart.Swap(false) {
		s.restarted <- s.restartLog()
	}
	results := make([]error, len(group))
	err := func() error {
		tx, err := s.db.BeginTx(context.Background(), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		ok := 0
		// Alone in its group, a write needs no savepoint: when it fails,
		// the whole transaction is rolled back. Savepoints are released
		// before the next is taken, so they share one name (and prepared
		// statements).
		alone := len(group) == 1
		savepoint := func(st *sql.Stmt) error {
			if alone {
				return nil
			}
			_, err := tx.StmtContext(context.Background(), st).ExecContext(context.Background())
			return err
		}
		for i, w := range group {
			if err := w.ctx.Err(); err != nil {
				results[i] = err
				continue
			}
			if err := savepoint(s.stSavepoint); err != nil {
				results[i] = err
				continue
			}
			// A write's statements run to their end: they are few and
			// short, and with a cancellable context database/sql and the
			// driver would each start a goroutine a statement to interrupt
			// it. A write whose context ended before it began is not run.
			if err := w.fn(context.WithoutCancel(w.ctx), tx); err != nil {
				results[i] = err
				if rerr := savepoint(s.stRollbackTo); rerr != nil {
					return fmt.Errorf("rolling back a failed write: %w", rerr)
				}
			} else {
				ok++
			}
			if err := savepoint(s.stRelease); err != nil {
				return fmt.Errorf("releasing a savepoint: %w", err)
			}
		}
		if ok == 0 {
			return nil // nothing to commit; the deferred rollback ends it
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		// The group's writes ran one after the other, after every earlier
		// group's: all the versions given so far are committed.
		s.committedVersion.Store(s.version.Load())
		select {
		case s.committed <- struct{}{}:
		default: // the checkpointer has one to see to already
		}
		return nil
	}()
	for i, w := range group {
		if err == nil && results[i] == nil && !w.probe {
			s.health.Succeeded()
			break
		}
	}
	for i, w := range group {
		if err != nil && results[i] == nil {
			results[i] = fmt.Errorf("committing: %w", writeErr(err))
		} else if results[i] != nil {
			results[i] = writeErr(results[i])
		}
		// The store's health sees every write that failed for want of a
		// writable database.
		s.health.Failed(results[i])
		w.done <- results[i]
	}
}

// checkpointEvery is the least time between two checkpoints: under load, a
// checkpoint copies the pages of many commits at once.
const checkpointEvery = 50 * time.Millisecond

// LogLimit is the size of the write-ahead log past which the next commit
// starts it over: under load it grows by tens of megabytes a second.
const LogLimit = 64 << 20

// walFrameHeader is the size of the header of each page in the log.
const walFrameHeader = 24

// restartLog copies the rest of the write-ahead log into the database
// and has the next commit write the log from its start, cutting its file
// back to the limit. The background checkpoints copy the log's pages, but
// SQLite starts the log over only when a write begins after every page
// was copied, which a store that is never idle does not see: under the
// comparison's load the log grew by every commit, 3.2 GB in a minute for
// a database of 300 MB. The leader does it before its commit, so that no
// write waits for another's lock meanwhile: the writes queue behind it,
// a few milliseconds once per LogLimit written. It waits for the reads
// of the log's pages to end, at most restartWait: a long read (a backup)
// makes it give up, and the checkpointer ask again a second later. It
// reports whether the log was started over.
func (s *Store) restartLog() bool {
	ctx := context.Background()
	c, err := s.db.Conn(ctx)
	if err != nil {
		return false
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, restartWait.Milliseconds())); err != nil {
		return false
	}
	defer func() {
		if _, err := c.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, BusyTimeout.Milliseconds())); err != nil {
			// Not back into the pool with the short wait: the
			// connection is closed instead.
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var busy, frames, copied int64
	err = c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &frames, &copied)
	return err == nil && busy == 0
}

// restartWait bounds restartLog's wait for the reads of the log.
const restartWait = 100 * time.Millisecond

// runCheckpointer copies the write-ahead log's pages into the database file
// after commits, at most once every checkpointEvery, so that reads find
// them there, and asks for the log to be started over when it has passed
// its limit (restartLog).
//
// SQLite would do it in the commit that takes the log past a thousand
// pages (wal_autocheckpoint, off on the store's connections): a commit in
// about one turn in fifty on this schema then also wrote a thousand pages back
// and waited for the disk twice, and held the commits, and every write
// queued behind them, for that long. Here the checkpoint runs on a connection
// of its own, beside the commits (a PASSIVE checkpoint waits for neither
// readers nor writers), and no request waits for it.
func (s *Store) runCheckpointer() {
	defer close(s.checkpointerDone)
	ctx := context.Background()
	pause := time.NewTimer(0)
	var retry time.Time // no restart asked for before
	for {
		select {
		case <-s.committed:
		case <-s.closing:
			return
		}
		// A failed checkpoint leaves the pages in the log, where every
		// read still finds them, and the next commit brings another try;
		// what fails it (the disk) fails the commits too, and they say so.
		var busy, frames, copied int64
		err := s.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
		if err == nil && frames*s.frameSize > s.log.limit && time.Now().After(retry) {
			// No checkpoint until the next leader has tried: this one
			// would hold the lock that the restart waits for.
			s.restart.Store(true)
			select {
			case ok := <-s.restarted:
				if !ok {
					retry = time.Now().Add(time.Second)
				}
			case <-s.closing:
				return
			}
		}
		pause.Reset(s.log.every)
		select {
		case <-pause.C:
		case <-s.closing:
			return
		}
	}
}
