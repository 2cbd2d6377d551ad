// Package memorytest is the suite every memory.Store must pass, and the
// history-load benchmark they all run. Each store's tests call Run with a
// Harness that opens it on a fresh database.
package memorytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// window is how many messages a turn reads of its thread's tail by
// default (turn.DefaultWindow).
const window = 20

// Harness opens the store under test.
type Harness struct {
	// Fresh makes a new empty database and returns a function that opens
	// an instance of the store on it; each call opens another instance
	// (as another process would). Instances are closed by the suite.
	Fresh func(t testing.TB) func(ctx context.Context) (memory.Store, error)
	// SharedLocks says instances on one database share turn locks (true
	// for a store that serves several processes).
	SharedLocks bool
	// Settle, when set, lets a store finish what a bulk load left it to do
	// in the background (SQLite: copying its write-ahead log into the
	// database), so that the benchmarks measure the steady state, not the
	// second after a thread was seeded.
	Settle func(tb testing.TB, s memory.Store)
}

// open opens one instance on a fresh database.
func (h Harness) open(t testing.TB) memory.Store {
	t.Helper()
	return mustOpen(t, h.Fresh(t))
}

func mustOpen(t testing.TB, open func(ctx context.Context) (memory.Store, error)) memory.Store {
	t.Helper()
	s, err := open(context.Background())
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// base is a fixed time, far from now, so that tests see the times they set.
var base = time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("ThreadIsCreatedOnceWithItsOwner", func(t *testing.T) { t.Parallel(); testCreate(t, h) })
	t.Run("MessagesKeepOrderAndContent", func(t *testing.T) { t.Parallel(); testMessages(t, h) })
	t.Run("TailIsTheLastMessages", func(t *testing.T) { t.Parallel(); testTail(t, h) })
	t.Run("KnownIDs", func(t *testing.T) { t.Parallel(); testKnown(t, h) })
	t.Run("AnswerClearsPending", func(t *testing.T) { t.Parallel(); testAnswer(t, h) })
	t.Run("MessageIDsAreUniquePerThread", func(t *testing.T) { t.Parallel(); testUniqueIDs(t, h) })
	t.Run("ThreadsOfAResource", func(t *testing.T) { t.Parallel(); testThreads(t, h) })
	t.Run("UpdateThread", func(t *testing.T) { t.Parallel(); testUpdate(t, h) })
	t.Run("DeleteThread", func(t *testing.T) { t.Parallel(); testDelete(t, h) })
	t.Run("LockSerializesTurns", func(t *testing.T) { t.Parallel(); testLockSerializes(t, h, false) })
	t.Run("LockWaitRunsOut", func(t *testing.T) { t.Parallel(); testLockTimeout(t, h) })
	t.Run("LockWaitIsCancelled", func(t *testing.T) { t.Parallel(); testLockCancel(t, h) })
	t.Run("LocksOfOtherThreadsAreFree", func(t *testing.T) { t.Parallel(); testLockOthers(t, h) })
	t.Run("ConcurrentStarts", func(t *testing.T) { t.Parallel(); testConcurrentStarts(t, h) })
	t.Run("ThreadBytesCountItsMessages", func(t *testing.T) { t.Parallel(); testThreadBytes(t, h) })
	t.Run("TokenUsagePerResourceAndDay", func(t *testing.T) { t.Parallel(); testUsage(t, h) })
	t.Run("CrisisReferralsPerDayAndLocale", func(t *testing.T) { t.Parallel(); testReferrals(t, h) })
	t.Run("ResourceSettingsOutliveErasure", func(t *testing.T) { t.Parallel(); testResourceSettings(t, h) })
	t.Run("PingChecksTheSchema", func(t *testing.T) { t.Parallel(); testPing(t, h) })
	t.Run("BeginStoresATurnInOneTransaction", func(t *testing.T) { t.Parallel(); testBegin(t, h) })
	t.Run("AnswerEndsTheTurn", func(t *testing.T) { t.Parallel(); testAnswerEndsTurn(t, h) })
	t.Run("LockBeginTakesAndBegins", func(t *testing.T) { t.Parallel(); testLockBegin(t, h) })
	runKnowledge(t, h)
	t.Run("LockAcrossInstances", func(t *testing.T) {
		if !h.SharedLocks {
			t.Skip("this store serves one process: its locks are in-process")
		}
		t.Parallel()
		testLockSerializes(t, h, true)
	})
}

func lock(t testing.TB, s memory.Store, id string) memory.Turn {
	t.Helper()
	turn, err := s.Lock(context.Background(), id, 10*time.Second)
	if err != nil {
		t.Fatalf("locking %s: %v", id, err)
	}
	t.Cleanup(turn.Unlock)
	return turn
}

func open(t testing.TB, turn memory.Turn, id, owner string) memory.Thread {
	t.Helper()
	th, err := turn.Open(context.Background(), memory.Thread{ID: id, ResourceID: owner, Title: "", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base})
	if err != nil {
		t.Fatalf("opening thread %s: %v", id, err)
	}
	return th
}

// msg is a client message at base+i seconds.
func msg(id, role, text string, i int) memory.Message {
	model, _ := json.Marshal([]map[string]string{{"role": role, "content": text}})
	return memory.Message{ID: id, Role: role, Text: text, Model: model, Pending: true, CreatedAt: base.Add(time.Duration(i) * time.Second)}
}

