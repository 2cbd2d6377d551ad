package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
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
