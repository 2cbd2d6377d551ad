package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/memorytest"
	"github.com/companionhq/companion/internal/memory/sqlite"
	_ "github.com/companionhq/companion/internal/testkit"
)

func harness() memorytest.Harness {
	return memorytest.Harness{
		Fresh: func(t testing.TB) func(ctx context.Context) (memory.Store, error) {
			path := filepath.Join(t.TempDir(), "data", "companion.db")
			return func(ctx context.Context) (memory.Store, error) { return sqlite.Open(ctx, path) }
		},
		// The store's checkpointer copies a seeded thread's pages from the
		// write-ahead log for about a second after the load: done here, and
		// the log emptied, before the benchmark measures. Before that, the
		// recall index's segments are merged: FTS5 merges the big segments
		// of a bulk load a few pages per later commit, which made each turn
		// of the first thousands after seeding 100,000 messages cost half
		// a millisecond more than those after them.
		Settle: func(tb testing.TB, s memory.Store) {
			for _, q := range []string{`INSERT INTO messages_fts (messages_fts) VALUES ('optimize')`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
				if _, err := s.(*sqlite.Store).DB().ExecContext(context.Background(), q); err != nil {
					tb.Fatal(err)
				}
			}
		},
	}
}

func TestStore(t *testing.T) { memorytest.Run(t, harness()) }

// TestStoreFullText runs the suite with a recall cache that holds no long
// history: a history longer than memory.SearchExactMessages is searched in
// the full-text index, its bounded share.
func TestStoreFullText(t *testing.T) {
	h := harness()
	fresh := h.Fresh
	h.Fresh = func(t testing.TB) func(ctx context.Context) (memory.Store, error) {
		open := fresh(t)
		return func(ctx context.Context) (memory.Store, error) {
			s, err := open(ctx)
			if err == nil {
				s.(*sqlite.Store).HoldRecall(1)
			}
			return s, err
		}
	}
	memorytest.Run(t, h)
}

func BenchmarkHistory(b *testing.B) { memorytest.BenchHistory(b, harness()) }

func BenchmarkTurn(b *testing.B) { memorytest.BenchTurn(b, harness()) }

func BenchmarkSearch(b *testing.B) { memorytest.BenchSearch(b, harness()) }

func BenchmarkRecall(b *testing.B) { memorytest.BenchRecall(b, harness()) }

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "companion.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != 9 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	// The settings every connection needs.
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000", "journal_size_limit": fmt.Sprint(sqlite.LogLimit)} {
		var got string
		if err := s.DB().QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil || got != want {
			t.Errorf("PRAGMA %s = %q (%v), want %q", pragma, got, err, want)
		}
	}
	// A file from a newer build is refused, not damaged.
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := sqlite.Open(ctx, path); err == nil || !strings.Contains(err.Error(), "schema is at version 99, newer than this build knows (9)") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

// TestUpgradeFromVersion1: a file written by the first schema, with
// threads in it, stays readable after the upgrade: client messages become
// model messages of their role and text, and threads count their bytes.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "companion.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := os.ReadFile("migrations/0001_threads_and_messages.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		string(v1),
		`INSERT INTO schema_migrations VALUES (1, '0001_threads_and_messages', 0)`,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) VALUES ('t', 'r', 0, 0, 2), ('empty', 'r', 0, 0, 0)`,
		`INSERT INTO messages (thread_id, seq, id, role, text, parts, model, created_at) VALUES
			('t', 1, 'u1', 'user', 'héllo', '[{"type":"text","text":"héllo"}]', NULL, 0),
			('t', 2, 'a1', 'assistant', 'Hi', '[{"type":"text","text":"Hi"}]', '[{"role":"assistant","content":"Hi"}]', 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("writing a version 1 file: %v", err)
		}
	}
	db.Close()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	memorytest.CheckUpgradedFromVersion1(t, s)
	msgs, total, err := s.Messages(ctx, "t", 0, 10)
	if err != nil || total != 2 || len(msgs) != 2 || msgs[0].Text != "héllo" {
		t.Fatalf("messages after the upgrade: %+v, %d, %v", msgs, total, err)
	}
}

// TestPingSeesABrokenSchema: a table gone is a failed check, not "ready".
func TestPingSeesABrokenSchema(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if _, err := s.DB().ExecContext(ctx, `DROP TABLE usage`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("Ping of a schema without its usage table: %v", err)
	}
}