func appendMsgs(t testing.TB, turn memory.Turn, msgs ...memory.Message) []memory.Message {
	t.Helper()
	out, err := turn.Append(context.Background(), msgs)
	if err != nil {
		t.Fatalf("appending: %v", err)
	}
	return out
}

func testCreate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	if _, err := s.Thread(ctx, "t1"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("missing thread: got %v, want ErrNotFound", err)
	}
	turn := lock(t, s, "t1")
	if _, err := turn.Thread(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("missing thread through the turn: got %v, want ErrNotFound", err)
	}
	th := open(t, turn, "t1", "alice")
	if th.ID != "t1" || th.ResourceID != "alice" || !th.CreatedAt.Equal(base) || string(th.Metadata) != "{}" {
		t.Fatalf("created %+v", th)
	}
	if got, err := turn.Thread(ctx); err != nil || got.ID != "t1" || got.ResourceID != "alice" || !got.CreatedAt.Equal(base) {
		t.Fatalf("the turn reads %+v, %v", got, err)
	}
	// Opening again, even for another owner, returns the thread as it is.
	again, err := turn.Open(ctx, memory.Thread{ID: "t1", ResourceID: "mallory", CreatedAt: base.Add(time.Hour), UpdatedAt: base.Add(time.Hour)})
	if err != nil || again.ResourceID != "alice" || !again.CreatedAt.Equal(base) {
		t.Fatalf("second open: %+v, %v", again, err)
	}
	got, err := s.Thread(ctx, "t1")
	if err != nil || got.ResourceID != "alice" {
		t.Fatalf("Thread: %+v, %v", got, err)
	}
	turn.Unlock()
	// Unowned threads keep an empty owner.
	anon := open(t, lock(t, s, "t2"), "t2", "")
	if anon.ResourceID != "" {
		t.Fatalf("anonymous thread owned by %q", anon.ResourceID)
	}
}

func testMessages(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "r")
	// Text the stores must keep byte for byte.
	texts := []string{"Hello", "naïve café ☕ 🌍 — ok", "line one\nline two\ttab", `quotes " and \ backslash`, "مرحبا", strings.Repeat("long ", 5000)}
	var in []memory.Message
	for i, text := range texts {
		in = append(in, msg(fmt.Sprintf("m%d", i), "user", text, i))
	}
	out := appendMsgs(t, turn, in[:2]...)
	out = append(out, appendMsgs(t, turn, in[2:]...)...)
	for i, m := range out {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d, want %d", i, m.Seq, i+1)
		}
	}
	reply := memory.Message{ID: "r1", Role: "assistant", Text: "Hi",
		Model: json.RawMessage(`[{"role":"assistant","content":"","toolCalls":[{"id":"c1","name":"weatherTool","args":{"location":"Berlin"}}]},{"role":"tool","content":"{\"temperature\":3}","toolCallId":"c1"},{"role":"assistant","content":"Hi"}]`),
		RunID: "run-1", CreatedAt: base.Add(time.Minute)}
	if _, _, err := turn.Answer(ctx, reply, memory.Usage{}); err != nil {
		t.Fatal(err)
	}
	got, total, err := s.Messages(ctx, "t", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(texts)+1 || len(got) != total {
		t.Fatalf("got %d messages (total %d), want %d", len(got), total, len(texts)+1)
	}
	for i, text := range texts {
		g := got[i]
		if g.Text != text || g.ID != in[i].ID || g.Role != "user" || !g.CreatedAt.Equal(in[i].CreatedAt) || g.Pending {
			t.Fatalf("message %d: got %+v\nwant text %q", i, g, text)
		}
		ms, err := g.ModelMessages()
		if err != nil || len(ms) != 1 || ms[0].Role != "user" || ms[0].Content != text {
			t.Fatalf("message %d model %s: %v", i, g.Model, err)
		}
	}
	r := got[len(got)-1]
	if r.ID != "r1" || r.RunID != "run-1" || r.Role != "assistant" || r.Seq != int64(len(texts)+1) || !jsonEqual(r.Model, reply.Model) {
		t.Fatalf("reply stored as %+v", r)
	}
	// Pages are ranges of positions.
	page, total, err := s.Messages(ctx, "t", 2, 3)
	if err != nil || total != len(texts)+1 || len(page) != 3 || page[0].ID != "m2" || page[2].ID != "m4" {
		t.Fatalf("page: %v %d %v", ids(page), total, err)
	}
	if _, _, err := s.Messages(ctx, "nope", 0, 10); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("messages of a missing thread: %v", err)
	}
	th, _ := s.Thread(ctx, "t")
	if !th.UpdatedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("updatedAt %v after the reply, want %v", th.UpdatedAt, base.Add(time.Minute))
	}
}

func testTail(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "r")
	if tail, err := turn.Tail(ctx, 5); err != nil || len(tail) != 0 {
		t.Fatalf("tail of an empty thread: %v %v", ids(tail), err)
	}
	var in []memory.Message
	for i := range 12 {
		in = append(in, msg(fmt.Sprint(i), "user", fmt.Sprint("text ", i), i))
	}
	appendMsgs(t, turn, in...)
	// Another thread's messages never show.
	other := lock(t, s, "u")
	open(t, other, "u", "r")
	appendMsgs(t, other, msg("x", "user", "other", 0))
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "11"}, {3, "9 10 11"}, {12, "0 1 2 3 4 5 6 7 8 9 10 11"}, {50, "0 1 2 3 4 5 6 7 8 9 10 11"}, {0, ""}} {
		tail, err := turn.Tail(ctx, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(tail), " "); got != tc.want {
			t.Errorf("Tail(%d) = %s, want %s", tc.n, got, tc.want)
		}
		// The same window, as a turn reads it (Begin).
		if tail, _, err = planned(ctx, turn, "t", "r", tc.n, nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(tail), " "); got != tc.want {
			t.Errorf("Begin's tail of %d = %s, want %s", tc.n, got, tc.want)
		}
	}
}

