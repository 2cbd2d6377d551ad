// Package memory is the conversation store: threads, their messages and
// what each resource's runs used, behind one Store interface that the
// SQLite (sqlite/) and PostgreSQL (postgres/) stores implement and one suite
// (memorytest/) checks. It knows the model's message types and nothing of
// the agent, the turn or the API: internal/turn runs a turn over it.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors a Store returns; implementations wrap them with context.
var (
	// ErrNotFound: the thread does not exist (or no longer does).
	ErrNotFound = errors.New("not found")
	// ErrBusy: another turn held the thread for longer than the caller would wait.
	ErrBusy = errors.New("thread is busy")
)

// Thread is a conversation thread as stored. ResourceID is its owner, fixed
// when the thread is created ("" for a thread created without one).
type Thread struct {
	ID         string
	ResourceID string
	Title      string
	// Metadata is a JSON object.
	Metadata  json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// Bytes is what the thread's messages take, as Message.Size counts.
	Bytes int64
}

// Message is one stored message of a thread: a message the client sent, or
// the reply of one run. Seq is its position in the thread: 1, 2, 3, ...
// without gaps, assigned by the store.
type Message struct {
	Seq  int64
	ID   string
	Role string
	// Text is the message's text; for a reply, the text of all its steps.
	// De-duplication compares it.
	Text string
	// Model is the JSON array of the model messages the message is made of:
	// one of Role and Text for a message a client sent; the assistant and
	// tool messages of a reply. ModelMessages decodes it.
	Model json.RawMessage
	// Pending marks a message stored before its run that no reply answers
	// yet: the run is under way, or it failed.
	Pending bool
	// RunID is the run that produced a reply; "" for client messages.
	RunID     string
	CreatedAt time.Time
}

// Size is what m takes in a thread's Bytes: its text and model messages.
func (m Message) Size() int64 { return int64(len(m.Text) + len(m.Model)) }

// Usage is what one run used, counted for its resource's and its thread's
// day: its tokens and their cost in US dollars.
type Usage struct {
	ResourceID string
	ThreadID   string
	// Day is the UTC day, as Day formats it.
	Day    string
	Tokens int64
	Cost   float64
}

// Counts reports whether u has anything to count.
func (u Usage) Counts() bool { return u.Tokens > 0 || u.Cost > 0 }

// DayUsage is what a resource's runs used on one day, and per thread.
type DayUsage struct {
	Day     string
	Tokens  int64
	Cost    float64
	Threads []ThreadUsage
}

// AddDayUsage adds a row of a usage report to out, which lists days in
// order: day's total (a day already last in out is not repeated) and,
// when thread is not nil, that thread's share.
func AddDayUsage(out []DayUsage, day DayUsage, thread *ThreadUsage) []DayUsage {
	if len(out) == 0 || out[len(out)-1].Day != day.Day {
		out = append(out, day)
	}
	if thread != nil {
		last := &out[len(out)-1]
		last.Threads = append(last.Threads, *thread)
	}
	return out
}

// ThreadUsage is what the runs of one thread used on a day.
type ThreadUsage struct {
	ThreadID string
	Tokens   int64
	Cost     float64
}

// Day is t's UTC day as stores keep it: YYYY-MM-DD.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// ThreadOrder is how Threads sorts.
type ThreadOrder struct {
	// ByUpdated sorts by last activity instead of creation.
	ByUpdated bool
	// Ascending puts the oldest first instead of the newest.
	Ascending bool
}

// Store keeps threads and their messages, and what it knows of each
// resource across them (Knowledge). Implementations are safe for
// concurrent use; internal/memory/memorytest is the suite they must pass.
type Store interface {
	Knowledge
	Vectors
	// Thread returns the thread id, or ErrNotFound.
	Thread(ctx context.Context, id string) (Thread, error)
	// Threads returns one page of resourceID's threads and how many it has.
	Threads(ctx context.Context, resourceID string, order ThreadOrder, offset, limit int) ([]Thread, int, error)
	// UpdateThread sets the title (when not nil) and the metadata (when not
	// nil) of thread id if resourceID owns it, or returns ErrNotFound.
	UpdateThread(ctx context.Context, id, resourceID string, title *string, metadata json.RawMessage, now time.Time) (Thread, error)
	// Messages returns the messages of thread id from position offset
	// (oldest first), at most limit, and how many the thread has.
	Messages(ctx context.Context, threadID string, offset, limit int) ([]Message, int, error)
	// Lock waits up to wait for thread id's turn (across every instance
	// sharing the database, where the store can) and returns the Turn that
	// holds it, ErrBusy when the wait ran out, or ctx's error. A wait of 0
	// or less does not wait.
	Lock(ctx context.Context, threadID string, wait time.Duration) (Turn, error)
	// Used returns the tokens resourceID's runs used on day (see Day), and
	// what they cost.
	Used(ctx context.Context, resourceID, day string) (tokens int64, cost float64, err error)
	// AddUsage adds a run's usage to its resource's and thread's day, for a
	// run that stored no reply (Answer counts those of the runs that did).
	AddUsage(ctx context.Context, u Usage) error
	// UsageBetween returns resourceID's usage on the days from from to to
	// (inclusive, as Day formats them) that have some, oldest first, each
	// with its threads' (most used first).
	UsageBetween(ctx context.Context, resourceID, from, to string) ([]DayUsage, error)
	// CountReferral adds one to day and locale's count of crisis referrals.
	CountReferral(ctx context.Context, day, locale string) error
	// ReferralCounts returns the counts of the days from from to to
	// (inclusive), oldest first, then by locale.
	ReferralCounts(ctx context.Context, from, to string) ([]ReferralCount, error)
	// ResourceSettings returns resourceID's settings: those of
	// resourceID with nothing set (UpdatedAt zero) when none were ever
	// set.
	ResourceSettings(ctx context.Context, resourceID string) (ResourceSettings, error)
	// SetResourceSettings stores rs as rs.ResourceID's settings, set at
	// rs.UpdatedAt, in place of what was set before. EraseResource leaves
	// them.
	SetResourceSettings(ctx context.Context, rs ResourceSettings) error
	// Ping checks that the database answers, holds the schema this build
	// expects (every table with every column it reads) and takes a write;
	// a store that cannot write returns a *WriteError, also while a write
	// of a turn failed so less than WriteHold ago.
	Ping(ctx context.Context) error
	// Close releases the store.
	Close() error
}

