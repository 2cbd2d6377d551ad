package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// isBusy must know SQLite's busy error as the driver returns it, wrapped,
// and nothing else: Open retries on it.
func TestIsBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	a, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, err := a.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, busy := b.Exec(`INSERT INTO t VALUES (1)`)
	if busy == nil {
		t.Fatal("a second writer got in while the first held the lock")
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{busy, true},
		{fmt.Errorf("migrating: %w", busy), true},
		{errors.New("database is locked"), false},
		{nil, false},
	} {
		if got := isBusy(c.err); got != c.want {
			t.Errorf("isBusy(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