func testKnown(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "r")
	other := lock(t, s, "o")
	open(t, other, "o", "r")
	appendMsgs(t, turn, msg("a", "user", "1", 0), msg("b", "user", "2", 1))
	appendMsgs(t, other, msg("c", "user", "3", 0))
	var many []string
	for i := range 1200 {
		many = append(many, fmt.Sprint("id-", i))
	}
	// As a turn reads them (Begin), and as Known does.
	for name, known := range map[string]func([]string) (map[string]bool, error){
		"Begin": func(ids []string) (map[string]bool, error) {
			_, k, err := planned(ctx, turn, "t", "r", 0, ids)
			return k, err
		},
		"Known": func(ids []string) (map[string]bool, error) { return turn.Known(ctx, ids) },
	} {
		k, err := known(append(many, "a", "c", "z", "b"))
		if err != nil {
			t.Fatal(err)
		}
		if len(k) != 2 || !k["a"] || !k["b"] {
			t.Fatalf("%s: known %v, want a and b (c is another thread's)", name, k)
		}
		if k, err := known(nil); err != nil || len(k) != 0 {
			t.Fatalf("%s: no ids: %v %v", name, k, err)
		}
	}
}

// planned is what a Begin of thread id (owned by resourceID) hands its
// plan: the last n messages and which of ids the thread holds. The plan
// stores nothing.
func planned(ctx context.Context, turn memory.Turn, id, resourceID string, n int, ids []string) ([]memory.Message, map[string]bool, error) {
	var tail []memory.Message
	var known map[string]bool
	now := time.Now()
	_, _, err := turn.Begin(ctx, memory.Thread{ID: id, ResourceID: resourceID, CreatedAt: now, UpdatedAt: now}, n, ids,
		func(_ memory.Thread, t []memory.Message, k map[string]bool) ([]memory.Message, error) {
			tail, known = t, k
			return nil, nil
		})
	return tail, known, err
}

func testAnswer(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "r")
	reply := func(id string, i int) memory.Message {
		return memory.Message{ID: id, Role: "assistant", Text: id, Model: json.RawMessage(`[]`), CreatedAt: base.Add(time.Duration(i) * time.Second)}
	}
	appendMsgs(t, turn, msg("u1", "user", "first", 0))
	answered, stored, err := turn.Answer(ctx, reply("a1", 1), memory.Usage{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids(answered), " ") != "u1" || stored.Seq != 2 || stored.Pending {
		t.Fatalf("answered %v, stored %+v", ids(answered), stored)
	}
	// Answer ends what a turn writes; the next turn goes on.
	turn.Unlock()
	turn = lock(t, s, "t")
	// A failed run leaves its message pending; the next answer covers both.
	appendMsgs(t, turn, msg("u2", "user", "second", 2))
	appendMsgs(t, turn, msg("u3", "user", "third", 3), msg("u4", "assistant", "fourth", 4))
	tail, _ := turn.Tail(ctx, 10)
	var pending []string
	for _, m := range tail {
		if m.Pending {
			pending = append(pending, m.ID)
		}
	}
	if strings.Join(pending, " ") != "u2 u3 u4" {
		t.Fatalf("pending %v, want u2 u3 u4", pending)
	}
	answered, stored, err = turn.Answer(ctx, reply("a2", 5), memory.Usage{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids(answered), " ") != "u2 u3 u4" || stored.Seq != 6 {
		t.Fatalf("answered %v, stored seq %d", ids(answered), stored.Seq)
	}
	all, total, err := s.Messages(ctx, "t", 0, 10)
	if err != nil || total != 6 || len(all) != total {
		t.Fatalf("the thread holds %v (total %d): %v", ids(all), total, err)
	}
	for _, m := range all {
		if m.Pending {
			t.Fatalf("message %s still pending", m.ID)
		}
	}
}

func testUniqueIDs(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "r")
	appendMsgs(t, turn, msg("same", "user", "1", 0))
	if _, err := turn.Append(ctx, []memory.Message{msg("new", "user", "2", 1), msg("same", "user", "3", 2)}); err == nil {
		t.Fatal("a repeated id was stored")
	}
	// The failed append stored nothing, and numbering goes on without a gap.
	out := appendMsgs(t, turn, msg("next", "user", "4", 3))
	if out[0].Seq != 2 {
		t.Fatalf("seq %d after a failed append, want 2", out[0].Seq)
	}
	// Another thread may use the same id.
	other := lock(t, s, "o")
	open(t, other, "o", "r")
	appendMsgs(t, other, msg("same", "user", "x", 0))
	all, total, _ := s.Messages(ctx, "t", 0, 10)
	if total != 2 || strings.Join(ids(all), " ") != "same next" {
		t.Fatalf("thread holds %v (total %d)", ids(all), total)
	}
}

