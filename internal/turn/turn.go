// Package memory gives the agent a memory: every turn of a thread is stored,
// and each run sees the thread's recent history. It wraps the agent and
// runs it the same way (it is a Runner too), adding, around each run:
//
//   - ownership: a thread belongs to the resourceId that created it, and a
//     request naming it with another resourceId (or none) is refused;
//   - one turn at a time: a run waits for the thread's turn lock, up to a
//     bound, and is refused with a conflict after it;
//   - de-duplication: messages the thread already holds are not stored
//     again, by id when the client gives ids, else by the overlap between
//     the request's messages and the stored tail (docs/memory.md);
//   - persistence: the request's new messages are stored before the run
//     (pending), the reply with the run that produced it, in one
//     transaction that also marks what it answered.
//
// The stores live in subpackages (sqlite, postgres) and pass one suite,
// memorytest.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/aside"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// Runner runs the agent; *agent.Agent is one.
type Runner interface {
	Run(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error)
}

// Defaults of Config.
const (
	// DefaultWindow is how many stored messages a run sees.
	DefaultWindow = 20
	// DefaultLockWait is how long a turn waits for the one before it.
	DefaultLockWait = 30 * time.Second
	// DefaultHistoryBytes is how much message content a run sees of the
	// thread's history.
	DefaultHistoryBytes = 256 << 10
	// DefaultMaxThreadBytes is what one thread may store.
	DefaultMaxThreadBytes = 16 << 20
)

// saveTimeout bounds storing a finished run's reply. The reply is stored
// even when the client has gone, so it does not use the request's deadline.
const saveTimeout = 15 * time.Second

// Config holds a Memory's dependencies and settings.
type Config struct {
	Store  Store
	Runner Runner
	// Window is how many of the thread's latest stored messages a run
	// sees, counted as model messages (a tool round counts as the assistant
	// message that asked and one message per result). 0 means none.
	Window int
	// LockWait is how long a turn waits for the thread while another turn
	// holds it, before it is refused with a conflict. 0 does not wait.
	LockWait time.Duration
	// HistoryBytes bounds what a run sees of the thread in bytes of message
	// content, on top of Window: the oldest messages of the window are left
	// out until the rest fits. 0 means DefaultHistoryBytes.
	HistoryBytes int
	// MaxThreadBytes is what one thread may store (Thread.Bytes); a turn
	// whose new messages would take it past is refused. 0 means no limit.
	MaxThreadBytes int64
	// TokenQuota is how many tokens one resource's runs may use per UTC
	// day; a run is refused once they are spent. 0 means no quota.
	TokenQuota int64
	// CostQuota is what one resource's runs may cost per UTC day, in US
	// dollars; a run is refused once it is spent. 0 means no quota.
	CostQuota float64
	// Now and NewID are the clock and the id source; tests fix them.
	Now   func() time.Time
	NewID func() string
}

// Memory is the agent with conversation memory, and the threads API. It is
// safe for concurrent use.
type Memory struct {
	cfg Config
}

