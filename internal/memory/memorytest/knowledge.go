package memorytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// runKnowledge runs the cases of memory.Knowledge.
func runKnowledge(t *testing.T, h Harness) {
	t.Run("WorkingMemoryKeepsVersions", func(t *testing.T) { t.Parallel(); testWorkingMemory(t, h) })
	t.Run("WorkingMemoryUpdatesSeeEachOther", func(t *testing.T) { t.Parallel(); testWorkingMemoryConcurrent(t, h) })
	t.Run("DeleteThreadDropsItsWorkingMemory", func(t *testing.T) { t.Parallel(); testDeleteThreadWorkingMemory(t, h) })
}

// supported skips the test when err says the store does not do this yet.
func supported(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
}

// set is a working memory update that sets content.
func set(content string) memory.WorkingMemoryUpdate {
	return func(memory.WorkingMemory) (string, error) { return content, nil }
}

func updateWM(t *testing.T, s memory.Store, scope, key, owner string, at time.Time, update memory.WorkingMemoryUpdate) memory.WorkingMemory {
	t.Helper()
	wm, err := s.UpdateWorkingMemory(context.Background(), memory.WorkingMemory{Scope: scope, Key: key, ResourceID: owner, UpdatedAt: at}, update)
	if err != nil {
		t.Fatalf("updating working memory %s/%s: %v", scope, key, err)
	}
	return wm
}

func testWorkingMemory(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	none, err := s.WorkingMemory(ctx, memory.ScopeResource, "alice")
	supported(t, err)
	if err != nil || none.Version != 0 || none.Content != "" || none.Scope != memory.ScopeResource || none.Key != "alice" {
		t.Fatalf("working memory never written: %+v, %v", none, err)
	}
	// The first update sees none, and stores version 1 as given.
	first := updateWM(t, s, memory.ScopeResource, "alice", "alice", base, func(cur memory.WorkingMemory) (string, error) {
		if cur.Version != 0 || cur.Content != "" {
			t.Errorf("the first update saw %+v", cur)
		}
		return "# Alice\n- likes tea", nil
	})
	want := memory.WorkingMemory{Scope: memory.ScopeResource, Key: "alice", ResourceID: "alice", Version: 1, Content: "# Alice\n- likes tea", UpdatedAt: base}
	if first != want {
		t.Fatalf("first version %+v, want %+v", first, want)
	}
	if got, err := s.WorkingMemory(ctx, memory.ScopeResource, "alice"); err != nil || got != want {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	// An update sees the current version; one that changes nothing stores
	// nothing, and one that fails stores nothing either.
	second := updateWM(t, s, memory.ScopeResource, "alice", "alice", base.Add(time.Minute), func(cur memory.WorkingMemory) (string, error) {
		if cur != want {
			t.Errorf("the second update saw %+v", cur)
		}
		return cur.Content + "\n- has a dog", nil
	})
	if second.Version != 2 || second.Content != "# Alice\n- likes tea\n- has a dog" || !second.UpdatedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("second version %+v", second)
	}
	if same := updateWM(t, s, memory.ScopeResource, "alice", "alice", base.Add(time.Hour), set(second.Content)); same != second {
		t.Fatalf("an update that changes nothing returned %+v, want %+v", same, second)
	}
	refused := errors.New("refused")
	if _, err := s.UpdateWorkingMemory(ctx, memory.WorkingMemory{Scope: memory.ScopeResource, Key: "alice", ResourceID: "alice", UpdatedAt: base.Add(time.Hour)},
		func(memory.WorkingMemory) (string, error) { return "", refused }); !errors.Is(err, refused) {
		t.Fatalf("a failing update: %v", err)
	}
	versions, err := s.WorkingMemoryVersions(ctx, memory.ScopeResource, "alice", 10)
	if err != nil || len(versions) != 2 || versions[0] != second || versions[1] != want {
		t.Fatalf("versions %+v, %v", versions, err)
	}
	// Scopes and keys are apart: a thread of the same id, another resource.
	updateWM(t, s, memory.ScopeThread, "alice", "alice", base, set("thread notes"))
	updateWM(t, s, memory.ScopeResource, "bob", "bob", base, set("bob"))
	if got, _ := s.WorkingMemory(ctx, memory.ScopeResource, "alice"); got != second {
		t.Fatalf("alice's after other keys were written: %+v", got)
	}
	if got, _ := s.WorkingMemory(ctx, memory.ScopeThread, "alice"); got.Version != 1 || got.Content != "thread notes" {
		t.Fatalf("the thread's: %+v", got)
	}

	// The oldest versions go beyond the most a store keeps.
	const n = memory.MaxWorkingMemoryVersions + 5
	for i := 3; i <= n; i++ {
		updateWM(t, s, memory.ScopeResource, "alice", "alice", base.Add(time.Duration(i)*time.Minute), set(fmt.Sprint("version ", i)))
	}
	versions, err = s.WorkingMemoryVersions(ctx, memory.ScopeResource, "alice", 1000)
	if err != nil || len(versions) != memory.MaxWorkingMemoryVersions {
		t.Fatalf("%d versions kept (%v), want %d", len(versions), err, memory.MaxWorkingMemoryVersions)
	}
	for i, v := range versions {
		if v.Version != int64(n-i) || v.Content != fmt.Sprint("version ", n-i) {
			t.Fatalf("version %d of those kept is %+v, want %d", i, v, n-i)
		}
	}
	if top, err := s.WorkingMemoryVersions(ctx, memory.ScopeResource, "alice", 3); err != nil || len(top) != 3 || top[0].Version != n {
		t.Fatalf("the last 3 versions: %+v, %v", top, err)
	}
	if none, err := s.WorkingMemoryVersions(ctx, memory.ScopeResource, "carol", 10); err != nil || len(none) != 0 {
		t.Fatalf("versions of a key never written: %+v, %v", none, err)
	}
}