func testThreads(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	// alice's threads t0..t4 are created a minute apart; t1 is the most
	// recently active.
	for i := range 5 {
		id := fmt.Sprint("t", i)
		turn := lock(t, s, id)
		if _, err := turn.Open(ctx, memory.Thread{ID: id, ResourceID: "alice", Metadata: json.RawMessage(`{}`),
			CreatedAt: base.Add(time.Duration(i) * time.Minute), UpdatedAt: base.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		turn.Unlock()
	}
	turn := lock(t, s, "t1")
	appendMsgs(t, turn, msg("m", "user", "late", 3600))
	turn.Unlock()
	bob := lock(t, s, "b0")
	open(t, bob, "b0", "bob")
	bob.Unlock()

	for _, tc := range []struct {
		name          string
		order         memory.ThreadOrder
		offset, limit int
		want          string
	}{
		{"newest first", memory.ThreadOrder{}, 0, 10, "t4 t3 t2 t1 t0"},
		{"page", memory.ThreadOrder{}, 2, 2, "t2 t1"},
		{"last page", memory.ThreadOrder{}, 4, 2, "t0"},
		{"past the end", memory.ThreadOrder{}, 10, 2, ""},
		{"oldest first", memory.ThreadOrder{Ascending: true}, 0, 10, "t0 t1 t2 t3 t4"},
		{"most recently active first", memory.ThreadOrder{ByUpdated: true}, 0, 10, "t1 t4 t3 t2 t0"},
	} {
		ths, total, err := s.Threads(ctx, "alice", tc.order, tc.offset, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, th := range ths {
			if th.ResourceID != "alice" {
				t.Fatalf("%s: listed %s of %s", tc.name, th.ID, th.ResourceID)
			}
			got = append(got, th.ID)
		}
		if strings.Join(got, " ") != tc.want || total != 5 {
			t.Errorf("%s: got %v (total %d), want %s (total 5)", tc.name, got, total, tc.want)
		}
	}
	ths, total, err := s.Threads(ctx, "carol", memory.ThreadOrder{}, 0, 10)
	if err != nil || len(ths) != 0 || total != 0 {
		t.Fatalf("carol has %d threads (total %d): %v", len(ths), total, err)
	}
}

func testUpdate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	open(t, lock(t, s, "t"), "t", "alice")
	title := "Trip to Berlin"
	later := base.Add(time.Hour)
	th, err := s.UpdateThread(ctx, "t", "alice", &title, json.RawMessage(`{"topic":"travel","n":12345678901234567890,"nested":{"b":1,"a":[true,null]}}`), later)
	if err != nil {
		t.Fatal(err)
	}
	if th.Title != title || !th.UpdatedAt.Equal(later) || !th.CreatedAt.Equal(base) ||
		!jsonEqual(th.Metadata, json.RawMessage(`{"nested":{"a":[true,null],"b":1},"n":12345678901234567890,"topic":"travel"}`)) {
		t.Fatalf("updated %+v (metadata %s)", th, th.Metadata)
	}
	// Only the title: the metadata stays.
	other := "Berlin"
	th, err = s.UpdateThread(ctx, "t", "alice", &other, nil, later)
	if err != nil || th.Title != "Berlin" || !strings.Contains(string(th.Metadata), "travel") {
		t.Fatalf("title only: %+v %v", th, err)
	}
	// Another resource changes nothing.
	bad := "pwned"
	if _, err := s.UpdateThread(ctx, "t", "mallory", &bad, json.RawMessage(`{}`), later); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("foreign update: %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateThread(ctx, "missing", "alice", &bad, nil, later); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("missing thread: %v", err)
	}
	th, _ = s.Thread(ctx, "t")
	if th.Title != "Berlin" {
		t.Fatalf("title %q after a foreign update", th.Title)
	}
}

func testDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "alice")
	appendMsgs(t, turn, msg("a", "user", "1", 0), msg("b", "user", "2", 1))
	keep := lock(t, s, "k")
	open(t, keep, "k", "alice")
	appendMsgs(t, keep, msg("a", "user", "kept", 0))
	keep.Unlock()
	if err := turn.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Thread(ctx, "t"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("deleted thread: %v", err)
	}
	if _, err := turn.Thread(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("deleted thread through the turn: %v", err)
	}
	if _, _, err := s.Messages(ctx, "t", 0, 10); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("messages of a deleted thread: %v", err)
	}
	// Appending to a deleted thread fails; it is not re-created by accident.
	if _, err := turn.Append(ctx, []memory.Message{msg("c", "user", "3", 2)}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("append after delete: %v", err)
	}
	turn.Unlock()
	// A thread of the same id starts empty.
	turn = lock(t, s, "t")
	open(t, turn, "t", "bob")
	if tail, err := turn.Tail(ctx, 10); err != nil || len(tail) != 0 {
		t.Fatalf("re-created thread holds %v (%v)", ids(tail), err)
	}
	if msgs, total, _ := s.Messages(ctx, "k", 0, 10); total != 1 || msgs[0].Text != "kept" {
		t.Fatal("deleting one thread touched another")
	}
}

