package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/memorytest"
	"github.com/companionhq/companion/internal/memory/sqlite"
	_ "github.com/companionhq/companion/internal/testkit"
)

func harness() memorytest.Harness {
	return memorytest.Harness{Fresh: func(t testing.TB) func(ctx context.Context) (memory.Store, error) {
		path := filepath.Join(t.TempDir(), "data", "companion.db")
		return func(ctx context.Context) (memory.Store, error) { return sqlite.Open(ctx, path) }
	}}
}

func TestStore(t *testing.T) { memorytest.Run(t, harness()) }

func BenchmarkHistory(b *testing.B) { memorytest.BenchHistory(b, harness()) }

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "companion.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != 1 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	// The settings every connection needs.
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000"} {
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
	if _, err := sqlite.Open(ctx, path); err == nil || !strings.Contains(err.Error(), "schema is at version 99, newer than this build knows (1)") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}
