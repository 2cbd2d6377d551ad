package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/memorytest"
	"github.com/companionhq/companion/internal/memory/postgres"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	_ "github.com/companionhq/companion/internal/testkit"
)

// harness's Settle vacuums and analyses the seeded tables, as autovacuum
// does after a bulk load, so that the benchmarks measure the plans of a
// deployment's analysed tables (and a recall index whose GIN pending list
// was merged). The plans each connection then caches are made for a
// messages table of one page (a seeded 10-message thread), and stay while
// BenchmarkTurn grows it by thousands of rows; the store's connections
// plan without sequential scans, so they stay index lookups
// (TestPlansOutlastTinyTables). With sequential scans allowed, a turn took
// 1.4 ms instead of 0.65 here.
func harness() memorytest.Harness {
	return memorytest.Harness{
		SharedLocks: true,
		Fresh: func(t testing.TB) func(ctx context.Context) (memory.Store, error) {
			url := pgtest.URL(t)
			return func(ctx context.Context) (memory.Store, error) { return postgres.Open(ctx, url) }
		},
		Settle: func(tb testing.TB, s memory.Store) {
			if _, err := s.(*postgres.Store).Pool().Exec(context.Background(), `VACUUM ANALYZE threads, messages, message_search`); err != nil {
				tb.Fatal(err)
			}
		},
	}
}

func TestStore(t *testing.T) { memorytest.Run(t, harness()) }

func BenchmarkHistory(b *testing.B) { memorytest.BenchHistory(b, harness()) }

func BenchmarkTurn(b *testing.B) { memorytest.BenchTurn(b, harness()) }

func BenchmarkSearch(b *testing.B) { memorytest.BenchSearch(b, harness()) }

func BenchmarkRecall(b *testing.B) { memorytest.BenchRecall(b, harness()) }

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 12 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, url); err == nil || !strings.Contains(err.Error(), "schema is at version 99, newer than this build knows (12)") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

// TestTurnsHoldNoConnection: turns hold their threads with leases, not
// connections: with a pool of one connection, many turns on many threads
// are held at once and each still reads and writes; a lease left by an
// instance that stopped (it was not renewed) is taken once it expires.
func TestTurnsHoldNoConnection(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var turns []memory.Turn
	for i := range 20 {
		turn, err := s.Lock(ctx, fmt.Sprint("t", i), time.Second)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		turns = append(turns, turn)
	}
	for i, turn := range turns {
		th := memory.Thread{ID: fmt.Sprint("t", i), ResourceID: "r", CreatedAt: time.Now(), UpdatedAt: time.Now()}
		if _, _, err := turn.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return nil, nil }); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		turn.Unlock()
	}
	var held int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM thread_leases`).Scan(&held); err != nil || held != 0 {
		t.Fatalf("%d leases left after every turn ended (%v)", held, err)
	}
	// A lease nobody renews expires; a turn that lost it cannot write.
	stale, err := s.Lock(ctx, "x", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE thread_leases SET expires = now() - interval '1 second' WHERE thread_id = 'x'`); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	taken, err := other.Lock(ctx, "x", time.Second)
	if err != nil {
		t.Fatalf("an expired lease was not taken: %v", err)
	}
	defer taken.Unlock()
	th := memory.Thread{ID: "x", ResourceID: "r", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if _, _, err := stale.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return nil, nil }); err == nil || !strings.Contains(err.Error(), "hold on its thread was lost") {
		t.Fatalf("a turn that lost its lease wrote: %v", err)
	}
	stale.Unlock()
	if _, _, err := taken.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return nil, nil }); err != nil {
		t.Fatalf("the new holder cannot write: %v", err)
	}
}

func TestBadURL(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://user:secret@127.0.0.1:1/x?sslmode=disable&connect_timeout=1")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("got %v: want an error without the password", err)
	}
}

// TestUpgradeFromVersion1: a database written by the first schema, with
// threads in it, gets the byte counts of its threads on upgrade.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := os.ReadFile("migrations/0001_threads_and_messages.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version integer NOT NULL PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		string(v1),
		`INSERT INTO schema_migrations (version, name) VALUES (1, '0001_threads_and_messages')`,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) VALUES ('t', 'r', now(), now(), 2), ('empty', 'r', now(), now(), 0)`,
		`INSERT INTO messages (thread_id, seq, id, role, text, parts, model, created_at) VALUES
			('t', 1, 'u1', 'user', 'héllo', '[{"type":"text","text":"héllo"}]', NULL, now()),
			('t', 2, 'a1', 'assistant', 'Hi', '[{"type":"text","text":"Hi"}]', '[{"role":"assistant","content":"Hi"}]', now())`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("writing a version 1 database: %v", err)
		}
	}
	conn.Close(ctx)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	memorytest.CheckUpgradedFromVersion1(t, s)
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE messages DROP COLUMN run_id`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "run_id") {
		t.Fatalf("Ping of a schema without messages.run_id: %v", err)
	}
}