// testLockSerializes runs turns of one thread from several goroutines (on
// two instances when across is set): each turn reads the tail and appends
// the next number; interleaved turns would repeat or skip numbers.
func testLockSerializes(t *testing.T, h Harness, across bool) {
	ctx := context.Background()
	open0 := h.Fresh(t)
	stores := []memory.Store{mustOpen(t, open0)}
	if across {
		stores = append(stores, mustOpen(t, open0))
	}
	const workers, turns = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*turns)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for range turns {
				errs <- func() error {
					turn, err := s.Lock(ctx, "shared", 30*time.Second)
					if err != nil {
						return err
					}
					defer turn.Unlock()
					if _, err := turn.Open(ctx, memory.Thread{ID: "shared", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}); err != nil {
						return err
					}
					tail, err := turn.Tail(ctx, 1)
					if err != nil {
						return err
					}
					next := 1
					if len(tail) == 1 {
						fmt.Sscan(tail[0].Text, &next)
						next++
					}
					// Give another turn the chance to interleave, were the lock broken.
					time.Sleep(time.Millisecond)
					_, err = turn.Append(ctx, []memory.Message{msg(fmt.Sprint("m", next), "user", fmt.Sprint(next), next)})
					return err
				}()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	msgs, total, err := stores[0].Messages(ctx, "shared", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if total != workers*turns {
		t.Fatalf("%d messages, want %d", total, workers*turns)
	}
	for i, m := range msgs {
		if m.Text != fmt.Sprint(i+1) {
			t.Fatalf("message %d is %q: turns interleaved", i+1, m.Text)
		}
	}
}

// testAnswerEndsTurn: after Answer, Unlock frees the thread for the next
// turn (on any instance, for shared locks), even where Answer already let
// the thread go, and a second Unlock does no harm.
func testAnswerEndsTurn(t *testing.T, h Harness) {
	ctx := context.Background()
	open0 := h.Fresh(t)
	a := mustOpen(t, open0)
	b := a
	if h.SharedLocks {
		b = mustOpen(t, open0)
	}
	for i := range 3 {
		s := []memory.Store{a, b}[i%2]
		turn, err := s.Lock(ctx, "t", time.Second)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if _, _, err := turn.Begin(ctx, memory.Thread{ID: "t", ResourceID: "r", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base},
			window, []string{fmt.Sprint("u", i)}, func(_ memory.Thread, _ []memory.Message, _ map[string]bool) ([]memory.Message, error) {
				return []memory.Message{msg(fmt.Sprint("u", i), "user", "hi", 2*i)}, nil
			}); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		reply := memory.Message{ID: fmt.Sprint("a", i), Role: "assistant", Text: "hello", Model: json.RawMessage(`[]`), CreatedAt: base.Add(time.Duration(2*i+1) * time.Second)}
		if _, _, err := turn.Answer(ctx, reply, memory.Usage{}); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		turn.Unlock()
		turn.Unlock()
	}
	all, total, err := a.Messages(ctx, "t", 0, 10)
	if err != nil || total != 6 || strings.Join(ids(all), " ") != "u0 a0 u1 a1 u2 a2" {
		t.Fatalf("the thread holds %v (%d): %v", ids(all), total, err)
	}
	// The thread is free at once.
	if turn, err := b.Lock(ctx, "t", 0); err != nil {
		t.Fatalf("the thread is not free after the last turn: %v", err)
	} else {
		turn.Unlock()
	}
}

func testLockTimeout(t *testing.T, h Harness) {
	ctx := context.Background()
	open0 := h.Fresh(t)
	a := mustOpen(t, open0)
	b := a
	if h.SharedLocks {
		b = mustOpen(t, open0)
	}
	held := lock(t, a, "t")
	start := time.Now()
	_, err := b.Lock(ctx, "t", 300*time.Millisecond)
	if !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("waiting for a held thread: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about 300ms", d)
	}
	// No wait at all.
	if _, err := b.Lock(ctx, "t", 0); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("no wait: %v, want ErrBusy", err)
	}
	held.Unlock()
	held.Unlock() // a second Unlock does nothing
	turn, err := b.Lock(ctx, "t", 0)
	if err != nil {
		t.Fatalf("the thread is free again: %v", err)
	}
	turn.Unlock()
	// A waiter is served once the holder lets go within its wait.
	held = lock(t, a, "t")
	go func() { time.Sleep(100 * time.Millisecond); held.Unlock() }()
	turn, err = b.Lock(ctx, "t", 10*time.Second)
	if err != nil {
		t.Fatalf("waiting for a release: %v", err)
	}
	turn.Unlock()
}