// New checks cfg and returns a Memory.
func New(cfg Config) (*Memory, error) {
	if cfg.Store == nil || cfg.Runner == nil {
		return nil, errors.New("memory: a store and a runner are required")
	}
	if cfg.Window < 0 || cfg.LockWait < 0 || cfg.HistoryBytes < 0 || cfg.MaxThreadBytes < 0 || cfg.TokenQuota < 0 || cfg.CostQuota < 0 {
		return nil, errors.New("memory: the history window, the lock wait and the limits must not be negative")
	}
	if cfg.HistoryBytes == 0 {
		cfg.HistoryBytes = DefaultHistoryBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	return &Memory{cfg: cfg}, nil
}

// Ping checks the store.
func (m *Memory) Ping(ctx context.Context) error { return m.cfg.Store.Ping(ctx) }

// Outcome is a finished turn: the run, and what it left in the thread.
type Outcome struct {
	*agent.Result
	Thread Thread
	// Stored are the messages of the turn as stored: those the reply
	// answers (the request's new messages, and any an earlier failed run
	// left pending), oldest first, then the reply.
	Stored []Message
}

// Run runs one turn of in.ThreadID: it checks ownership, waits for the
// thread's turn, stores the request's new messages, runs the agent on the
// history window plus those messages, and stores the reply. It returns
// once the reply is stored, so a client told the run finished can rely on
// the thread holding it.
func (m *Memory) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*Outcome, error) {
	if err := checkInput(in); err != nil {
		return nil, err
	}
	// What comes before the model runs on a goroutine of its own: the
	// stores' calls (SQLite's above all) grow a stack to 16 KiB, which the
	// run's goroutine would keep, unused, for as long as the model answers,
	// for every open stream.
	var (
		turn Turn
		th   Thread
		err  error
	)
	aside.Do(func() { turn, th, in, err = m.begin(ctx, in) })
	if err != nil {
		return nil, err
	}
	defer turn.Unlock()

	res, err := m.cfg.Runner.Run(ctx, in, emit)
	if err != nil {
		m.countFailed(ctx, in, err)
		return nil, err
	}
	answered, reply, err := m.saveReply(ctx, turn, in, res)
	if err != nil {
		return nil, apperr.Wrap(apperr.Internal, err, "the reply could not be saved to the thread: the details are in the server log")
	}
	return &Outcome{Result: res, Thread: th, Stored: append(answered, reply)}, nil
}

// begin is the part of a turn before the model: it checks the quota, takes
// the thread's turn, checks ownership, and stores the request's new
// messages. It returns the turn held, the thread, and in with its history
// and the messages to answer.
func (m *Memory) begin(ctx context.Context, in agent.Input) (Turn, Thread, agent.Input, error) {
	// The quota first: a request over it neither takes nor waits for the
	// thread, and the thread is not held for its read.
	if err := m.checkQuota(ctx, in.ResourceID); err != nil {
		return nil, Thread{}, in, err
	}
	now := m.cfg.Now()
	convo := 0
	var ids []string
	for _, msg := range in.Messages {
		if msg.Role != agent.RoleSystem {
			convo++
			if msg.ID != "" {
				ids = append(ids, msg.ID)
			}
		}
	}
	// One write before the model is called: the thread (created on first
	// use) and the request's new messages, stored pending so that a run
	// that fails leaves them in the thread for a retry. plan may run more
	// than once (Turn.Begin): it only sets history and msgs.
	var history []model.Message
	var msgs []agent.Message
	plan := func(th Thread, tail []Message, known map[string]bool) ([]Message, error) {
		// Owned, under the lock, by the thread as read: the only check for
		// a free thread, and for a busy one the thread may have been
		// created, or deleted and re-created, since the look before.
		if err := owns(th, in.ResourceID); err != nil {
			return nil, err
		}
		fresh := newMessages(in.Messages, tail, known)
		if !answerable(in.Messages, fresh, tail) {
			return nil, apperr.New(apperr.Conflict, "thread %q already holds every message of the request, and they have been answered: send a new message", in.ThreadID)
		}
		var err error
		if history, err = window(tail, m.cfg.Window, m.cfg.HistoryBytes); err != nil {
			return nil, apperr.Wrap(apperr.Internal, err, "internal server error: the details are in the server log")
		}
		msgs = make([]agent.Message, 0, len(in.Messages))
		var rows []Message
		isFresh := make(map[int]bool, len(fresh))
		for _, i := range fresh {
			isFresh[i] = true
		}
		for i, msg := range in.Messages {
			if msg.Role == agent.RoleSystem {
				msgs = append(msgs, msg)
				continue
			}
			if !isFresh[i] {
				continue
			}
			if msg.ID == "" {
				msg.ID = m.cfg.NewID()
			}
			row, err := clientRow(msg, now)
			if err != nil {
				return nil, apperr.Wrap(apperr.Internal, err, "internal server error: the details are in the server log")
			}
			row.Pending = true
			rows = append(rows, row)
			msgs = append(msgs, msg)
		}
		if err := m.checkThreadBytes(th, rows); err != nil {
			return nil, err
		}
		return rows, nil
	}
	tmpl := Thread{ID: in.ThreadID, ResourceID: in.ResourceID, Metadata: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
	n := max(m.cfg.Window, convo)
	// A free thread is taken at once, and Begin checks under the lock who
	// owns it. Only a busy thread's owner is read first, so that a foreign
	// request is refused before it would wait in the thread's queue. (A
	// read less for most turns.)
	turn, th, _, err := LockAndBegin(ctx, m.cfg.Store, tmpl, n, ids, plan)
	if errors.Is(err, ErrBusy) {
		turn, th, err = m.beginBusy(ctx, in, tmpl, n, ids, plan)
	} else if err != nil {
		err = m.storeErr(err)
	}
	if err != nil {
		return nil, Thread{}, in, err
	}
	in.History, in.Messages = history, msgs
	return turn, th, in, nil
}

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
	th, stored, err := beginOrUnlock(ctx, turn, t, n, ids, plan)
	if err != nil {
		return nil, th, nil, err
	}
	return turn, th, stored, nil
}

