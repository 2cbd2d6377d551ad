package bm25

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/companionhq/companion/internal/memory"
)

func mkdoc(row int64, thread string, seq int64, text string) Doc {
	return Doc{Row: row, ThreadID: thread, Message: memory.Message{Seq: seq, Text: text}}
}

func search(x *Index, word string) int {
	return len(x.Search(Query{Words: []string{word}, Limit: 100, NearWeight: memory.NearWeight}))
}

func TestCacheLoadsOnceForSearchesAtOnce(t *testing.T) {
	c := NewCache(0)
	var loads atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) ([]Doc, error) {
		loads.Add(1)
		<-release
		return []Doc{mkdoc(1, "t", 1, "cello")}, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			x, err := c.Get(context.Background(), "r", load)
			if err != nil || search(x, "cello") != 1 {
				t.Errorf("Get: %v", err)
			}
		})
	}
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
	if c.Cached("r") == nil || c.ForThread("t") == nil || c.Held() != 1 {
		t.Fatalf("after the load: cached %v, thread %v, held %d", c.Cached("r"), c.ForThread("t"), c.Held())
	}
}

func TestCacheTakesWhatIsAdded(t *testing.T) {
	c := NewCache(0)
	x, err := c.Get(context.Background(), "r", func(context.Context) ([]Doc, error) { return []Doc{mkdoc(1, "t", 1, "cello")}, nil })
	if err != nil {
		t.Fatal(err)
	}
	c.Added("r", []Doc{mkdoc(2, "t2", 1, "garden"), mkdoc(3, "u", 1, "garden")})
	c.Added("other", []Doc{mkdoc(4, "v", 1, "garden")}) // not held: nothing to do
	if search(x, "garden") != 2 || c.Held() != 3 || c.ForThread("u") != x || c.ForThread("v") != nil {
		t.Fatalf("garden %d hits, held %d", search(x, "garden"), c.Held())
	}
}

// TestCacheKeepsWhatIsAddedWhileLoading: a message committed while the
// history is read may or may not be in what was read; it is in the index.
func TestCacheKeepsWhatIsAddedWhileLoading(t *testing.T) {
	c := NewCache(0)
	x, err := c.Get(context.Background(), "r", func(context.Context) ([]Doc, error) {
		c.Added("r", []Doc{mkdoc(1, "t", 1, "cello"), mkdoc(2, "t2", 1, "garden")})
		return []Doc{mkdoc(1, "t", 1, "cello")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if search(x, "garden") != 1 || search(x, "cello") != 1 || x.Len() != 2 {
		t.Fatalf("garden %d, cello %d, len %d", search(x, "garden"), search(x, "cello"), x.Len())
	}
}

// TestCacheReadsAgainWhatWasDeletedWhileLoading: a thread deleted while
// the history was read may be in what was read: it is read again.
func TestCacheReadsAgainWhatWasDeletedWhileLoading(t *testing.T) {
	c := NewCache(0)
	loads := 0
	x, err := c.Get(context.Background(), "r", func(context.Context) ([]Doc, error) {
		loads++
		if loads == 1 {
			c.Dropped("r")
			return []Doc{mkdoc(1, "t", 1, "cello")}, nil
		}
		return nil, nil
	})
	if err != nil || loads != 2 || search(x, "cello") != 0 {
		t.Fatalf("loads %d, err %v", loads, err)
	}
}

func TestCacheDropsWhatWasDeleted(t *testing.T) {
	c := NewCache(0)
	loads := 0
	load := func(context.Context) ([]Doc, error) { loads++; return []Doc{mkdoc(1, "t", 1, "cello")}, nil }
	if _, err := c.Get(context.Background(), "r", load); err != nil {
		t.Fatal(err)
	}
	c.Dropped("r")
	if c.Cached("r") != nil || c.ForThread("t") != nil || c.Held() != 0 {
		t.Fatal("a dropped index is still held")
	}
	if _, err := c.Get(context.Background(), "r", load); err != nil || loads != 2 {
		t.Fatalf("loads %d, err %v", loads, err)
	}
}

func TestCacheKeepsItsBound(t *testing.T) {
	c := NewCache(5)
	get := func(key string, n int) {
		t.Helper()
		_, err := c.Get(context.Background(), key, func(context.Context) ([]Doc, error) {
			var docs []Doc
			for i := range n {
				docs = append(docs, mkdoc(int64(i+1), key+"-t", int64(i+1), "cello"))
			}
			return docs, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	get("a", 2)
	get("b", 2)
	c.Cached("a") // a is the most lately used
	get("c", 2)   // 6 > 5: b goes
	if c.Cached("b") != nil || c.Cached("a") == nil || c.Cached("c") == nil || c.Held() != 4 {
		t.Fatalf("held %d; a %v, b %v, c %v", c.Held(), c.Cached("a") != nil, c.Cached("b") != nil, c.Cached("c") != nil)
	}
	get("d", 9) // larger than the bound alone: kept, the others go
	if c.Cached("d") == nil || c.Cached("a") != nil || c.Cached("c") != nil || c.Held() != 9 {
		t.Fatalf("held %d", c.Held())
	}
}

func TestCacheLoadFails(t *testing.T) {
	c := NewCache(0)
	boom := errors.New("boom")
	if _, err := c.Get(context.Background(), "r", func(context.Context) ([]Doc, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if c.Cached("r") != nil {
		t.Fatal("a failed load is held")
	}
	if _, err := c.Get(context.Background(), "r", func(context.Context) ([]Doc, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
}

func TestCacheClear(t *testing.T) {
	c := NewCache(0)
	for _, k := range []string{"a", "b"} {
		if _, err := c.Get(context.Background(), k, func(context.Context) ([]Doc, error) { return []Doc{mkdoc(1, k+"-t", 1, "cello")}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	c.Clear()
	if c.Held() != 0 || c.Cached("a") != nil || c.ForThread("b-t") != nil {
		t.Fatalf("after Clear: held %d", c.Held())
	}
}