func testLockCancel(t *testing.T, h Harness) {
	s := h.open(t)
	held := lock(t, s, "t")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, err := s.Lock(ctx, "t", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	held.Unlock()
	turn, err := s.Lock(context.Background(), "t", time.Second)
	if err != nil {
		t.Fatalf("after a cancelled waiter: %v", err)
	}
	turn.Unlock()
}

func testLockOthers(t *testing.T, h Harness) {
	s := h.open(t)
	lock(t, s, "t1")
	turn, err := s.Lock(context.Background(), "t2", 0)
	if err != nil {
		t.Fatalf("another thread is blocked: %v", err)
	}
	turn.Unlock()
}

func testConcurrentStarts(t *testing.T, h Harness) {
	open0 := h.Fresh(t)
	const n = 4
	var wg sync.WaitGroup
	stores := make([]memory.Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = open0(context.Background())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d failed to start: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	turn := lock(t, stores[0], "t")
	open(t, turn, "t", "r")
	appendMsgs(t, turn, msg("a", "user", "works", 0))
	turn.Unlock()
	if _, total, err := stores[n-1].Messages(context.Background(), "t", 0, 10); err != nil || total != 1 {
		t.Fatalf("another instance sees %d messages: %v", total, err)
	}
}

func testThreadBytes(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	if th := open(t, turn, "t", "r"); th.Bytes != 0 {
		t.Fatalf("a new thread stores %d bytes, want 0", th.Bytes)
	}
	msgs := []memory.Message{msg("u1", "user", "first", 0), msg("u2", "user", "héllo wörld", 1)}
	appendMsgs(t, turn, msgs...)
	reply := memory.Message{ID: "a1", Role: "assistant", Text: "Hi",
		Model: json.RawMessage(`[{"role":"assistant","content":"Hi"}]`), CreatedAt: base.Add(2 * time.Second)}
	if _, _, err := turn.Answer(ctx, reply, memory.Usage{}); err != nil {
		t.Fatal(err)
	}
	want := msgs[0].Size() + msgs[1].Size() + reply.Size()
	th, err := turn.Thread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if th.Bytes != want {
		t.Fatalf("the thread stores %d bytes, want %d", th.Bytes, want)
	}
	if th, err := s.Thread(ctx, "t"); err != nil || th.Bytes != want {
		t.Fatalf("read again: %d bytes, %v; want %d", th.Bytes, err, want)
	}
	ths, _, err := s.Threads(ctx, "r", memory.ThreadOrder{}, 0, 10)
	if err != nil || len(ths) != 1 || ths[0].Bytes != want {
		t.Fatalf("listed: %+v, %v; want %d bytes", ths, err, want)
	}
}

func testUsage(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	day, next := memory.Day(base), memory.Day(base.Add(24*time.Hour))
	if n, c, err := s.Used(ctx, "r", day); err != nil || n != 0 || c != 0 {
		t.Fatalf("a resource with no runs used %d tokens, $%f (%v), want 0", n, c, err)
	}
	turn := lock(t, s, "t")
	open(t, turn, "t", "r")
	appendMsgs(t, turn, msg("u1", "user", "first", 0))
	reply := memory.Message{ID: "a1", Role: "assistant", Text: "Hi", Model: json.RawMessage(`[]`), CreatedAt: base}
	if _, _, err := turn.Answer(ctx, reply, memory.Usage{ResourceID: "r", ThreadID: "t", Day: day, Tokens: 120, Cost: 0.25}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []memory.Usage{{ResourceID: "r", ThreadID: "t2", Day: day, Tokens: 30, Cost: 0.5}, {ResourceID: "r", ThreadID: "t", Day: next, Tokens: 7}, {ResourceID: "other", ThreadID: "o", Day: day, Tokens: 5}, {ResourceID: "r", ThreadID: "t", Day: day, Tokens: 0}} {
		if err := s.AddUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		resource, day string
		want          int64
	}{{"r", day, 150}, {"r", next, 7}, {"other", day, 5}, {"nobody", day, 0}} {
		if n, _, err := s.Used(ctx, c.resource, c.day); err != nil || n != c.want {
			t.Errorf("%s on %s used %d tokens (%v), want %d", c.resource, c.day, n, err, c.want)
		}
	}
	if _, cost, _ := s.Used(ctx, "r", day); cost != 0.75 {
		t.Errorf("r on %s cost $%v, want $0.75", day, cost)
	}
	report, err := s.UsageBetween(ctx, "r", day, next)
	if err != nil || len(report) != 2 {
		t.Fatalf("the report: %+v, %v", report, err)
	}
	d := report[0]
	if d.Day != day || d.Tokens != 150 || d.Cost != 0.75 || len(d.Threads) != 2 ||
		d.Threads[0] != (memory.ThreadUsage{ThreadID: "t", Tokens: 120, Cost: 0.25}) || d.Threads[1] != (memory.ThreadUsage{ThreadID: "t2", Tokens: 30, Cost: 0.5}) {
		t.Fatalf("the first day: %+v", d)
	}
	if report[1].Day != next || report[1].Tokens != 7 || len(report[1].Threads) != 1 {
		t.Fatalf("the second day: %+v", report[1])
	}
	if none, err := s.UsageBetween(ctx, "nobody", day, next); err != nil || len(none) != 0 {
		t.Fatalf("a resource without usage: %+v, %v", none, err)
	}
}

func testPing(t *testing.T, h Harness) {
	s := h.open(t)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("a freshly migrated store fails its check: %v", err)
	}
}

func testBegin(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	th := memory.Thread{ID: "t", ResourceID: "r", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}
	// A refused plan stores nothing, not even the new thread.
	refused := errors.New("refused")
	if _, _, err := turn.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return nil, refused
	}); !errors.Is(err, refused) {
		t.Fatalf("a refused plan: %v", err)
	}
	if _, err := s.Thread(ctx, "t"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a refused plan left the thread: %v", err)
	}
	// A plan sees the thread, its tail and the known ids, and stores what it returns.
	got, stored, err := turn.Begin(ctx, th, 10, []string{"u1"}, func(cur memory.Thread, tail []memory.Message, known map[string]bool) ([]memory.Message, error) {
		if cur.ResourceID != "r" || len(tail) != 0 || len(known) != 0 {
			t.Errorf("first plan saw %+v, tail %v, known %v", cur, tail, known)
		}
		return []memory.Message{msg("u1", "user", "first", 1), msg("a1", "assistant", "second", 2)}, nil
	})
	if err != nil || got.ID != "t" || len(stored) != 2 || stored[0].Seq != 1 || stored[1].Seq != 2 {
		t.Fatalf("Begin: %+v %+v %v", got, stored, err)
	}
	_, stored, err = turn.Begin(ctx, th, 1, []string{"u1", "nope"}, func(cur memory.Thread, tail []memory.Message, known map[string]bool) ([]memory.Message, error) {
		if len(tail) != 1 || tail[0].ID != "a1" || !known["u1"] || known["nope"] || cur.Bytes == 0 {
			t.Errorf("second plan saw tail %v, known %v, bytes %d", ids(tail), known, cur.Bytes)
		}
		return []memory.Message{msg("u2", "user", "third", 3)}, nil
	})
	if err != nil || len(stored) != 1 || stored[0].Seq != 3 {
		t.Fatalf("second Begin: %+v %v", stored, err)
	}
	if all, total, err := s.Messages(ctx, "t", 0, 10); err != nil || total != 3 || strings.Join(ids(all), " ") != "u1 a1 u2" {
		t.Fatalf("the thread holds %v (%d): %v", ids(all), total, err)
	}
}