// TestAnswerDropsTheLease: Answer's transaction deletes the turn's lease, so
// the thread is free to other instances as soon as the reply is stored,
// without a commit of its own in Unlock; a turn whose lease was lost
// cannot answer.
func TestAnswerDropsTheLease(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	leases := func() int {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM thread_leases WHERE thread_id = 't'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	th := memory.Thread{ID: "t", ResourceID: "r", Metadata: []byte(`{}`), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	reply := memory.Message{ID: "a1", Role: "assistant", Text: "hi", Model: []byte(`[]`), CreatedAt: time.Now()}
	turn, err := s.Lock(ctx, "t", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Unlock()
	if _, err := turn.Open(ctx, th); err != nil {
		t.Fatal(err)
	}
	if n := leases(); n != 1 {
		t.Fatalf("%d leases while the turn runs, want 1", n)
	}
	if _, _, err := turn.Answer(ctx, reply, memory.Usage{}); err != nil {
		t.Fatal(err)
	}
	if n := leases(); n != 0 {
		t.Fatalf("%d leases after Answer, want 0", n)
	}

	// A turn whose lease another instance took stores nothing.
	lost, err := s.Lock(ctx, "t2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Unlock()
	if _, err := s.Pool().Exec(ctx, `UPDATE thread_leases SET owner = 'someone-else' WHERE thread_id = 't2'`); err != nil {
		t.Fatal(err)
	}
	th.ID = "t2"
	if _, err := lost.Open(ctx, th); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lost.Answer(ctx, memory.Message{ID: "a2", Role: "assistant", Text: "hi", Model: []byte(`[]`), CreatedAt: time.Now()}, memory.Usage{}); err == nil {
		t.Fatal("a turn that lost its lease answered")
	}
	if _, total, err := s.Messages(ctx, "t2", 0, 10); err != nil || total != 0 {
		t.Fatalf("the lost turn stored %d messages: %v", total, err)
	}
	if err := lost.Delete(ctx); err == nil || !strings.Contains(err.Error(), "hold on its thread was lost") {
		t.Fatalf("a turn that lost its lease deleted its thread: %v", err)
	}
	if _, err := s.Thread(ctx, "t2"); err != nil {
		t.Fatalf("the thread of a lost turn: %v", err)
	}
}

// TestFailedWritesRollBack: a turn's writes are pipelined behind the
// lease's check, in one transaction whose BEGIN and COMMIT cost no round
// trip of their own. When the check fails, or the plan does, nothing of
// the transaction is stored (not even the thread Begin would have
// created), and the connection goes back to the pool clean: a pool of one
// connection goes on serving turns without opening another.
func TestFailedWritesRollBack(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "&pool_max_conns=1")
	now := time.Now()
	msg := memory.Message{ID: "u1", Role: "user", Text: "hello", Model: []byte(`[]`), Pending: true, CreatedAt: now}
	reply := memory.Message{ID: "a1", Role: "assistant", Text: "hi", Model: []byte(`[]`), CreatedAt: now}
	usage := memory.Usage{ResourceID: "r", ThreadID: "t", Day: memory.Day(now), Tokens: 10, Cost: 0.5}
	storeMsg := func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return []memory.Message{msg}, nil
	}
	thread := func(id string) memory.Thread {
		return memory.Thread{ID: id, ResourceID: "r", Metadata: []byte(`{}`), CreatedAt: now, UpdatedAt: now}
	}
	stolen := func(id string) memory.Turn {
		turn, err := s.Lock(ctx, id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE thread_leases SET owner = 'someone-else' WHERE thread_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		return turn
	}
	// free drops the lease the other instance took.
	free := func() {
		if _, err := s.Pool().Exec(ctx, `DELETE FROM thread_leases`); err != nil {
			t.Fatal(err)
		}
	}

	lost := stolen("t")
	if _, _, err := lost.Begin(ctx, thread("t"), 10, []string{"u1"}, storeMsg); err == nil || !strings.Contains(err.Error(), "hold on its thread was lost") {
		t.Fatalf("Begin of a turn that lost its lease: %v", err)
	}
	if _, err := s.Thread(ctx, "t"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the thread of a failed Begin: %v", err)
	}
	lost.Unlock()
	free()

	failing := errors.New("the plan failed")
	turn, err := s.Lock(ctx, "t", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := turn.Begin(ctx, thread("t"), 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return nil, failing
	}); !errors.Is(err, failing) {
		t.Fatalf("Begin with a failing plan: %v", err)
	}
	if _, err := s.Thread(ctx, "t"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the thread of a failed plan: %v", err)
	}
	if _, stored, err := turn.Begin(ctx, thread("t"), 10, []string{"u1"}, storeMsg); err != nil || len(stored) != 1 || stored[0].Seq != 1 {
		t.Fatalf("Begin after a failed one: %v, %v", stored, err)
	}
	turn.Unlock()

	lost = stolen("t")
	if _, _, err := lost.Answer(ctx, reply, usage); err == nil || !strings.Contains(err.Error(), "hold on its thread was lost") {
		t.Fatalf("Answer of a turn that lost its lease: %v", err)
	}
	if _, err := lost.Append(ctx, []memory.Message{reply}); err == nil || !strings.Contains(err.Error(), "hold on its thread was lost") {
		t.Fatalf("Append of a turn that lost its lease: %v", err)
	}
	lost.Unlock()
	if msgs, _, err := s.Messages(ctx, "t", 0, 10); err != nil || len(msgs) != 1 || !msgs[0].Pending {
		t.Fatalf("after a lost Answer: %+v, %v", msgs, err)
	}
	if used, cost, err := s.Used(ctx, "r", usage.Day); err != nil || used != 0 || cost != 0 {
		t.Fatalf("a lost Answer counted %d tokens, $%v: %v", used, cost, err)
	}
	free()

	// A statement after the lease's drop and the answered marks fails (the
	// reply's id is the user message's): the batch is one transaction, so
	// the lease, the pending mark and the usage stay as they were.
	turn, err = s.Lock(ctx, "t", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dup := reply
	dup.ID = msg.ID
	if _, _, err := turn.Answer(ctx, dup, usage); err == nil {
		t.Fatal("Answer with a reply id the thread holds succeeded")
	}
	if msgs, _, err := s.Messages(ctx, "t", 0, 10); err != nil || len(msgs) != 1 || !msgs[0].Pending {
		t.Fatalf("after a failed Answer: %+v, %v", msgs, err)
	}
	if used, cost, err := s.Used(ctx, "r", usage.Day); err != nil || used != 0 || cost != 0 {
		t.Fatalf("a failed Answer counted %d tokens, $%v: %v", used, cost, err)
	}
	var leases int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM thread_leases WHERE thread_id = 't'`).Scan(&leases); err != nil || leases != 1 {
		t.Fatalf("after a failed Answer, %d leases on the thread (%v), want its own still held", leases, err)
	}

	if answered, stored, err := turn.Answer(ctx, reply, usage); err != nil || len(answered) != 1 || stored.Seq != 2 {
		t.Fatalf("Answer after a lost one: %v, %+v, %v", answered, stored, err)
	}
	turn.Unlock()
	if used, _, err := s.Used(ctx, "r", usage.Day); err != nil || used != 10 {
		t.Fatalf("usage after the answer: %d, %v", used, err)
	}
	if n := s.Pool().Stat().NewConnsCount(); n != 1 {
		t.Fatalf("the pool opened %d connections: a failed transaction left one unusable", n)
	}
}

// TestLeasesRenewTogether: one statement renews the leases of all the
// store's turns (a goroutine and a timer for each would cost every open
// stream their memory), and only theirs: not another instance's, not a
// turn's that ended.
func TestLeasesRenewTogether(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	var turns []memory.Turn
	th := func(id string) memory.Thread {
		return memory.Thread{ID: id, Metadata: json.RawMessage(`{}`), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	}
	nothing := func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return nil, nil }
	for _, id := range []string{"a", "b", "c"} {
		var turn memory.Turn
		var err error
		if id == "b" {
			// A turn taken with its Begin is renewed as one taken by Lock.
			turn, _, _, err = s.LockBegin(ctx, th(id), 10, nil, nothing)
		} else {
			turn, err = s.Lock(ctx, id, time.Second)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer turn.Unlock()
		turns = append(turns, turn)
	}
	turns[2].Unlock()
	// A refused LockBegin leaves no lease.
	refused := errors.New("refused")
	if _, _, _, err := s.LockBegin(ctx, th("e"), 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return nil, refused
	}); !errors.Is(err, refused) {
		t.Fatalf("a refused LockBegin: %v", err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO thread_leases VALUES ('c', 'another-instance', now()), ('d', 'another-instance', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE thread_leases SET expires = now() + interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Pool().Query(ctx, `SELECT thread_id, expires > now() + interval '20 seconds' FROM thread_leases ORDER BY thread_id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for rows.Next() {
		var id string
		var renewed bool
		if err := rows.Scan(&id, &renewed); err != nil {
			t.Fatal(err)
		}
		got[id] = renewed
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"a": true, "b": true, "c": false, "d": false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("renewed %v, want %v", got, want)
	}
}

// TestBeginCopiesManyMessages: a request of many new messages (a client's
// whole conversation, sent to a new thread) is copied in, within the
// transaction Begin opened, and numbered from the thread's last message.
func TestBeginCopiesManyMessages(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "&pool_max_conns=1")
	now := time.Now()
	var msgs []memory.Message
	for i := range 100 {
		msgs = append(msgs, memory.Message{ID: fmt.Sprint("m", i), Role: "user", Text: fmt.Sprint("message ", i), Model: []byte(`[]`), Pending: true, CreatedAt: now})
	}
	turn, err := s.Lock(ctx, "t", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Unlock()
	th := memory.Thread{ID: "t", ResourceID: "r", Metadata: []byte(`{}`), CreatedAt: now, UpdatedAt: now}
	// A copy that fails (two messages with one id) leaves nothing, not
	// even the thread the same transaction created.
	withDup := append(slices.Clone(msgs), msgs[0])
	if _, _, err := turn.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return withDup, nil }); err == nil {
		t.Fatal("Begin copied two messages with one id")
	}
	if _, err := s.Thread(ctx, "t"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the thread of a failed copy: %v", err)
	}
	_, stored, err := turn.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return msgs, nil })
	if err != nil || len(stored) != 100 || stored[0].Seq != 1 || stored[99].Seq != 100 {
		t.Fatalf("Begin stored %d messages: %v", len(stored), err)
	}
	answered, reply, err := turn.Answer(ctx, memory.Message{ID: "a", Role: "assistant", Text: "hi", Model: []byte(`[]`), CreatedAt: now}, memory.Usage{})
	if err != nil || len(answered) != 100 || reply.Seq != 101 {
		t.Fatalf("Answer: %d answered, reply %d: %v", len(answered), reply.Seq, err)
	}
	if got, total, err := s.Messages(ctx, "t", 0, 200); err != nil || total != 101 || got[100].ID != "a" {
		t.Fatalf("the thread holds %d messages: %v", total, err)
	}
}

