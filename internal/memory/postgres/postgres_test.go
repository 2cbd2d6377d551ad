package postgres_test

import (
	"context"
	"strings"
	"testing"

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

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 1 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, url); err == nil || !strings.Contains(err.Error(), "schema is at version 99, newer than this build knows (1)") {
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