// testLockBegin: a store that takes and begins a turn in one exchange
// (memory.LockBeginner) holds the thread after it as after Lock and Begin
// (on every instance, for shared locks), and holds and stores nothing when
// the thread is busy or the plan refuses.
func testLockBegin(t *testing.T, h Harness) {
	ctx := context.Background()
	open0 := h.Fresh(t)
	a := mustOpen(t, open0)
	lb, ok := a.(memory.LockBeginner)
	if !ok {
		t.Skip("this store takes a turn and begins it in two calls")
	}
	b := a
	if h.SharedLocks {
		b = mustOpen(t, open0)
	}
	th := memory.Thread{ID: "t", ResourceID: "r", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}
	store := func(id string, i int) memory.Plan {
		return func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
			return []memory.Message{msg(id, "user", "hi", i)}, nil
		}
	}
	free := func(s memory.Store) {
		t.Helper()
		turn, err := s.Lock(ctx, "t", 0)
		if err != nil {
			t.Fatalf("the thread is not free: %v", err)
		}
		turn.Unlock()
	}

	// A refused plan stores nothing and holds nothing.
	refused := errors.New("refused")
	if _, _, _, err := lb.LockBegin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return nil, refused
	}); !errors.Is(err, refused) {
		t.Fatalf("a refused plan: %v", err)
	}
	if _, err := a.Thread(ctx, "t"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a refused plan left the thread: %v", err)
	}
	free(b)

	// A free thread is taken and begun: the turn holds it until Unlock.
	turn, got, stored, err := lb.LockBegin(ctx, th, 10, []string{"u1"}, store("u1", 1))
	if err != nil || got.ID != "t" || got.ResourceID != "r" || len(stored) != 1 || stored[0].Seq != 1 {
		t.Fatalf("LockBegin: %+v %+v %v", got, stored, err)
	}
	if _, err := b.Lock(ctx, "t", 0); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("locking the thread LockBegin holds: %v, want ErrBusy", err)
	}
	// Busy: ErrBusy, nothing stored, nothing held.
	if _, _, _, err := b.(memory.LockBeginner).LockBegin(ctx, th, 10, []string{"u2"}, store("u2", 2)); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("LockBegin on a busy thread: %v, want ErrBusy", err)
	}
	reply := memory.Message{ID: "a1", Role: "assistant", Text: "hello", Model: json.RawMessage(`[]`), CreatedAt: base.Add(2 * time.Second)}
	if _, _, err := turn.Answer(ctx, reply, memory.Usage{}); err != nil {
		t.Fatalf("answering: %v", err)
	}
	turn.Unlock()
	free(b)
	all, total, err := a.Messages(ctx, "t", 0, 10)
	if err != nil || total != 2 || strings.Join(ids(all), " ") != "u1 a1" {
		t.Fatalf("the thread holds %v (%d): %v", ids(all), total, err)
	}
	// The next turn, on the other instance, sees the first.
	turn, _, stored, err = b.(memory.LockBeginner).LockBegin(ctx, th, 10, []string{"u1", "u2"}, func(cur memory.Thread, tail []memory.Message, known map[string]bool) ([]memory.Message, error) {
		if len(tail) != 2 || !known["u1"] || known["u2"] {
			t.Errorf("the second turn saw tail %v, known %v", ids(tail), known)
		}
		return []memory.Message{msg("u2", "user", "again", 3)}, nil
	})
	if err != nil || len(stored) != 1 || stored[0].Seq != 3 {
		t.Fatalf("second LockBegin: %+v %v", stored, err)
	}
	turn.Unlock()
	free(a)
}

