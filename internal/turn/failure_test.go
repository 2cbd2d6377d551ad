package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/turn"
)

// flaky is the fake model, failing on demand: before its first part, or
// after it.
type flaky struct {
	mu                    sync.Mutex
	failBefore, failAfter bool
	fake                  *fake.Model
}

func (f *flaky) set(before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failBefore, f.failAfter = before, after
}

func (f *flaky) Provider() string { return "fake" }
func (f *flaky) ID() string       { return "fake" }

func (f *flaky) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Part, error] {
	f.mu.Lock()
	before, after := f.failBefore, f.failAfter
	f.mu.Unlock()
	broke := &model.Error{Kind: model.KindUpstream, Provider: "fake", Message: "it broke"}
	return func(yield func(model.Part, error) bool) {
		if before {
			yield(model.Part{}, broke)
			return
		}
		for p, err := range f.fake.Stream(ctx, req) {
			if !yield(p, err) || err != nil {
				return
			}
			if after {
				yield(model.Part{}, broke)
				return
			}
		}
	}
}

// serveWith runs the memory layer over the real agent on m and the store
// that db names (wrapped by wrap when not nil), configured further by
// configure, and the HTTP API over it.
func serveWith(t *testing.T, db string, m model.Model, wrap func(memory.Store) memory.Store, configure ...func(*turn.Config)) client {
	t.Helper()
	store, err := app.OpenStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if wrap != nil {
		store = wrap(store)
	}
	ag, err := agent.New(agent.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	cfg := turn.Config{Store: store, Agent: ag, Window: turn.DefaultWindow, LockWait: 10 * time.Second}
	for _, f := range configure {
		f(&cfg)
	}
	turns, err := turn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Runner: turns, Threads: turns.Threads()}))
	t.Cleanup(srv.Close)
	// Requests need only the server's URL.
	return client{t: t, Service: &apptest.Service{URL: srv.URL}}
}

// TestFailedRunKeepsTheMessage: the user's message is stored, pending, when
// its run fails; a retry of it (with or without an id, alone or within the
// whole conversation) does not store it again.
func TestFailedRunKeepsTheMessage(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		m := &flaky{fake: fake.New(fake.Options{})}
		c := serveWith(t, db, m, nil)
		checkThread := func(want ...string) []api.UIMessage {
			t.Helper()
			stored := c.messages("t", "r")
			var got []string
			for _, s := range stored {
				g := s.Role
				if s.Metadata.Pending {
					g += "(pending)"
				}
				got = append(got, g)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("the thread holds %v, want %v", got, want)
			}
			return stored
		}

		// Generate fails before the model answers: 502, the message stays.
		m.set(true, false)
		status, b := c.do("POST", generatePath, reqBody("t", "r", user("Hello there")))
		expectError(t, "failed generate", status, b, 502, "fake model failed: it broke")
		first := checkThread("user(pending)")[0]
		// The same message again (no id): answered, not stored twice.
		m.set(false, false)
		r := c.turn(false, reqBody("t", "r", user("Hello there")))
		if len(r.ui) != 2 || r.ui[0].ID != first.ID || r.ui[0].Metadata.Pending {
			t.Fatalf("the retry's turn is %+v, want the stored message %s and the reply", r.ui, first.ID)
		}
		checkThread("user", "assistant")

		// The stream fails after its first token: the message (with an id)
		// stays; no partial reply is stored; a retry with the id answers it.
		m.set(false, true)
		status, b = c.do("POST", streamPath, reqBody("t", "r", api.Message{ID: "m2", Role: "user", Content: "Second"}))
		events, err := apitest.ReadSSE(strings.NewReader(string(b)))
		if status != 200 || err != nil || len(events) < 2 || events[len(events)-2].Type != "error" || events[len(events)-2].Error.Code != api.CodeModelError {
			t.Fatalf("failed stream: %d %s", status, b)
		}
		if got := checkThread("user", "assistant", "user(pending)"); got[2].ID != "m2" {
			t.Fatalf("stored id %s, want m2", got[2].ID)
		}
		m.set(false, false)
		c.turn(true, reqBody("t", "r", api.Message{ID: "m2", Role: "user", Content: "Second"}))
		stored := checkThread("user", "assistant", "user", "assistant")

		// A client that resends everything, and retries after a failure.
		convo := []api.Message{user(apitest.PartsText(stored[0])), assistant(apitest.PartsText(stored[1])), user(apitest.PartsText(stored[2])), assistant(apitest.PartsText(stored[3])), user("Third")}
		m.set(true, false)
		status, b = c.do("POST", generatePath, reqBody("t", "r", convo...))
		expectError(t, "failed resend", status, b, 502, "it broke")
		m.set(false, false)
		r = c.turn(false, reqBody("t", "r", convo...))
		if !strings.Contains(r.text, `You asked: "Third"`) {
			t.Fatalf("the retry answers %s", r.text)
		}
		checkThread("user", "assistant", "user", "assistant", "user", "assistant")
	})
}

// failingAnswers is a store whose replies cannot be saved.
type failingAnswers struct{ memory.Store }

func (f failingAnswers) Lock(ctx context.Context, id string, wait time.Duration) (memory.Turn, error) {
	turn, err := f.Store.Lock(ctx, id, wait)
	if err != nil {
		return nil, err
	}
	return failingTurn{turn}, nil
}

type failingTurn struct{ memory.Turn }