// TestKnownLooksIdsUp: finding which of a request's message ids a thread
// holds searches the (thread_id, id) index for each id, whatever the
// thread's length, with the file analysed (many short threads and a long
// one) and without: SQLite plans a statement as it prepares it, from
// sqlite_stat1 once ANALYZE has filled it.
func TestKnownLooksIdsUp(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	plan := func() string {
		rows, err := s.DB().QueryContext(ctx, `EXPLAIN QUERY PLAN `+sqlite.KnownSQL, "long", `["long-1","new-1"]`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	const want = "SEARCH messages USING COVERING INDEX sqlite_autoindex_messages_2 (thread_id=? AND id=?)"
	if p := plan(); !strings.Contains(p, want) {
		t.Errorf("plan, not analysed:\n%s\nwant a line %q", p, want)
	}
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
			INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) SELECT 't' || i, 'u', 0, 0, 10 FROM n`,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq) VALUES ('long', 'u', 0, 0, 3000)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000), s(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM s WHERE j < 10)
			INSERT INTO messages (thread_id, seq, id, role, text, model, created_at) SELECT 't' || i, j, 't' || i || '-' || j, 'user', 'hi', '[]', 0 FROM n, s`,
		`WITH RECURSIVE s(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM s WHERE j < 3000)
			INSERT INTO messages (thread_id, seq, id, role, text, model, created_at) SELECT 'long', j, 'long-' || j, 'user', 'hi', '[]', 0 FROM s`,
		`ANALYZE`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if p := plan(); !strings.Contains(p, want) {
		t.Errorf("plan, analysed:\n%s\nwant a line %q", p, want)
	}
}

// openStore opens a store on a fresh file and closes it when the test ends.
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "companion.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestSearchOutlastsVacuum: the recall index refers to messages by their
// rowid, which the messages table does not declare (its key is (thread_id,
// seq)); SQLite's VACUUM keeps such rowids as they are, so a file
// vacuumed by hand still finds each message, and none twice.
func TestSearchOutlastsVacuum(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	turn, err := s.Lock(ctx, "t", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Unlock()
	if _, err := turn.Open(ctx, memory.Thread{ID: "t", ResourceID: "r", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var msgs []memory.Message
	for i := range 50 {
		msgs = append(msgs, memory.Message{ID: fmt.Sprint("m", i), Role: "user", Text: fmt.Sprintf("word%d and more", i), Model: []byte(`[]`), CreatedAt: time.Now()})
	}
	if _, err := turn.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	// Holes in the rowids, which a vacuum that numbered rows afresh would close.
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE seq % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `VACUUM`); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "r", Text: fmt.Sprint("word", i), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if (i+1)%3 == 0 {
			continue // its message is gone (its index row, left behind, joins no message)
		}
		if len(rs) == 0 || rs[0].Message.ID != fmt.Sprint("m", i) {
			var got []string
			for _, r := range rs {
				got = append(got, r.Message.ID)
			}
			t.Fatalf("word%d finds %v after a vacuum, want m%d first", i, got, i)
		}
	}
}

// BenchmarkRecallCold is BenchmarkRecall's search of a user whose recall
// index the store does not hold: its first search since the process began
// (or since the cache let it go), which reads the user's history whole and
// indexes it.
func BenchmarkRecallCold(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "companion.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Import(ctx, memorytest.CompanionHistory("u0", time.Now().Add(-100*24*time.Hour)), func(memory.Thread, []memory.Message) error { return nil }); err != nil {
		b.Fatal(err)
	}
	harness().Settle(b, s)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.ForgetRecall("u0")
		q := memorytest.CompanionQuestions[i%len(memorytest.CompanionQuestions)]
		if _, err := s.Search(ctx, memory.SearchQuery{ResourceID: "u0", Text: q, ExcludeThreadID: "new", Limit: 12}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLongHistoryIndexedInBackground: the first search of a history longer
// than memory.SearchExactMessages is answered from the full-text index
// while the history is read into the recall index; the later ones from
// that, alike.
func TestLongHistoryIndexedInBackground(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	history := memorytest.History("long", memory.SearchExactMessages+500, 1)
	history[0].Messages[0].Text = "The zeppelin flew over the old harbour."
	if _, err := s.Import(ctx, history, func(memory.Thread, []memory.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	search := func() []string {
		t.Helper()
		rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "long", Text: "zeppelin", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.Message.ID)
		}
		return ids
	}
	first := search()
	if len(first) == 0 || first[0] != history[0].Messages[0].ID {
		t.Fatalf("the first search found %v", first)
	}
	for deadline := time.Now().Add(10 * time.Second); !s.RecallHeld("long"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the history was not indexed in the background")
		}
	}
	if got := search(); strings.Join(got, " ") != strings.Join(first, " ") {
		t.Fatalf("from the recall index: found %v, from the full-text index %v", got, first)
	}
}

// TestSearchAfterClose: a closed store's search fails, though its recall
// index held the history.
func TestSearchAfterClose(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "companion.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, memorytest.CompanionHistory("u0", time.Now()), func(memory.Thread, []memory.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	q := memory.SearchQuery{ResourceID: "u0", Text: "dog", Limit: 3}
	if rs, err := s.Search(ctx, q); err != nil || len(rs) == 0 || !s.RecallHeld("u0") {
		t.Fatalf("before closing: %d results, %v", len(rs), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Search(ctx, q); err == nil {
		t.Fatalf("after closing: %d results, no error", len(rs))
	}
	if s.RecallHeld("u0") {
		t.Fatal("a closed store holds a recall index")
	}
}