// Seed fills thread id (owned by "bench") with n messages: turns of a user
// message and a reply, in batches of one transaction each.
func Seed(tb testing.TB, s memory.Store, id string, n int) {
	tb.Helper()
	ctx := context.Background()
	turn, err := s.Lock(ctx, id, time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	defer turn.Unlock()
	if _, err := turn.Open(ctx, memory.Thread{ID: id, ResourceID: "bench", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}); err != nil {
		tb.Fatal(err)
	}
	const batch = 5000
	for done := 0; done < n; {
		k := min(batch, n-done)
		msgs := make([]memory.Message, k)
		for i := range msgs {
			j := done + i
			if j%2 == 0 {
				msgs[i] = msg(fmt.Sprint("u", j), "user", fmt.Sprintf("Message number %d: how was your day?", j), j)
				msgs[i].Pending = false
			} else {
				text := fmt.Sprintf("Reply number %d: it was a good day, thank you for asking.", j)
				msgs[i] = memory.Message{ID: fmt.Sprint("a", j), Role: "assistant", Text: text,
					Model: json.RawMessage(`[{"role":"assistant","content":"` + text + `"}]`),
					RunID: fmt.Sprint("run-", j), CreatedAt: base.Add(time.Duration(j) * time.Second)}
			}
		}
		if _, err := turn.Append(ctx, msgs); err != nil {
			tb.Fatal(err)
		}
		done += k
	}
}

// BenchHistory measures what a turn reads of its thread before the run:
// taking its turn and Begin reading the thread and the tail of window
// messages, as a turn does it (memory.LockAndBegin), with nothing new to
// store; for threads of 10, 20 (a full window) and 100,000 messages. The
// last two read the same rows and should cost about the same.
func BenchHistory(b *testing.B, h Harness) {
	for _, n := range []int{10, 20, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s := h.open(b)
			Seed(b, s, "bench", n)
			if h.Settle != nil {
				h.Settle(b, s)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			th := memory.Thread{ID: "bench", ResourceID: "bench", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}
			for b.Loop() {
				var tail []memory.Message
				turn, _, _, err := memory.LockAndBegin(ctx, s, th, window, nil, func(_ memory.Thread, t []memory.Message, _ map[string]bool) ([]memory.Message, error) {
					tail = t
					return nil, nil
				})
				if err != nil || len(tail) != min(n, window) {
					b.Fatalf("tail of %d: %v", len(tail), err)
				}
				turn.Unlock()
			}
		})
	}
}

// BenchTurn is one turn's persistence on a thread of n messages, as
// memory runs it: taking the turn and Begin (the thread, its tail, the new
// message, one commit; memory.LockAndBegin) and Answer (the reply, one commit).
func BenchTurn(b *testing.B, h Harness) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s := h.open(b)
			Seed(b, s, "bench", n)
			if h.Settle != nil {
				h.Settle(b, s)
			}
			ctx := context.Background()
			th := memory.Thread{ID: "bench", ResourceID: "bench", Metadata: json.RawMessage(`{}`), CreatedAt: base, UpdatedAt: base}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				turn, _, stored, err := memory.LockAndBegin(ctx, s, th, window, []string{fmt.Sprint("bu", i)},
					func(_ memory.Thread, tail []memory.Message, _ map[string]bool) ([]memory.Message, error) {
						// Each turn adds two messages to the n seeded.
						if want := min(window, n+2*(i-1)); len(tail) != want {
							return nil, fmt.Errorf("a tail of %d, want %d", len(tail), want)
						}
						return []memory.Message{msg(fmt.Sprint("bu", i), "user", "How was your day?", n+i)}, nil
					})
				if err != nil || len(stored) != 1 {
					b.Fatalf("Begin: %v (stored %d)", err, len(stored))
				}
				reply := memory.Message{ID: fmt.Sprint("ba", i), Role: "assistant", Text: "Good, thank you.",
					Model: json.RawMessage(`[{"role":"assistant","content":"Good, thank you."}]`), CreatedAt: base}
				if _, _, err := turn.Answer(ctx, reply, memory.Usage{ResourceID: "bench", Day: "2030-01-02", Tokens: 10}); err != nil {
					b.Fatal(err)
				}
				turn.Unlock()
			}
		})
	}
}

func ids(msgs []memory.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// CheckUpgradedFromVersion1 checks a store opened on a database written by
// schema version 1 with the same rows in each store's test: thread "t"
// with a user message "héllo" and a reply "Hi", and thread "empty". After
// the upgrade a message counts its text and model messages, the user's
// became one model message of its role and text, and both are in the
// recall index.
func CheckUpgradedFromVersion1(t testing.TB, s memory.Store) {
	t.Helper()
	ctx := context.Background()
	msgs, _, err := s.Messages(ctx, "t", 0, 10)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages after the upgrade: %+v, %v", msgs, err)
	}
	if ms, err := msgs[0].ModelMessages(); err != nil || len(ms) != 1 || ms[0].Role != "user" || ms[0].Content != "héllo" {
		t.Fatalf("the user's message reads as %+v, %v", ms, err)
	}
	if ms, err := msgs[1].ModelMessages(); err != nil || len(ms) != 1 || ms[0].Content != "Hi" {
		t.Fatalf("the reply reads as %+v, %v", ms, err)
	}
	want := msgs[0].Size() + msgs[1].Size()
	for id, w := range map[string]int64{"t": want, "empty": 0} {
		th, err := s.Thread(ctx, id)
		if err != nil || th.Bytes != w {
			t.Errorf("thread %s stores %d bytes (%v), want %d", id, th.Bytes, err, w)
		}
	}
	// The messages stored before the recall index are in it: the user's,
	// and the reply through it.
	rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "r", Text: "héllo", Limit: 10})
	if err != nil || found(rs) != "u1 a1" {
		t.Errorf("searching the messages stored before the upgrade found %q (%v), want u1 a1", found(rs), err)
	}
}