// beginBusy is the turn of a busy thread: its owner is read first, so that
// a foreign request is refused before it waits in the thread's queue.
func (m *Memory) beginBusy(ctx context.Context, in agent.Input, t Thread, n int, ids []string, plan Plan) (Turn, Thread, error) {
	if _, err := m.owned(ctx, in.ThreadID, in.ResourceID); err != nil && apperr.CodeOf(err) != apperr.NotFound {
		return nil, Thread{}, err
	}
	turn, err := m.lock(ctx, in.ThreadID)
	if err != nil {
		return nil, Thread{}, err
	}
	th, _, err := beginOrUnlock(ctx, turn, t, n, ids, plan)
	if err != nil {
		return nil, Thread{}, m.storeErr(err)
	}
	return turn, th, nil
}

// beginOrUnlock begins the turn held and lets it go when that fails (or panics).
func beginOrUnlock(ctx context.Context, turn Turn, t Thread, n int, ids []string, plan Plan) (Thread, []Message, error) {
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

// saveReply stores res's reply, marks the messages it answers and counts
// its tokens.
func (m *Memory) saveReply(ctx context.Context, turn Turn, in agent.Input, res *agent.Result) ([]Message, Message, error) {
	reply, err := replyRow(res)
	if err != nil {
		return nil, Message{}, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	return turn.Answer(sctx, reply, m.usage(in.ResourceID, in.ThreadID, res.Usage, res.Cost))
}

// usage is what a run used, as counted toward its resource's and its
// thread's day.
func (m *Memory) usage(resourceID, threadID string, u model.Usage, cost pricing.Cost) Usage {
	return Usage{ResourceID: resourceID, ThreadID: threadID, Day: Day(m.cfg.Now()), Tokens: int64(u.TotalTokens), Cost: cost.Total()}
}

// countFailed counts the usage of a run that failed, which Answer did
// not: a quota must see it too.
func (m *Memory) countFailed(ctx context.Context, in agent.Input, err error) {
	var re *agent.RunError
	if !errors.As(err, &re) || (re.Usage.TotalTokens <= 0 && re.Cost.Total() <= 0) {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	// A failure here only loses a count; the run's own error is what the
	// client must see.
	_ = m.cfg.Store.AddUsage(sctx, m.usage(in.ResourceID, in.ThreadID, re.Usage, re.Cost))
}

// checkQuota refuses a run of a resource that has spent its tokens or its
// money for the day, until the next UTC day begins.
func (m *Memory) checkQuota(ctx context.Context, resourceID string) error {
	if m.cfg.TokenQuota <= 0 && m.cfg.CostQuota <= 0 {
		return nil
	}
	now := m.cfg.Now()
	tokens, cost, err := m.cfg.Store.Used(ctx, resourceID, Day(now))
	if err != nil {
		return m.storeErr(err)
	}
	next := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	switch {
	case m.cfg.TokenQuota > 0 && tokens >= m.cfg.TokenQuota:
		return apperr.New(apperr.RateLimited, "resource %q has used %d tokens today, its quota of %d (-token-quota): it resets at 00:00 UTC",
			resourceID, tokens, m.cfg.TokenQuota).After(next.Sub(now))
	case m.cfg.CostQuota > 0 && cost >= m.cfg.CostQuota:
		return apperr.New(apperr.RateLimited, "resource %q has spent $%s today, its quota of $%s (-cost-quota): it resets at 00:00 UTC",
			resourceID, dollars(cost), dollars(m.cfg.CostQuota)).After(next.Sub(now))
	}
	return nil
}

// dollars formats an amount to the millionth of a dollar, without
// trailing zeros: 0.001037, 0.003, 2.5.
func dollars(d float64) string {
	return strconv.FormatFloat(math.Round(d*1e6)/1e6, 'f', -1, 64)
}

// MaxUsageDays bounds the days a usage report covers.
const MaxUsageDays = 90

// Usage reports resourceID's usage on the last days UTC days, today
// included: per day, and per thread within it. Days without usage are left
// out.
func (m *Memory) Usage(ctx context.Context, resourceID string, days int) ([]DayUsage, error) {
	if resourceID == "" {
		return nil, apperr.New(apperr.Invalid, "resourceId is required: usage is reported per resource, e.g. ?resourceId=user-1")
	}
	if days < 1 || days > MaxUsageDays {
		return nil, apperr.New(apperr.Invalid, "days must be a whole number from 1 to %d", MaxUsageDays)
	}
	now := m.cfg.Now()
	out, err := m.cfg.Store.UsageBetween(ctx, resourceID, Day(now.AddDate(0, 0, -(days-1))), Day(now))
	if err != nil {
		return nil, m.storeErr(err)
	}
	return out, nil
}

// checkThreadBytes refuses new messages that would take the thread past
// what it may store.
func (m *Memory) checkThreadBytes(th Thread, rows []Message) error {
	if m.cfg.MaxThreadBytes <= 0 {
		return nil
	}
	size := th.Bytes
	for _, r := range rows {
		size += r.Size()
	}
	if size <= m.cfg.MaxThreadBytes {
		return nil
	}
	return apperr.New(apperr.TooLarge, "thread %q stores %d bytes, and this turn would take it past its limit of %d (-max-thread-bytes): start a new thread, or delete this one",
		th.ID, th.Bytes, m.cfg.MaxThreadBytes)
}

// lock waits for the thread's turn.
func (m *Memory) lock(ctx context.Context, threadID string) (Turn, error) {
	turn, err := m.cfg.Store.Lock(ctx, threadID, m.cfg.LockWait)
	switch {
	case errors.Is(err, ErrBusy) && m.cfg.LockWait > 0:
		return nil, apperr.Wrap(apperr.Conflict, err, "thread %q is busy: another turn on it did not finish within %s; send the message again when it has", threadID, m.cfg.LockWait)
	case errors.Is(err, ErrBusy):
		return nil, apperr.Wrap(apperr.Conflict, err, "thread %q is busy with another turn; send the message again when it has finished", threadID)
	case err != nil:
		return nil, m.storeErr(err)
	}
	return turn, nil
}

// owned returns thread id if resourceID owns it: NotFound or Forbidden
// otherwise.
func (m *Memory) owned(ctx context.Context, id, resourceID string) (Thread, error) {
	th, err := m.cfg.Store.Thread(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return th, apperr.Wrap(apperr.NotFound, err, "thread %q not found", id)
	}
	if err != nil {
		return th, m.storeErr(err)
	}
	return th, owns(th, resourceID)
}

// owns checks that the thread belongs to resourceID. The messages never
// name the owner.
func owns(th Thread, resourceID string) error {
	switch {
	case th.ResourceID == resourceID:
		return nil
	case resourceID == "":
		return apperr.New(apperr.Forbidden, "thread %q belongs to a resource: send its resourceId", th.ID)
	case th.ResourceID == "":
		return apperr.New(apperr.Forbidden, "thread %q was created without a resourceId and can only be used without one", th.ID)
	}
	return apperr.New(apperr.Forbidden, "thread %q belongs to another resource", th.ID)
}

// storeErr is a store failure as the client sees it; the cause is logged.
func (m *Memory) storeErr(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return apperr.Wrap(apperr.Unavailable, err, "the request was cancelled")
	}
	return apperr.Wrap(apperr.Unavailable, err, "the conversation store failed: the details are in the server log")
}

// checkInput refuses what the stores cannot hold, and message ids that
// repeat (each stored message has its own).
func checkInput(in agent.Input) error {
	if strings.ContainsRune(in.ThreadID, 0) || strings.ContainsRune(in.ResourceID, 0) {
		return apperr.New(apperr.Invalid, "threadId and resourceId must not contain NUL characters")
	}
	seen := map[string]int{}
	for i, msg := range in.Messages {
		if strings.ContainsRune(msg.Content, 0) || strings.ContainsRune(msg.ID, 0) {
			return apperr.New(apperr.Invalid, "messages[%d] must not contain NUL characters", i)
		}
		if msg.ID == "" || msg.Role == agent.RoleSystem {
			continue
		}
		if j, dup := seen[msg.ID]; dup {
			return apperr.New(apperr.Invalid, "messages[%d].id %q repeats messages[%d].id: message ids must be unique", i, msg.ID, j)
		}
		seen[msg.ID] = i
	}
	return nil
}

// Unstored is a Runner's run as a turn of a thread that keeps nothing: each
// run sees only its request, and the turn's messages are reported as if
// stored. For tests and benchmarks of the layers above memory.
type Unstored struct{ Runner Runner }

// Run runs the agent and reports the turn.
func (u Unstored) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*Outcome, error) {
	res, err := u.Runner.Run(ctx, in, emit)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Result: res, Thread: Thread{ID: in.ThreadID, ResourceID: in.ResourceID, Metadata: json.RawMessage(`{}`),
		CreatedAt: res.Started, UpdatedAt: res.Started}}
	for _, m := range res.Input {
		row, err := clientRow(m, res.Started)
		if err != nil {
			return nil, err
		}
		o.Stored = append(o.Stored, row)
	}
	reply, err := replyRow(res)
	if err != nil {
		return nil, err
	}
	o.Stored = append(o.Stored, reply)
	return o, nil
}

// clientRow is a message of the client's as a turn stores it, at now.
func clientRow(msg agent.Message, now time.Time) (Message, error) {
	stored, err := encodeModel([]model.Message{{Role: msg.Role, Content: msg.Content}})
	if err != nil {
		return Message{}, err
	}
	return Message{ID: msg.ID, Role: msg.Role, Text: msg.Content, Model: stored, CreatedAt: now}, nil
}

// replyRow is a run's reply as a turn stores it. Its text keeps no NUL
// characters, which the stores cannot hold.
func replyRow(res *agent.Result) (Message, error) {
	stored, err := encodeModel(res.Reply)
	if err != nil {
		return Message{}, err
	}
	return Message{ID: res.ReplyID, Role: model.RoleAssistant, Text: strings.ReplaceAll(res.Text(), "\x00", ""),
		Model: stored, RunID: res.RunID, CreatedAt: res.Started}, nil
}
