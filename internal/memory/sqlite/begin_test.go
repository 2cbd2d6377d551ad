package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/sqlite"
)

// TestBeginWhenAnotherProcessWrites: Begin reads outside its write, relying
// on the turn's hold on the thread, which is one process's. When another
// process (another Store on the file) changes the thread between the reads
// and the write, Begin notices and does it again in one transaction:
// nothing is lost, numbered twice or stored under the wrong owner.
func TestBeginWhenAnotherProcessWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "companion.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	now := time.Now()
	thread := func(id, owner string) memory.Thread {
		return memory.Thread{ID: id, ResourceID: owner, CreatedAt: now, UpdatedAt: now}
	}
	msg := func(id string) memory.Message {
		return memory.Message{ID: id, Role: "user", Text: id, Model: []byte(`[]`), CreatedAt: now}
	}
	// begin runs one Begin on s that stores msgs; meanwhile, when not nil,
	// runs after its first plan.
	begin := func(s *sqlite.Store, th memory.Thread, msgs []memory.Message, meanwhile func()) (memory.Thread, []memory.Message, []int, error) {
		turn, err := s.Lock(ctx, th.ID, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer turn.Unlock()
		var tails []int
		cur, out, err := turn.Begin(ctx, th, 20, nil, func(cur memory.Thread, tail []memory.Message, _ map[string]bool) ([]memory.Message, error) {
			tails = append(tails, len(tail))
			if cur.ResourceID != th.ResourceID {
				return nil, errors.New("owned by " + cur.ResourceID)
			}
			if meanwhile != nil {
				meanwhile()
				meanwhile = nil
			}
			return msgs, nil
		})
		return cur, out, tails, err
	}
	// remove deletes thread id through s, as another process would.
	remove := func(s *sqlite.Store, id string) {
		turn, err := s.Lock(ctx, id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer turn.Unlock()
		if err := turn.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// holds checks that thread id holds the messages want, numbered 1, 2...
	holds := func(id string, want ...string) {
		t.Helper()
		msgs, _, err := a.Messages(ctx, id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i, m := range msgs {
			if m.Seq != int64(i+1) {
				t.Errorf("message %s has seq %d at %d", m.ID, m.Seq, i+1)
			}
			ids = append(ids, m.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("thread %s holds %v, want %v", id, ids, want)
		}
	}

	t.Run("appended meanwhile", func(t *testing.T) {
		if _, _, _, err := begin(a, thread("t1", "ana"), []memory.Message{msg("m1")}, nil); err != nil {
			t.Fatal(err)
		}
		_, out, tails, err := begin(a, thread("t1", "ana"), []memory.Message{msg("m3")}, func() {
			if _, _, _, err := begin(b, thread("t1", "ana"), []memory.Message{msg("m2")}, nil); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(tails) != 2 || tails[0] != 1 || tails[1] != 2 || len(out) != 1 || out[0].Seq != 3 {
			t.Errorf("plans saw tails %v; stored %+v", tails, out)
		}
		holds("t1", "m1", "m2", "m3")
	})
	t.Run("created meanwhile by another owner", func(t *testing.T) {
		_, _, tails, err := begin(a, thread("t2", "ana"), []memory.Message{msg("m1")}, func() {
			if _, _, _, err := begin(b, thread("t2", "bob"), []memory.Message{msg("b1")}, nil); err != nil {
				t.Fatal(err)
			}
		})
		if err == nil || err.Error() != "owned by bob" || len(tails) != 2 {
			t.Fatalf("error %v, plans %v", err, tails)
		}
		holds("t2", "b1")
	})
	t.Run("deleted meanwhile", func(t *testing.T) {
		if _, _, _, err := begin(a, thread("t3", "ana"), []memory.Message{msg("m1")}, nil); err != nil {
			t.Fatal(err)
		}
		_, out, tails, err := begin(a, thread("t3", "ana"), []memory.Message{msg("m2")}, func() { remove(b, "t3") })
		if err != nil || len(tails) != 2 || tails[1] != 0 || len(out) != 1 || out[0].Seq != 1 {
			t.Fatalf("error %v, plans %v, stored %+v", err, tails, out)
		}
		holds("t3", "m2")
	})
	t.Run("deleted and created again by another owner meanwhile", func(t *testing.T) {
		if _, _, _, err := begin(a, thread("t4", "ana"), []memory.Message{msg("m1")}, nil); err != nil {
			t.Fatal(err)
		}
		// The same last message number as read, under another owner.
		_, _, tails, err := begin(a, thread("t4", "ana"), []memory.Message{msg("m2")}, func() {
			remove(b, "t4")
			if _, _, _, err := begin(b, thread("t4", "bob"), []memory.Message{msg("b1")}, nil); err != nil {
				t.Fatal(err)
			}
		})
		if err == nil || err.Error() != "owned by bob" || len(tails) != 2 {
			t.Fatalf("error %v, plans %v", err, tails)
		}
		holds("t4", "b1")
	})
}
