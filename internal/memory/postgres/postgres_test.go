package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/memorytest"
	"github.com/companionhq/companion/internal/memory/postgres"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	_ "github.com/companionhq/companion/internal/testkit"
)

func harness() memorytest.Harness {
	return memorytest.Harness{SharedLocks: true, Fresh: func(t testing.TB) func(ctx context.Context) (memory.Store, error) {
		url := pgtest.URL(t)
		return func(ctx context.Context) (memory.Store, error) { return postgres.Open(ctx, url) }
	}}
}

func TestStore(t *testing.T) { memorytest.Run(t, harness()) }

func BenchmarkHistory(b *testing.B) { memorytest.BenchHistory(b, harness()) }

func BenchmarkTurn(b *testing.B) { memorytest.BenchTurn(b, harness()) }

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 3 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, url); err == nil || !strings.Contains(err.Error(), "schema is at version 99, newer than this build knows (3)") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

// TestLockTimeoutDoesNotLinger: the lock wait's lock_timeout ends with its
// statement; the pooled connection goes back to normal.
func TestLockTimeoutDoesNotLinger(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.URL(t)+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turn, err := s.Lock(ctx, "t", 5e9)
	if err != nil {
		t.Fatal(err)
	}
	turn.Unlock()
	var timeout string
	if err := s.Pool().QueryRow(ctx, `SHOW lock_timeout`).Scan(&timeout); err != nil || timeout != "0" {
		t.Fatalf("lock_timeout is %q after a turn (%v), want 0", timeout, err)
	}
	var held int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&held); err != nil || held != 0 {
		t.Fatalf("the connection still holds %d advisory locks (%v)", held, err)
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
	// After the upgrade a message counts its text and model messages; the
	// user's became one model message of its role and text.
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
