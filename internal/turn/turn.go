// Package turn runs one turn of a thread: the agent, with the thread's
// memory. A turn is an ordered list of steps around the model (see
// Turns.before and Turns.after):
//
//   - quota: a resource that has spent its day's tokens or money is refused
//     before it takes or waits for the thread (internal/limits);
//   - take the thread: wait for the thread's turn (one turn at a time, up
//     to a bound, then a conflict), check ownership (a thread belongs to
//     the resourceId that created it), store the request's new messages
//     (pending; de-duplicated by id, else by the overlap between the
//     request and the stored tail: docs/memory.md) and read the history
//     window the model sees;
//   - the agent runs on the history plus the new messages;
//   - save the reply: the reply, in one transaction that also marks what
//     it answered and counts its usage.
//
// Steps before the model share a State; a step that fails ends the turn
// with its error, and the thread, once taken, is let go whatever happens.
// New concerns (working memory, recall, guardrails) are new steps in these
// lists, not branches inside Run.
package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/offstack"
	"github.com/companionhq/companion/internal/pricing"
)

// Agent runs the model and its tools; *agent.Agent is one.
type Agent interface {
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

// Config holds the turns' dependencies and settings.
type Config struct {
	Store memory.Store
	Agent Agent
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
	// whose new messages would take it past is refused.
	MaxThreadBytes limits.ThreadBytes
	// Quota is what one resource's runs may use per UTC day.
	Quota limits.Quota
	// WorkingMemory and Recall say how the turn shows the model what is
	// known of the user (workingmemory.go, recall.go).
	WorkingMemory WorkingMemoryConfig
	Recall        RecallConfig
	// Titler names a thread after its first exchange, off the reply's
	// path (titles.go); nil leaves threads untitled.
	Titler Titler
	// Embedder, when set, adds vector ranking to recall and search
	// (vectors.go): its Model names the vectors the store's vector index
	// holds. Stored, when set, is told (without blocking) that a turn or an
	// import stored messages: the indexer that embeds them wakes.
	Embedder QueryEmbedder
	Stored   func()
	// EmbedMinSimilarity is the least cosine similarity with the query
	// for a message's vector to rank it; 0 is DefaultEmbedMinSimilarity,
	// below 0 keeps every vector's nearest.
	EmbedMinSimilarity float64
	// EmbedWeight is what a rank in the vector ranking counts for beside
	// the same rank in the full-text one, when they are fused; 0 is
	// DefaultEmbedWeight.
	EmbedWeight float64
	// Safety guards the turns' users (safety.go).
	Safety SafetyConfig
	// Observer is told about recall, working memory and erasures, for
	// metrics; nil is none. Tracer makes their spans; nil makes none.
	Observer Observer
	Tracer   trace.Tracer
	// Logger gets what goes wrong off the reply's path (a title that could
	// not be made); nil discards.
	Logger *slog.Logger
	// Now and NewID are the clock and the id source; tests fix them.
	Now   func() time.Time
	NewID func() string
}

// Observer is told what the turns do beyond the agent, for metrics. Its
// methods must be safe for concurrent use and must not block.
type Observer interface {
	// Recalled reports a recall or a search: how it ranked (SearchText
	// or SearchHybrid), how long it took, and how many messages it gave
	// the model (or found).
	Recalled(typ string, took time.Duration, results int)
	// WorkingMemoryUpdated reports a stored update of working memory of
	// scope (memory.ScopeResource or memory.ScopeThread).
	WorkingMemoryUpdated(scope string)
	// ResourceErased reports that everything kept about a resource was
	// erased.
	ResourceErased()
	// Referred reports a crisis referral, in the texts of locale (a
	// locale of the operator's referral texts).
	Referred(locale string)
}

type nopObserver struct{}

func (nopObserver) Recalled(string, time.Duration, int) {}
func (nopObserver) WorkingMemoryUpdated(string)         {}
func (nopObserver) ResourceErased()                     {}
func (nopObserver) Referred(string)                     {}

// State is a turn as its steps see and change it.
type State struct {
	// In is the request, then what the agent runs on: the steps before the
	// model set its History and keep in Messages only what is to answer.
	In agent.Input
	// Now is when the turn began.
	Now time.Time
	// Thread is the thread as taken; held holds its turn; tail is the
	// thread's history as stored (the window the model sees), read before
	// the turn's messages were stored.
	Thread memory.Thread
	held   memory.Turn
	tail   []memory.Message
	// wm is working memory, and settings the resource's settings, when
	// the store read them as it took the thread (beginReader), for the
	// steps that use them.
	wm       *memory.WorkingMemory
	settings *memory.ResourceSettings
	// trip is an input processor's (guard), nil when none tripped.
	trip *agent.Trip
	// queryVec receives the new message's vector, for recall, when an
	// embedding model makes one (vectors.go).
	queryVec <-chan []float32
	// Result is the agent's run, once it has returned.
	Result *agent.Result
	// Stored are the messages of the turn as stored (see Outcome.Stored).
	Stored []memory.Message
}

// step is one step of a turn, named for what it does.
type step struct {
	name string
	run  func(ctx context.Context, s *State) error
}

// Turns runs the turns of threads. It is safe for concurrent use.
type Turns struct {
	cfg Config
	// before runs in order before the model, after in order once it has
	// answered.
	before, after []step
	// titles counts the titles being made (titles.go).
	titles sync.WaitGroup
}

// New checks cfg and returns the Turns.
func New(cfg Config) (*Turns, error) {
	if cfg.Store == nil || cfg.Agent == nil {
		return nil, errors.New("turn: a store and an agent are required")
	}
	if cfg.Window < 0 || cfg.LockWait < 0 || cfg.HistoryBytes < 0 || cfg.MaxThreadBytes < 0 || cfg.Quota.Tokens < 0 || cfg.Quota.Cost < 0 {
		return nil, errors.New("turn: the history window, the lock wait and the limits must not be negative")
	}
	if cfg.HistoryBytes == 0 {
		cfg.HistoryBytes = DefaultHistoryBytes
	}
	if cfg.EmbedWeight == 0 {
		cfg.EmbedWeight = DefaultEmbedWeight
	}
	if cfg.EmbedMinSimilarity == 0 {
		cfg.EmbedMinSimilarity = DefaultEmbedMinSimilarity
	}
	cfg.WorkingMemory = cfg.WorkingMemory.withDefaults()
	cfg.Recall = cfg.Recall.withDefaults()
	if err := errors.Join(cfg.WorkingMemory.check(), cfg.Recall.check()); err != nil {
		return nil, fmt.Errorf("turn: %w", err)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tracer == nil {
		cfg.Tracer = tracenoop.NewTracerProvider().Tracer("")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	t := &Turns{cfg: cfg}
	t.before = []step{
		// The quota first: a request over it neither takes nor waits for
		// the thread, and the thread is not held for its read.
		{"check the quota", t.checkQuota},
		// Before anything else sees the message: what is stored, embedded
		// and shown is what the processors let through.
		{"guard the message", t.guard},
		// Started early, so that it may have answered by recall.
		{"embed the question", t.startQueryVector},
		{"take the thread", t.take},
		// After the take, which may have read the resource's mark with
		// the thread; before the notices, which a minor's differ in.
		{"know a minor", t.knowMinor},
		{"tell the notices", t.notify},
		{"show working memory", t.workingMemory},
		{"recall earlier conversations", t.recall},
	}
	t.after = []step{
		{"save the reply", t.saveReply},
		{"title the thread", t.title},
	}
	return t, nil
}

// Ping checks the store: it answers, holds the expected schema, and
// writes. A store that cannot write is not ready, and says why.
func (t *Turns) Ping(ctx context.Context) error {
	err := t.cfg.Store.Ping(ctx)
	if we := (*memory.WriteError)(nil); errors.As(err, &we) {
		return apperr.Wrap(apperr.Unavailable, err, "not ready: the conversation store cannot write: %s", we.Reason).After(StoreRetryAfter)
	}
	if err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "not ready: the database does not answer, or its schema is not the one this build expects").After(StoreRetryAfter)
	}
	return nil
}

// Outcome is a finished turn: the run, and what it left in the thread.
type Outcome struct {
	*agent.Result
	Thread memory.Thread
	// Stored are the messages of the turn as stored: those the reply
	// answers (the request's new messages, and any an earlier failed run
	// left pending), oldest first, then the reply.
	Stored []memory.Message
}

// Run runs one turn of in.ThreadID: the steps before the model, the agent,
// and the steps after it. It returns once the reply is stored, so a client
// told the run finished can rely on the thread holding it.
func (t *Turns) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*Outcome, error) {
	if err := checkInput(in); err != nil {
		return nil, err
	}
	s := &State{In: in, Now: t.cfg.Now()}
	// What comes before the model runs on a goroutine of its own: the
	// stores' calls (SQLite's above all) grow a stack to 16 KiB, which the
	// run's goroutine would keep, unused, for as long as the model answers,
	// for every open stream.
	var err error
	offstack.Do(func() { err = runSteps(ctx, t.before, s) })
	defer func() {
		if s.held != nil {
			s.held.Unlock()
		}
	}()
	if err != nil {
		return nil, err
	}
	res, err := t.cfg.Agent.Run(ctx, s.In, emit)
	if err != nil {
		t.countFailed(ctx, s.In, err)
		return nil, err
	}
	s.Result = res
	if err := runSteps(ctx, t.after, s); err != nil {
		return nil, err
	}
	return &Outcome{Result: res, Thread: s.Thread, Stored: s.Stored}, nil
}