// LockBeginner is a Store that can take a free thread's turn and begin it
// in one exchange with its database (PostgreSQL: the lease goes in the
// batch of Begin's reads, a round trip and a transaction less a turn).
// LockBegin is Lock(ctx, t.ID, 0) followed by the turn's Begin(ctx, t, n,
// ids, plan): on success it returns the turn held and what Begin
// returns; on ErrBusy (the thread is busy) or any other error it holds
// nothing and stores nothing.
type LockBeginner interface {
	LockBegin(ctx context.Context, t Thread, n int, ids []string, plan Plan) (Turn, Thread, []Message, error)
}

// BeginReads are reads a store may make in the exchange that takes and
// begins a thread (as LockBeginner does), so that a turn has them without
// a round trip of their own. Each, when not nil, names what to read and
// receives it:
type BeginReads struct {
	// WorkingMemory names a working memory by Scope and Key, and receives
	// it as Knowledge.WorkingMemory returns it.
	WorkingMemory *WorkingMemory
	// Settings names a resource by ResourceID, and receives its settings
	// as Store.ResourceSettings returns them.
	Settings *ResourceSettings
}

// Turn is a thread held for one turn: no other turn on the thread runs until
// Unlock. Its reads and writes see everything earlier turns stored.
type Turn interface {
	// Begin stores a turn's new messages: it reads the thread (as t when it
	// does not exist yet), its last n messages (oldest first) and which of
	// ids its messages have, and calls plan with them. plan returns the
	// messages to store after the thread's last (none is fine) or an
	// error, which stores nothing. The writes (the thread when new, the
	// messages) commit together, and only if what plan was given is still
	// so: a store may read outside the write and, when the thread changed
	// meanwhile, read and call plan again, so plan must do nothing but
	// compute its result. Begin returns the thread as read and the stored
	// messages with their Seq.
	Begin(ctx context.Context, t Thread, n int, ids []string, plan Plan) (Thread, []Message, error)
	// Open returns the thread, creating it as t when it does not exist.
	Open(ctx context.Context, t Thread) (Thread, error)
	// Thread returns the thread, or ErrNotFound.
	Thread(ctx context.Context) (Thread, error)
	// Tail returns the last n messages of the thread, oldest first.
	Tail(ctx context.Context, n int) ([]Message, error)
	// Known returns which of ids the thread's messages already have.
	Known(ctx context.Context, ids []string) (map[string]bool, error)
	// Append stores msgs after the thread's last message, in one
	// transaction, and returns them with their Seq.
	Append(ctx context.Context, msgs []Message) ([]Message, error)
	// Answer stores reply after the last message, clears Pending on every
	// earlier message and adds u's tokens and cost to its resource's and
	// thread's day (when there are any), in one transaction. It returns the messages it
	// answered (those that were pending, oldest first) and the stored reply.
	// Answer is a turn's last write: a store may let another instance take
	// the thread as it commits (PostgreSQL drops the lease in the same
	// transaction), so only Unlock may follow it.
	Answer(ctx context.Context, reply Message, u Usage) (answered []Message, stored Message, err error)
	// Delete deletes the thread and its messages.
	Delete(ctx context.Context) error
	// Unlock ends the turn. It may be called more than once.
	Unlock()
}

// Plan decides, from a thread, its tail and the known ids of a request's
// messages, which messages a turn stores (see Turn.Begin, which may call it
// more than once).
type Plan func(th Thread, tail []Message, known map[string]bool) ([]Message, error)

// AsStored is t as stores keep it: UTC, to the microsecond.
func AsStored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// LockAndBegin takes thread t.ID's turn if it is free and begins it with
// plan (Turn.Begin): in one call where the store can (LockBeginner), else
// Lock without waiting, then Begin. It returns ErrBusy when the thread is
// busy, and on any error holds nothing.
func LockAndBegin(ctx context.Context, s Store, t Thread, n int, ids []string, plan Plan) (Turn, Thread, []Message, error) {
	if lb, ok := s.(LockBeginner); ok {
		return lb.LockBegin(ctx, t, n, ids, plan)
	}
	turn, err := s.Lock(ctx, t.ID, 0)
	if err != nil {
		return nil, t, nil, err
	}
	th, stored, err := BeginOrUnlock(ctx, turn, t, n, ids, plan)
	if err != nil {
		return nil, th, nil, err
	}
	return turn, th, stored, nil
}

// BeginOrUnlock begins the turn held and lets it go when that fails (or
// panics).
func BeginOrUnlock(ctx context.Context, turn Turn, t Thread, n int, ids []string, plan Plan) (Thread, []Message, error) {
	held := false
	defer func() {
		if !held {
			turn.Unlock()
		}
	}()
	th, stored, err := turn.Begin(ctx, t, n, ids, plan)
	held = err == nil
	return th, stored, err
}