func (failingTurn) Answer(context.Context, memory.Message, memory.Usage) ([]memory.Message, memory.Message, error) {
	return nil, memory.Message{}, errors.New("disk full")
}

// TestReplyNotSaved: when the reply cannot be stored, the client is told:
// the stream ends with an error instead of a normal run-finish, generate
// answers 503 with Retry-After, as every route does when the store fails.
// The message stays pending.
func TestReplyNotSaved(t *testing.T) {
	c := serveWith(t, apptest.SQLiteURL(t), fake.New(fake.Options{}), func(s memory.Store) memory.Store { return failingAnswers{s} })
	res, b := c.Do(t, "POST", generatePath, reqBody("t", "r", user("Hello")))
	expectError(t, "generate", res.StatusCode, b, 503, "the reply could not be saved to the thread")
	if res.Header.Get("Retry-After") != "5" {
		t.Fatalf("generate: Retry-After %q, want 5", res.Header.Get("Retry-After"))
	}
	status, b := c.do("POST", streamPath, reqBody("t", "r", user("Hello")))
	events, err := apitest.ReadSSE(strings.NewReader(string(b)))
	if err != nil || status != 200 {
		t.Fatalf("stream: %d %v", status, err)
	}
	if err := apitest.Check(events); err != nil {
		t.Fatal(err)
	}
	n := len(events)
	last, errEv := events[n-1], events[n-2]
	var fin api.RunFinishPayload
	_ = json.Unmarshal(last.Payload, &fin)
	if errEv.Type != "error" || errEv.Error.Code != api.CodeInternal || !strings.Contains(errEv.Error.Message, "could not be saved") || fin.FinishReason != "error" {
		t.Fatalf("the stream ends with %s", b[len(b)-400:])
	}
	stored := c.messages("t", "r")
	if len(stored) != 1 || !stored[0].Metadata.Pending {
		t.Fatalf("the thread holds %+v", stored)
	}
}

// panickingBegin is a store whose turns' Begin panics, the first time.
type panickingBegin struct {
	memory.Store
	calls *atomic.Int32
}

func (p panickingBegin) Lock(ctx context.Context, id string, wait time.Duration) (memory.Turn, error) {
	turn, err := p.Store.Lock(ctx, id, wait)
	if err != nil {
		return nil, err
	}
	return panickingTurn{turn, p.calls}, nil
}

type panickingTurn struct {
	memory.Turn
	calls *atomic.Int32
}

func (p panickingTurn) Begin(ctx context.Context, th memory.Thread, n int, ids []string, plan memory.Plan) (memory.Thread, []memory.Message, error) {
	if p.calls.Add(1) == 1 {
		panic("the store broke")
	}
	return p.Turn.Begin(ctx, th, n, ids, plan)
}

// TestPanicBeforeTheModel: the part of a turn before the model runs on a
// goroutine of its own; a panic there still reaches the run, which answers
// 500, logs the panic with the stack where it happened, and lets go of the
// thread.
func TestPanicBeforeTheModel(t *testing.T) {
	store, err := app.OpenStore(context.Background(), apptest.SQLiteURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ag, err := agent.New(agent.Config{Model: fake.New(fake.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	turns, err := turn.New(turn.Config{Store: panickingBegin{store, new(atomic.Int32)}, Agent: ag, Window: turn.DefaultWindow, LockWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var log testkit.Buffer
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Runner: turns, Threads: turns.Threads(), Logger: slog.New(slog.NewTextHandler(&log, nil))}))
	t.Cleanup(srv.Close)
	c := client{t: t, Service: &apptest.Service{URL: srv.URL}}

	status, b := c.do("POST", generatePath, reqBody("t", "r", user("Hello")))
	expectError(t, "generate", status, b, 500, "internal server error")
	if logged := log.String(); !strings.Contains(logged, "the store broke") || !strings.Contains(logged, "panickingTurn.Begin") {
		t.Fatalf("the log does not show the panic where it happened:\n%s", logged)
	}
	if status, b := c.do("POST", generatePath, reqBody("t", "r", user("Hello"))); status != 200 {
		t.Fatalf("the thread is still held after the panic: %d %s", status, b)
	}
}

// countingLocks counts the turns taken of its store's threads.
type countingLocks struct {
	memory.Store
	n *atomic.Int64
}

func (c countingLocks) Lock(ctx context.Context, id string, wait time.Duration) (memory.Turn, error) {
	c.n.Add(1)
	return c.Store.Lock(ctx, id, wait)
}

// TestOverQuotaTakesNoThread: a request of a resource over its quota is
// refused before it takes the thread's turn, so that it neither holds the
// thread nor waits for it.
func TestOverQuotaTakesNoThread(t *testing.T) {
	var locks atomic.Int64
	c := serveWith(t, apptest.SQLiteURL(t), fake.New(fake.Options{}),
		func(s memory.Store) memory.Store { return countingLocks{s, &locks} },
		func(cfg *turn.Config) { cfg.Quota.Tokens = 1 })
	if status, b := c.do("POST", generatePath, reqBody("t", "r", user("Hello"))); status != 200 {
		t.Fatalf("the first turn: %d %s", status, b)
	}
	before := locks.Load()
	status, b := c.do("POST", generatePath, reqBody("t", "r", user("Hello again")))
	expectError(t, "a turn over the quota", status, b, 429, "quota")
	if n := locks.Load() - before; n != 0 {
		t.Fatalf("the refused turn took the thread %d times, want none", n)
	}
}
