package bm25

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
)

// DefaultCacheMessages is how many messages a Cache holds the indexes of by
// default: 100 resources of a thousand messages, about 40 MB (an index
// takes some 260 bytes a message, besides the message's text and id).
const DefaultCacheMessages = 100_000

// Cache holds the indexes of the resources searched lately, the least
// lately searched going first past its bound. A store loads a resource's
// index on its first search and tells the cache of every message it
// stores (Added) and every one it deletes (Dropped), once committed, so
// that an index held is the resource's history. Safe for concurrent use.
type Cache struct {
	stems *Stemmer
	max   int

	mu       sync.Mutex
	held     int // messages in the indexes held
	entries  map[string]*entry
	byThread map[string]*entry // the entry of each thread of an index held
	lru      list.List         // of *entry, the most lately used first
}

// entry is one resource's index, or its loading.
type entry struct {
	key      string
	index    *Index        // nil while loading
	loaded   chan struct{} // closed once loaded (or failed)
	stale    bool          // dropped while loading: not to be kept
	pending  []Doc         // added while loading
	retitles []retitle     // titles set while loading
	size     int           // messages counted in held
	elem     *list.Element
}

type retitle struct {
	thread, text string
	version      uint64
}

// NewCache holds the indexes of max messages at most (0:
// DefaultCacheMessages).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = DefaultCacheMessages
	}
	return &Cache{stems: NewStemmer(0), max: max, entries: map[string]*entry{}, byThread: map[string]*entry{}}
}

// Cached is the index of key when the cache holds it, or nil.
func (c *Cache) Cached(key string) *Index {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil || e.index == nil {
		return nil
	}
	c.lru.MoveToFront(e.elem)
	return e.index
}

// ForThread is the index held that holds messages of thread, or nil.
func (c *Cache) ForThread(thread string) *Index {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byThread[thread]; e != nil {
		return e.index
	}
	return nil
}

// Get is the index of key, loaded by load (every message of the resource,
// in any order) when the cache does not hold it. Searches of a resource
// being loaded wait for its load.
func (c *Cache) Get(ctx context.Context, key string, load func(context.Context) ([]Doc, error)) (*Index, error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		e := c.entries[key]
		if e != nil && e.index != nil {
			c.lru.MoveToFront(e.elem)
			c.mu.Unlock()
			return e.index, nil
		}
		if e != nil {
			c.mu.Unlock()
			select {
			case <-e.loaded:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		e = &entry{key: key, loaded: make(chan struct{})}
		c.entries[key] = e
		c.mu.Unlock()

		docs, err := load(ctx)
		var x *Index
		if err == nil {
			// In the order they were stored: a long history's search
			// takes the last the index took as the recent ones.
			slices.SortFunc(docs, func(a, b Doc) int { return cmp.Compare(a.Row, b.Row) })
			x = New(c.stems)
			x.Add(docs...)
		}

		c.mu.Lock()
		close(e.loaded)
		if c.entries[key] == e {
			delete(c.entries, key)
		}
		if err != nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("loading the recall index: %w", err)
		}
		if e.stale {
			// A thread of the resource was deleted while it was read: what
			// was read may hold it. Read again; after a few tries, use it
			// once without keeping it (the store finds no deleted message).
			c.mu.Unlock()
			if attempt < 2 {
				continue
			}
			return x, nil
		}
		x.Add(e.pending...)
		for _, r := range e.retitles {
			x.Retitle(r.thread, r.text, r.version)
		}
		e.index, e.pending, e.retitles = x, nil, nil
		e.size = x.Len()
		c.entries[key] = e
		e.elem = c.lru.PushFront(e)
		x.Threads(func(th string) { c.byThread[th] = e })
		c.held += e.size
		c.evict()
		c.mu.Unlock()
		return x, nil
	}
}

// Added tells the cache that docs of resource key were stored (committed).
func (c *Cache) Added(key string, docs []Doc) {
	if len(docs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	switch {
	case e == nil:
	case e.index == nil:
		e.pending = append(e.pending, docs...)
	default:
		e.index.Add(docs...)
		for _, d := range docs {
			c.byThread[d.ThreadID] = e
		}
		n := e.index.Len()
		c.held += n - e.size
		e.size = n
		c.evict()
	}
}

// Retitled tells the cache that the write of version v left thread's title
// text (committed): Index.Retitle.
func (c *Cache) Retitled(thread, text string, v uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byThread[thread]; e != nil {
		e.index.Retitle(thread, text, v)
		return
	}
	// A resource being loaded: the thread may be one of it; the title goes
	// with what is added while loading.
	for _, e := range c.entries {
		if e.index == nil {
			e.retitles = append(e.retitles, retitle{thread, text, v})
		}
	}
}

// Dropped tells the cache that messages of resource key were deleted
// (committed): its index goes, and is loaded again on its next search.
func (c *Cache) Dropped(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	switch {
	case e == nil:
	case e.index == nil:
		e.stale = true
	default:
		c.remove(e)
	}
}

// Loading reports whether the index of key is being loaded.
func (c *Cache) Loading(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	return e != nil && e.index == nil
}

// Max is how many messages the cache holds the indexes of at most (it
// keeps the index it took last, whatever its size).
func (c *Cache) Max() int { return c.max }

// Clear lets every index held go.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.remove(c.lru.Back().Value.(*entry))
	}
}

// Held is how many messages the indexes held hold.
func (c *Cache) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// evict drops the least lately used indexes past the bound, keeping the
// most lately used one whatever its size.
func (c *Cache) evict() {
	for c.held > c.max && c.lru.Len() > 1 {
		c.remove(c.lru.Back().Value.(*entry))
	}
}

func (c *Cache) remove(e *entry) {
	e.index.Threads(func(th string) {
		if c.byThread[th] == e {
			delete(c.byThread, th)
		}
	})
	c.lru.Remove(e.elem)
	delete(c.entries, e.key)
	c.held -= e.size
}
