package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommitGroup: the writes of one group commit together, except those
// that failed or whose context ended: each of those is rolled back alone,
// the others are kept, and every writer learns its own outcome. A write
// alone in its group, which runs without a savepoint, likewise.
func TestCommitGroup(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "companion.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	newWrite := func(ctx context.Context, id string, fail bool) *write {
		return &write{ctx: ctx, done: make(chan error, 1), fn: func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO threads (id, resource_id, created_at, updated_at) VALUES (?, '', 0, 0)`, id); err != nil {
				return err
			}
			if fail {
				return boom
			}
			return nil
		}}
	}
	for _, tc := range []struct {
		name  string
		group []*write
		want  map[string]error // thread id: the write's outcome
	}{
		{"mixed", []*write{newWrite(ctx, "a", false), newWrite(ctx, "b", true), newWrite(ctx, "c", false), newWrite(cancelled, "d", false)},
			map[string]error{"a": nil, "b": boom, "c": nil, "d": context.Canceled}},
		{"all fail", []*write{newWrite(ctx, "e", true), newWrite(ctx, "f", true)}, map[string]error{"e": boom, "f": boom}},
		{"alone", []*write{newWrite(ctx, "g", false)}, map[string]error{"g": nil}},
		{"alone, failing", []*write{newWrite(ctx, "h", true)}, map[string]error{"h": boom}},
		{"alone, cancelled", []*write{newWrite(cancelled, "i", false)}, map[string]error{"i": context.Canceled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.commitGroup(tc.group)
			i := 0
			for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
				want, ok := tc.want[id]
				if !ok {
					continue
				}
				if got := <-tc.group[i].done; !errors.Is(got, want) || (want == nil && got != nil) {
					t.Errorf("write %s: %v, want %v", id, got, want)
				}
				i++
				var n int
				if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM threads WHERE id = ?`, id).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if stored := n == 1; stored != (want == nil) {
					t.Errorf("thread %s stored: %v, its write: %v", id, stored, want)
				}
			}
		})
	}
}

// TestCheckpointsInTheBackground: the pages committed reach the database
// file while the store is open, though no commit checkpoints
// (wal_autocheckpoint is off): the checkpointer copies them. Without it,
// the file would keep its size until the store closed.
func TestCheckpointsInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "companion.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	var autocheckpoint int
	if err := s.db.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&autocheckpoint); err != nil {
		t.Fatal(err)
	}
	if autocheckpoint != 0 {
		t.Fatalf("wal_autocheckpoint is %d on the store's connections, want 0: commits would checkpoint", autocheckpoint)
	}
	before := size()
	// About 400 pages of 4 KiB, in commits of 40.
	text := strings.Repeat("x", 1000)
	for i := range 40 {
		err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			for j := range 40 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO threads (id, resource_id, title, created_at, updated_at) VALUES (?, '', ?, 0, 0)`,
					fmt.Sprint("t", i, "-", j), text); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for size() < before+1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes, %d before 1.6 MB were committed: nothing was checkpointed", size(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