// openStore opens a store on a fresh schema, with params added to its URL,
// and closes it when the test ends.
func openStore(t *testing.T, params string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.URL(t)+params)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// acquire takes a connection of s's pool, released at the test's end.
func acquire(t *testing.T, s *postgres.Store) *pgxpool.Conn {
	t.Helper()
	conn, err := s.Pool().Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	return conn
}

// execAll runs each statement on conn, in order; the first that fails
// ends the test.
func execAll(t *testing.T, conn *pgxpool.Conn, statements ...string) {
	t.Helper()
	for _, q := range statements {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestKnownLooksIdsUp: finding which of a request's message ids a thread
// holds reads those ids from the (thread_id, id) index, whatever the
// thread's length, in the plans PostgreSQL makes with a deployment's
// statistics (many short threads and a long one, analysed): the custom
// plan of a statement's first executions and the generic plan its cache
// switches to after them. A plan that looks the thread up by thread_id
// alone and filters the ids reads every message of the thread (it did,
// with the statement written as "thread_id = $1 AND id = ANY($2)", in the
// generic plan).
func TestKnownLooksIdsUp(t *testing.T) {
	ctx := context.Background()
	conn := acquire(t, openStore(t, ""))
	const long = 3000
	execAll(t, conn,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) SELECT 't' || i, 'u', now(), now(), 10 FROM generate_series(1, 20000) i`,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) VALUES ('long', 'u', now(), now(), `+fmt.Sprint(long)+`)`,
		`INSERT INTO messages (thread_id, seq, id, role, text, model, created_at)
			SELECT 't' || i, s, 't' || i || '-' || s, 'user', 'hi', '[]', now() FROM generate_series(1, 20000) i, generate_series(1, 10) s`,
		`INSERT INTO messages (thread_id, seq, id, role, text, model, created_at)
			SELECT 'long', s, 'long-' || s, 'user', 'hi', '[]', now() FROM generate_series(1, `+fmt.Sprint(long)+`) s`,
		`ANALYZE threads`,
		`ANALYZE messages`,
	)
	ids := []string{"long-1", fmt.Sprint("long-", long), "new-1", "new-2", "new-3", "new-4"}
	// EXPLAIN takes no parameters: the ids go in as an array literal.
	array := "'{" + strings.Join(ids, ",") + "}'"
	// auto is the default: custom plans for the first five executions (on
	// short threads here), then the generic plan if it looks no dearer.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan", "auto"} {
		// A statement of its own for each mode: its plan cache starts empty.
		name := "known_" + mode
		execute := `EXECUTE ` + name + `('long', ` + array + `)`
		execAll(t, conn, `SET plan_cache_mode = `+mode, `PREPARE `+name+` AS `+postgres.KnownSQL)
		for i := range 6 {
			execAll(t, conn, fmt.Sprintf(`EXECUTE %s('t%d', '{t%d-1,new-1}')`, name, i+1, i+1))
		}
		var plan []struct{ Plan explainNode }
		if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+execute).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		read := plan[0].Plan.rowsRead("messages")
		if read > 2*len(ids) {
			b, _ := json.MarshalIndent(plan, "", " ")
			t.Errorf("%s: the plan reads %d rows of messages for %d ids in a thread of %d:\n%s", mode, read, len(ids), long, b)
		}
		rows, err := conn.Query(ctx, execute)
		if err != nil {
			t.Fatal(err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(found)
		if want := []string{"long-1", fmt.Sprint("long-", long)}; !slices.Equal(found, want) {
			t.Errorf("%s: found %q, want %q", mode, found, want)
		}
	}
}

// explainNode is a node of EXPLAIN (ANALYZE, FORMAT JSON)'s plan.
type explainNode struct {
	Relation  string        `json:"Relation Name"`
	Index     string        `json:"Index Name"`
	Rows      float64       `json:"Actual Rows"`
	Loops     float64       `json:"Actual Loops"`
	Filtered  float64       `json:"Rows Removed by Filter"`
	Rechecked float64       `json:"Rows Removed by Index Recheck"`
	Plans     []explainNode `json:"Plans"`
}

// rowsRead counts the rows the plan's nodes on table and its indexes
// produced or threw away.
func (n explainNode) rowsRead(table string) int {
	total := 0
	if n.Relation == table || strings.HasPrefix(n.Index, table) {
		total += int(n.Rows*n.Loops + n.Filtered + n.Rechecked)
	}
	for _, c := range n.Plans {
		total += c.rowsRead(table)
	}
	return total
}

// TestSequentialScansOff: the store's connections plan without sequential
// scans (TestPlansOutlastTinyTables says why), unless its URL says
// otherwise.
func TestSequentialScansOff(t *testing.T) {
	for params, want := range map[string]string{"": "off", "&enable_seqscan=on": "on"} {
		var got string
		if err := openStore(t, params).Pool().QueryRow(context.Background(), `SHOW enable_seqscan`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("URL parameters %q: enable_seqscan is %s, want %s", params, got, want)
		}
	}
}

// TestPlansOutlastTinyTables: the plans a connection of the store caches
// for a turn's statements while its tables are a page or two (a new
// database that autovacuum analysed early) stay index lookups as the
// tables grow. With sequential scans allowed, as PostgreSQL's default has
// them, some of those plans scan the table, and go on scanning it until it
// is analysed again: checked here too, so that the test shows the setting
// is what keeps them lookups.
func TestPlansOutlastTinyTables(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	conn := acquire(t, s)
	// Only this test's ANALYZE may make the connection plan again.
	for _, table := range []string{"threads", "messages", "usage"} {
		execAll(t, conn, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`)
	}
	// Tiny: three threads of two messages, one of them waiting for a
	// reply, and a day's usage; analysed.
	execAll(t, conn,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) SELECT 't' || i, 'u', now(), now(), 2 FROM generate_series(1, 3) i`,
		`INSERT INTO messages (thread_id, seq, id, role, text, model, pending, created_at)
			SELECT 't' || i, s, 't' || i || '-' || s, 'user', 'hi', '[]', s = 2, now() FROM generate_series(1, 3) i, generate_series(1, 2) s`,
		`INSERT INTO usage (resource_id, day, tokens) VALUES ('u', current_date, 10)`,
		`ANALYZE threads`, `ANALYZE messages`, `ANALYZE usage`,
		`SET plan_cache_mode = force_generic_plan`,
	)
	type statement struct {
		name, sql, table string
		args             func(thread string, i int) string
	}
	statements := []statement{
		{"thread", postgres.ThreadSQL, "threads", func(th string, _ int) string { return `'` + th + `'` }},
		{"tail", postgres.TailSQL, "messages", func(th string, _ int) string { return `'` + th + `', 20` }},
		{"known", postgres.KnownSQL, "messages", func(th string, _ int) string { return `'` + th + `', '{` + th + `-1,new}'` }},
		{"number", postgres.NumberSQL, "threads", func(th string, _ int) string { return `1, now(), '` + th + `', 10` }},
		{"insert", postgres.InsertMessageSQL, "threads", func(th string, i int) string {
			return fmt.Sprintf(`'%s', 'x%d', 'assistant', 'hello', '[]', false, '', now(), 0`, th, i)
		}},
		{"index", postgres.IndexSQL, "messages", func(th string, _ int) string { return `'` + th + `', 1` }},
		{"answered", postgres.AnsweredSQL, "messages", func(th string, _ int) string { return `'` + th + `'` }},
		{"used", postgres.UsedSQL, "usage", func(th string, _ int) string { return `'` + th + `', current_date` }},
	}
	// Each statement twice: planned with sequential scans allowed, and
	// with the store's own settings. A generic plan is made at its
	// statement's first execution and kept.
	modes := []string{"on", "store"}
	for m, mode := range modes {
		if mode == "on" {
			execAll(t, conn, `SET enable_seqscan = on`)
		} else {
			execAll(t, conn, `RESET enable_seqscan`) // to what the store's connections start with
		}
		for i, st := range statements {
			execAll(t, conn,
				`PREPARE `+mode+`_`+st.name+` AS `+st.sql,
				`EXECUTE `+mode+`_`+st.name+`(`+st.args("t1", 10*m+i)+`)`)
		}
	}
	// Grown, not analysed again: 20,000 threads of three messages, as many
	// days of usage. On another connection: this one's plan for the
	// messages' foreign key check, made with sequential scans allowed,
	// would scan the threads for each message inserted.
	execAll(t, acquire(t, s),
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) SELECT 'g' || i, 'u', now(), now(), 3 FROM generate_series(1, 20000) i`,
		`INSERT INTO messages (thread_id, seq, id, role, text, model, pending, created_at)
			SELECT 'g' || i, s, 'g' || i || '-' || s, 'user', 'hi', '[]', s = 3, now() FROM generate_series(1, 20000) i, generate_series(1, 3) s`,
		`INSERT INTO usage (resource_id, day, tokens) SELECT 'g' || i, current_date, 1 FROM generate_series(1, 20000) i`,
	)
	const most = 50 // a lookup reads a few rows; a scan, tens of thousands
	scanned := 0
	for m, mode := range modes {
		for i, st := range statements {
			// One grown thread a mode: the insert goes where the number made room.
			q := `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ` + mode + `_` + st.name + `(` + st.args(fmt.Sprint("g", 100+m), 100+10*m+i) + `)`
			var plan []struct{ Plan explainNode }
			if err := conn.QueryRow(ctx, q).Scan(&plan); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			read := plan[0].Plan.rowsRead(st.table)
			switch {
			case mode == "store" && read > most:
				b, _ := json.MarshalIndent(plan, "", " ")
				t.Errorf("%s: the cached plan reads %d rows of %s:\n%s", st.name, read, st.table, b)
			case mode == "on" && read > most:
				scanned++
			}
		}
	}
	if scanned == 0 {
		t.Errorf("with sequential scans allowed, no cached plan read more than %d rows: the test no longer shows what the store's setting prevents", most)
	}
	t.Logf("with sequential scans allowed, %d of %d cached plans scanned their table", scanned, len(statements))
}

// TestCrashedInstanceLetsGo: the leases of an instance whose connection to
// the database is gone (its presence, as a crash or kill -9 ends it) are
// free at once, not after Lease; the turn that held one can no longer
// write; the instance, connected again, takes leases under a new key that
// others respect again. A lease of an older version, which names no
// presence, still lasts until it expires.
func TestCrashedInstanceLetsGo(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	var a, b *postgres.Store
	for _, s := range []**postgres.Store{&a, &b} {
		var err error
		if *s, err = postgres.Open(ctx, url); err != nil {
			t.Fatal(err)
		}
		defer (*s).Close()
	}
	stale, err := a.Lock(ctx, "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Unlock()
	if _, err := b.Lock(ctx, "x", 0); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("a thread held by a live instance: %v, want ErrBusy", err)
	}
	old := a.PresenceKey()
	if old == 0 {
		t.Fatal("the instance has no presence")
	}
	// The presence's connection dies as a crashed process's would.
	var killed bool
	if err := b.Pool().QueryRow(ctx, `SELECT bool_or(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND objid = $1::bigint::oid`, old).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminating the presence: %v %v", killed, err)
	}
	start := time.Now()
	taken, err := b.Lock(ctx, "x", 5*time.Second)
	if err != nil {
		t.Fatalf("the thread of an instance that is gone was not taken: %v", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("the thread was taken after %s, want at once", waited)
	}
	th := memory.Thread{ID: "x", ResourceID: "r", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	none := func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return nil, nil }
	if _, _, err := stale.Begin(ctx, th, 10, nil, none); err == nil || !strings.Contains(err.Error(), "hold on its thread was lost") {
		t.Fatalf("the turn of the gone instance wrote: %v", err)
	}
	if _, _, err := taken.Begin(ctx, th, 10, nil, none); err != nil {
		t.Fatalf("the new holder cannot write: %v", err)
	}
	taken.Unlock()

	// Connected again, under a new key, its leases hold.
	deadline := time.Now().Add(10 * time.Second)
	for a.PresenceKey() == 0 || a.PresenceKey() == old {
		if time.Now().After(deadline) {
			t.Fatal("the instance did not take a new presence")
		}
		time.Sleep(50 * time.Millisecond)
	}
	again, err := a.Lock(ctx, "y", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Unlock()
	if _, err := b.Lock(ctx, "y", 0); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("a thread held under the new presence: %v, want ErrBusy", err)
	}

	// A lease without a presence (an older version's) lives until it expires.
	if _, err := b.Pool().Exec(ctx, `INSERT INTO thread_leases VALUES ('z', 'an-older-instance', now() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "z", 0); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("an older version's live lease: %v, want ErrBusy", err)
	}
}

// TestPingWrites: a database that refuses writes (here a full disk, as the
// server reports it, raised by a trigger) is reported by Ping as a store
// that cannot write, with the reason, though it still reads; and as ready
// once writes go through again.
func TestPingWrites(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("a fresh store: %v", err)
	}
	for _, q := range []string{
		`CREATE FUNCTION no_room() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$`,
		`CREATE TRIGGER no_room BEFORE INSERT OR UPDATE ON ready_probe FOR EACH ROW EXECUTE FUNCTION no_room()`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var we *memory.WriteError
	if err := s.Ping(ctx); !errors.As(err, &we) || we.Reason != "the database server's disk is full" {
		t.Fatalf("Ping with no room to write: %v", err)
	}
	if _, err := s.Pool().Exec(ctx, `DROP TRIGGER no_room ON ready_probe`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping once writes go through: %v", err)
	}
}

// TestAnswerRetriesALostConnection: a backend terminated in the middle of
// a turn's reply (its connection lost) does not fail the turn: the reply
// is written again on a fresh connection, once.
func TestAnswerRetriesALostConnection(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	// The first reply written waits in a trigger, long enough to be
	// terminated there; a sequence, not rolled back with it, makes it the
	// first only.
	for _, q := range []string{
		`CREATE SEQUENCE slow_once`,
		`CREATE FUNCTION slow_once() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.role = 'assistant' AND nextval('slow_once') = 1 THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER slow_once BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION slow_once()`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	turn, err := s.Lock(ctx, "t", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Unlock()
	now := time.Now()
	th := memory.Thread{ID: "t", ResourceID: "r", Metadata: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
	if _, _, err := turn.Begin(ctx, th, 10, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return []memory.Message{{ID: "u1", Role: "user", Text: "Hi", Model: json.RawMessage(`[]`), CreatedAt: now, Pending: true}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	killed := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var n int
			err := s.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE wait_event = 'PgSleep' AND query LIKE '%INSERT INTO messages%' AND pid <> pg_backend_pid()`).Scan(&n)
			if err != nil || n > 0 {
				killed <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		killed <- errors.New("no backend was found writing the reply")
	}()
	reply := memory.Message{ID: "a1", Role: "assistant", Text: "Hello", Model: json.RawMessage(`[]`), CreatedAt: now}
	answered, stored, err := turn.Answer(ctx, reply, memory.Usage{ResourceID: "r", ThreadID: "t", Day: memory.Day(now), Tokens: 5})
	if kerr := <-killed; kerr != nil {
		t.Fatal(kerr)
	}
	if err != nil {
		t.Fatalf("the reply whose connection was lost: %v", err)
	}
	if len(answered) != 1 || answered[0].ID != "u1" || stored.ID != "a1" {
		t.Fatalf("answered %+v, stored %+v", answered, stored)
	}
	msgs, total, err := s.Messages(ctx, "t", 0, 10)
	if err != nil || total != 2 || msgs[1].ID != "a1" || msgs[0].Pending {
		t.Fatalf("the thread holds %d: %+v (%v)", total, msgs, err)
	}
	if tokens, _, err := s.Used(ctx, "r", memory.Day(now)); err != nil || tokens != 5 {
		t.Fatalf("usage counted %d times 5 tokens (%v)", tokens/5, err)
	}
}

// seedSearchPlan fills the tables of the search's plan tests: thread t0,
// resource "mine", of 1,500 messages; t1 to t40, resources "other1" to
// "other40", of 100 each; message s of thread i saying text (an SQL
// expression of i and s), indexed for search; then analysed.
func seedSearchPlan(t *testing.T, conn *pgxpool.Conn, text string) {
	t.Helper()
	execAll(t, conn,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq)
			SELECT 't' || i, CASE WHEN i = 0 THEN 'mine' ELSE 'other' || i END, now(), now(), CASE WHEN i = 0 THEN 1500 ELSE 100 END FROM generate_series(0, 40) i`,
		`INSERT INTO messages (thread_id, seq, id, role, text, model, created_at)
			SELECT 't' || i, s, 'm' || s, 'user', `+text+`, '[]', now()
			FROM generate_series(0, 40) i, generate_series(1, CASE WHEN i = 0 THEN 1500 ELSE 100 END) s`,
		`INSERT INTO message_search (thread_id, seq, resource_id, doc)
			SELECT m.thread_id, m.seq, t.resource_id, search_doc(t.resource_id, m.text, '') FROM messages m JOIN threads t ON t.id = m.thread_id ORDER BY t.id, m.seq`,
		`ANALYZE`,
	)
}

// TestExactSearchReadsTheResource: a search of a short history reads
// that resource's messages through the (resource_id, id) index, each
// once, and not the other resources' that hold its words too; the
// ranking of a longer history's share is not run.
func TestExactSearchReadsTheResource(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	conn := acquire(t, s)
	// Mine: 1,500 messages, "garden" in every fifth. Forty others: 100
	// messages each, "garden" in every other.
	seedSearchPlan(t, conn, `CASE WHEN i > 0 AND s % 2 = 0 THEN 'tbilisi garden' WHEN s % 5 = 0 THEN 'the garden is dry' ELSE 'hello there' END`)
	var size int64
	if err := conn.QueryRow(ctx, postgres.ResourceSizeSQL, "mine", memory.SearchExactMessages).Scan(&size); err != nil || size != 1500 {
		t.Fatalf("size %d (%v), want 1500", size, err)
	}
	var plan []struct{ Plan explainNode }
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+postgres.SearchSQL, "mine", memory.SearchExactMessages, []string{"garden", "dry"},
		1000, 5, postgres.ResourceLexeme("mine"), 200, 0.35, "", "", 5, 1).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(plan, "", " ")
	if !strings.Contains(string(b), `"message_search_recent"`) {
		t.Errorf("the search does not use message_search_recent:\n%s", b)
	}
	if read := plan[0].Plan.rowsRead("message_search"); read > 1500 {
		t.Errorf("the search reads %d rows of message_search, want 1,500 at most:\n%s", read, b)
	}
	// Each of the 5 results with the message before and after it, by the
	// thread's key.
	if read := plan[0].Plan.rowsRead("messages"); read > 5*3 {
		t.Errorf("the search reads %d rows of messages, want 15 at most:\n%s", read, b)
	}
}

// TestSearchReadsABoundedShare: a search reads the resource's newest
// messages through the (resource_id, id) index, and the older messages
// that hold a word rare among those through the GIN index, without the
// other resources' rows that hold it too: never a scan, whatever the
// tables hold; the ranking of a whole history is not run.
func TestSearchReadsABoundedShare(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	conn := acquire(t, s)
	// Mine: 1,500 messages, "tbilisi" in the 50 oldest, "garden" in every
	// fifth. Forty others: 100 messages each, both words in every other.
	seedSearchPlan(t, conn, `CASE WHEN i > 0 AND s % 2 = 0 THEN 'tbilisi garden' WHEN i = 0 AND s <= 50 THEN 'my trip to tbilisi'
		WHEN s % 5 = 0 THEN 'the garden is dry' ELSE 'hello there' END`)
	var plan []struct{ Plan explainNode }
	// A bound of 1,000 messages for a history ranked whole, so that this
	// one of 1,500 is searched as a longer one is.
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+postgres.SearchSQL, "mine", 1000, []string{"garden", "tbilisi"},
		1000, 5, postgres.ResourceLexeme("mine"), 200, 0.35, "", "", 5, 1).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(plan, "", " ")
	for _, index := range []string{"message_search_doc", "message_search_recent"} {
		if !strings.Contains(string(b), `"`+index+`"`) {
			t.Errorf("the search does not use %s:\n%s", index, b)
		}
	}
	// The newest 1,000; the 50 older with tbilisi, from the index and the table.
	if read, most := plan[0].Plan.rowsRead("message_search"), 1000+2*50; read > most {
		t.Errorf("the search reads %d rows of message_search, want at most %d:\n%s", read, most, b)
	}
	if read := plan[0].Plan.rowsRead("messages"); read > 5*3 {
		t.Errorf("the search reads %d rows of messages, want 15 at most:\n%s", read, b)
	}
}

// TestLockBeginReading: the working memory and the resource's settings
// LockBeginReading reads with the thread are WorkingMemory's (the current
// version, or Version 0 before any) and ResourceSettings' (nothing set
// before any), and a busy thread is refused as by LockBegin.
func TestLockBeginReading(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	th := func(id string) memory.Thread {
		return memory.Thread{ID: id, ResourceID: "r", Metadata: json.RawMessage(`{}`), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	}
	nothing := func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) { return nil, nil }
	reads := func() (memory.BeginReads, *memory.WorkingMemory, *memory.ResourceSettings) {
		wm, rs := &memory.WorkingMemory{Scope: memory.ScopeResource, Key: "r"}, &memory.ResourceSettings{ResourceID: "r"}
		return memory.BeginReads{WorkingMemory: wm, Settings: rs}, wm, rs
	}

	r, wm, rs := reads()
	turn, _, _, err := s.LockBeginReading(ctx, th("a"), 10, nil, nothing, r)
	if err != nil {
		t.Fatal(err)
	}
	if wm.Version != 0 || wm.Scope != memory.ScopeResource || wm.Key != "r" || wm.Content != "" {
		t.Fatalf("before any version: %+v", wm)
	}
	if *rs != (memory.ResourceSettings{ResourceID: "r"}) {
		t.Fatalf("before any settings: %+v", rs)
	}
	if _, _, _, err := s.LockBeginReading(ctx, th("a"), 10, nil, nothing, memory.BeginReads{}); !errors.Is(err, memory.ErrBusy) {
		t.Fatalf("a held thread: %v, want ErrBusy", err)
	}
	turn.Unlock()

	for _, content := range []string{"- Name: Ada", "- Name: Ada\n- Likes: tea"} {
		if _, err := s.UpdateWorkingMemory(ctx, memory.WorkingMemory{Scope: memory.ScopeResource, Key: "r", ResourceID: "r", UpdatedAt: time.Now()},
			func(memory.WorkingMemory) (string, error) { return content, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetResourceSettings(ctx, memory.ResourceSettings{ResourceID: "r", Minor: true, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	want, err := s.WorkingMemory(ctx, memory.ScopeResource, "r")
	if err != nil {
		t.Fatal(err)
	}
	wantRS, err := s.ResourceSettings(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	r, wm, rs = reads()
	turn, _, _, err = s.LockBeginReading(ctx, th("b"), 10, nil, nothing, r)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Unlock()
	if wm.Version != 2 || !reflect.DeepEqual(*wm, want) {
		t.Fatalf("LockBeginReading read %+v, WorkingMemory %+v", wm, want)
	}
	if !rs.Minor || !reflect.DeepEqual(*rs, wantRS) {
		t.Fatalf("LockBeginReading read %+v, ResourceSettings %+v", rs, wantRS)
	}
	// One read alone.
	rs = &memory.ResourceSettings{ResourceID: "r"}
	turn2, _, _, err := s.LockBeginReading(ctx, th("c"), 10, nil, nothing, memory.BeginReads{Settings: rs})
	if err != nil {
		t.Fatal(err)
	}
	defer turn2.Unlock()
	if !reflect.DeepEqual(*rs, wantRS) {
		t.Fatalf("the settings alone: %+v, want %+v", rs, wantRS)
	}
}