// runSteps runs steps in order, until one fails.
func runSteps(ctx context.Context, steps []step, s *State) error {
	for _, st := range steps {
		if err := st.run(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// checkQuota refuses a run of a resource that has spent its tokens or its
// money for the day, until the next UTC day begins.
func (t *Turns) checkQuota(ctx context.Context, s *State) error {
	if err := t.cfg.Quota.Check(ctx, t.cfg.Store, s.In.ResourceID, s.Now); err != nil {
		return storeErr(err)
	}
	return nil
}

// take takes the thread's turn, checks ownership, and stores the request's
// new messages. It leaves in s the turn held, the thread, and in s.In the
// history and the messages to answer.
func (t *Turns) take(ctx context.Context, s *State) error {
	in, now := s.In, s.Now
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
	plan := func(th memory.Thread, tail []memory.Message, known map[string]bool) ([]memory.Message, error) {
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
		s.tail = tail
		var err error
		if history, err = window(tail, t.cfg.Window, t.cfg.HistoryBytes); err != nil {
			return nil, apperr.Wrap(apperr.Internal, err, "internal server error: the details are in the server log")
		}
		msgs = make([]agent.Message, 0, len(in.Messages))
		var rows []memory.Message
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
				msg.ID = t.cfg.NewID()
			}
			row, err := StoredMessage(msg, now)
			if err != nil {
				return nil, apperr.Wrap(apperr.Internal, err, "internal server error: the details are in the server log")
			}
			row.Pending = true
			rows = append(rows, row)
			msgs = append(msgs, msg)
		}
		if err := t.cfg.MaxThreadBytes.Check(th, rows); err != nil {
			return nil, err
		}
		return rows, nil
	}
	tmpl := memory.Thread{ID: in.ThreadID, ResourceID: in.ResourceID, Metadata: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
	n := max(t.cfg.Window, convo)
	// A free thread is taken at once, and Begin checks under the lock who
	// owns it. Only a busy thread's owner is read first, so that a foreign
	// request is refused before it would wait in the thread's queue. (A
	// read less for most turns.)
	turn, th, err := t.lockBegin(ctx, s, tmpl, n, ids, plan)
	if errors.Is(err, memory.ErrBusy) {
		turn, th, err = t.takeBusy(ctx, in, tmpl, n, ids, plan)
	} else if err != nil {
		err = storeErr(err)
	}
	if err != nil {
		return err
	}
	s.held, s.Thread = turn, th
	s.In.History, s.In.Messages = history, msgs
	return nil
}

// lockBegin is memory.LockAndBegin. Where the store can (beginReader), it
// reads in the same round trip working memory, into s.wm, and the
// resource's settings when the turn needs them (asksMinor), into
// s.settings.
func (t *Turns) lockBegin(ctx context.Context, s *State, tmpl memory.Thread, n int, ids []string, plan memory.Plan) (memory.Turn, memory.Thread, error) {
	br, ok := t.cfg.Store.(beginReader)
	if !ok {
		turn, th, _, err := memory.LockAndBegin(ctx, t.cfg.Store, tmpl, n, ids, plan)
		return turn, th, err
	}
	var reads memory.BeginReads
	if !t.cfg.WorkingMemory.Off {
		scope, key := t.cfg.WorkingMemory.key(s.In.ThreadID, s.In.ResourceID)
		reads.WorkingMemory = &memory.WorkingMemory{Scope: scope, Key: key}
	}
	if asksMinor(s.In) {
		reads.Settings = &memory.ResourceSettings{ResourceID: s.In.ResourceID}
	}
	turn, th, _, err := br.LockBeginReading(ctx, tmpl, n, ids, plan, reads)
	if err == nil {
		s.wm, s.settings = reads.WorkingMemory, reads.Settings
	}
	return turn, th, err
}

// beginReader is a store that makes a turn's reads (working memory, the
// resource's settings) in the round trip that takes and begins a thread
// (memory.LockAndBegin): PostgreSQL, where that saves a turn a round trip
// each, the most of the service's CPU a read costs.
type beginReader interface {
	LockBeginReading(ctx context.Context, t memory.Thread, n int, ids []string, plan memory.Plan, reads memory.BeginReads) (memory.Turn, memory.Thread, []memory.Message, error)
}

// takeBusy takes the turn of a busy thread: its owner is read first, so
// that a foreign request is refused before it waits in the thread's queue.
func (t *Turns) takeBusy(ctx context.Context, in agent.Input, tmpl memory.Thread, n int, ids []string, plan memory.Plan) (memory.Turn, memory.Thread, error) {
	if _, err := owned(ctx, t.cfg.Store, in.ThreadID, in.ResourceID); err != nil && apperr.CodeOf(err) != apperr.NotFound {
		return nil, memory.Thread{}, err
	}
	turn, err := lock(ctx, t.cfg.Store, in.ThreadID, t.cfg.LockWait)
	if err != nil {
		return nil, memory.Thread{}, err
	}
	th, _, err := memory.BeginOrUnlock(ctx, turn, tmpl, n, ids, plan)
	if err != nil {
		return nil, memory.Thread{}, storeErr(err)
	}
	return turn, th, nil
}

// saveReply stores the run's reply, marks the messages it answers and
// counts its tokens.
func (t *Turns) saveReply(ctx context.Context, s *State) error {
	reply, err := StoredReply(s.Result)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "the reply could not be saved to the thread: the details are in the server log")
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	answered, reply, err := s.held.Answer(sctx, reply, t.usage(s.In.ResourceID, s.In.ThreadID, s.Result.Usage, s.Result.Cost))
	if err != nil {
		// The store's failure, as on every route: the client may send the
		// message again, which the thread keeps, pending.
		return apperr.Wrap(apperr.Unavailable, err, "the reply could not be saved to the thread: the conversation store failed; the details are in the server log").After(StoreRetryAfter)
	}
	s.Stored = append(answered, reply)
	t.stored()
	return nil
}

// usage is what a run used, as counted toward its resource's and its
// thread's day.
func (t *Turns) usage(resourceID, threadID string, u model.Usage, cost pricing.Cost) memory.Usage {
	return memory.Usage{ResourceID: resourceID, ThreadID: threadID, Day: memory.Day(t.cfg.Now()), Tokens: int64(u.TotalTokens), Cost: cost.Total()}
}

// countFailed counts the usage of a run that failed, which Answer did
// not: a quota must see it too.
func (t *Turns) countFailed(ctx context.Context, in agent.Input, err error) {
	var re *agent.RunError
	if !errors.As(err, &re) || (re.Usage.TotalTokens <= 0 && re.Cost.Total() <= 0) {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	// A failure here only loses a count; the run's own error is what the
	// client must see.
	_ = t.cfg.Store.AddUsage(sctx, t.usage(in.ResourceID, in.ThreadID, re.Usage, re.Cost))
}

// lock waits up to wait for the thread's turn.
func lock(ctx context.Context, store memory.Store, threadID string, wait time.Duration) (memory.Turn, error) {
	turn, err := store.Lock(ctx, threadID, wait)
	switch {
	case errors.Is(err, memory.ErrBusy) && wait > 0:
		return nil, apperr.Wrap(apperr.Conflict, err, "thread %q is busy: another turn on it did not finish within %s; send the message again when it has", threadID, wait)
	case errors.Is(err, memory.ErrBusy):
		return nil, apperr.Wrap(apperr.Conflict, err, "thread %q is busy with another turn; send the message again when it has finished", threadID)
	case err != nil:
		return nil, storeErr(err)
	}
	return turn, nil
}

// owned returns thread id if resourceID owns it: NotFound or Forbidden
// otherwise.
func owned(ctx context.Context, store memory.Store, id, resourceID string) (memory.Thread, error) {
	th, err := store.Thread(ctx, id)
	if errors.Is(err, memory.ErrNotFound) {
		return th, apperr.Wrap(apperr.NotFound, err, "thread %q not found", id)
	}
	if err != nil {
		return th, storeErr(err)
	}
	return th, owns(th, resourceID)
}

// owns checks that the thread belongs to resourceID. The messages never
// name the owner.
func owns(th memory.Thread, resourceID string) error {
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

// StoreRetryAfter is the Retry-After of every answer that the store is
// unavailable.
const StoreRetryAfter = 5 * time.Second

// storeErr is a store failure as the client sees it; the cause is logged.
func storeErr(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return apperr.Wrap(apperr.Unavailable, err, "the request was cancelled")
	}
	return apperr.Wrap(apperr.Unavailable, err, "the conversation store failed: the details are in the server log").After(StoreRetryAfter)
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

// StoredMessage is a message of the client's as a turn stores it, at now.
func StoredMessage(msg agent.Message, now time.Time) (memory.Message, error) {
	stored, err := memory.EncodeModel([]model.Message{{Role: msg.Role, Content: msg.Content}})
	if err != nil {
		return memory.Message{}, err
	}
	return memory.Message{ID: msg.ID, Role: msg.Role, Text: msg.Content, Model: stored, CreatedAt: now}, nil
}

// StoredReply is a run's reply as a turn stores it. Its text keeps no NUL
// characters, which the stores cannot hold.
func StoredReply(res *agent.Result) (memory.Message, error) {
	stored, err := memory.EncodeModel(res.Reply)
	if err != nil {
		return memory.Message{}, err
	}
	return memory.Message{ID: res.ReplyID, Role: model.RoleAssistant, Text: strings.ReplaceAll(res.Text(), "\x00", ""),
		Model: stored, RunID: res.RunID, CreatedAt: res.Started}, nil
}
