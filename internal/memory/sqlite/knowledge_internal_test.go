package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// TestWorkingMemoryUpdatesInOneGroup: updates of one key committed in one
// group see each other in turn, and one that fails stores nothing while
// the others of its group are kept.
func TestWorkingMemoryUpdatesInOneGroup(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	refused := errors.New("refused")
	wm := memory.WorkingMemory{Scope: memory.ScopeResource, Key: "r", ResourceID: "r", UpdatedAt: time.Now()}
	var outs [3]memory.WorkingMemory
	appendLine := func(line string) memory.WorkingMemoryUpdate {
		return func(cur memory.WorkingMemory) (string, error) { return cur.Content + line + "\n", nil }
	}
	updates := []memory.WorkingMemoryUpdate{
		appendLine("one"),
		func(cur memory.WorkingMemory) (string, error) {
			if cur.Version != 1 {
				t.Errorf("the second update of the group saw version %d, want 1", cur.Version)
			}
			return "", refused
		},
		appendLine("three"),
	}
	group := make([]*write, len(updates))
	for i, u := range updates {
		group[i] = &write{ctx: ctx, done: make(chan error, 1), fn: s.updateWorkingMemory(wm, u, &outs[i])}
	}
	s.commitGroup(group)
	for i, want := range []error{nil, refused, nil} {
		if err := <-group[i].done; !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("update %d: %v, want %v", i, err, want)
		}
	}
	cur, err := s.WorkingMemory(ctx, memory.ScopeResource, "r")
	if err != nil || cur.Version != 2 || cur.Content != "one\nthree\n" || outs[2] != cur {
		t.Fatalf("after the group: %+v (the last update returned %+v), %v", cur, outs[2], err)
	}
}