// testWorkingMemoryConcurrent runs updates of one key at once, from
// goroutines on two instances of the store: each appends a line to the
// content it is given, so an update that did not see the one before it
// loses that one's line.
func testWorkingMemoryConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	open0 := h.Fresh(t)
	stores := []memory.Store{mustOpen(t, open0), mustOpen(t, open0)}
	if _, err := stores[0].WorkingMemory(ctx, memory.ScopeResource, "r"); err != nil {
		supported(t, err)
		t.Fatal(err)
	}
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for i := range each {
				_, err := s.UpdateWorkingMemory(ctx, memory.WorkingMemory{Scope: memory.ScopeResource, Key: "r", ResourceID: "r", UpdatedAt: time.Now()},
					func(cur memory.WorkingMemory) (string, error) {
						return cur.Content + fmt.Sprintf("line %d.%d\n", w, i), nil
					})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cur, err := stores[1].WorkingMemory(ctx, memory.ScopeResource, "r")
	if err != nil {
		t.Fatal(err)
	}
	if cur.Version != workers*each {
		t.Errorf("version %d after %d updates", cur.Version, workers*each)
	}
	for w := range workers {
		for i := range each {
			if line := fmt.Sprintf("line %d.%d\n", w, i); strings.Count(cur.Content, line) != 1 {
				t.Errorf("%q is in the content %d times, want once:\n%s", line, strings.Count(cur.Content, line), cur.Content)
			}
		}
	}
}

func testDeleteThreadWorkingMemory(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	if _, err := s.WorkingMemory(ctx, memory.ScopeThread, "t"); err != nil {
		supported(t, err)
		t.Fatal(err)
	}
	turn := lock(t, s, "t")
	open(t, turn, "t", "alice")
	updateWM(t, s, memory.ScopeThread, "t", "alice", base, set("one"))
	updateWM(t, s, memory.ScopeThread, "t", "alice", base, set("two"))
	updateWM(t, s, memory.ScopeThread, "k", "alice", base, set("kept"))
	updateWM(t, s, memory.ScopeResource, "t", "t", base, set("a resource named like the thread"))
	if err := turn.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if vs, err := s.WorkingMemoryVersions(ctx, memory.ScopeThread, "t", 10); err != nil || len(vs) != 0 {
		t.Fatalf("the deleted thread's working memory: %+v, %v", vs, err)
	}
	if wm, _ := s.WorkingMemory(ctx, memory.ScopeThread, "k"); wm.Content != "kept" {
		t.Fatalf("another thread's working memory: %+v", wm)
	}
	if wm, _ := s.WorkingMemory(ctx, memory.ScopeResource, "t"); wm.Content != "a resource named like the thread" {
		t.Fatalf("a resource's working memory: %+v", wm)
	}
}
