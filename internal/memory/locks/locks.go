// Package locks is a set of in-process locks keyed by name, taken in the
// order they were asked for, with a bounded wait. Stores use it for turns:
// the SQLite store alone (one process), the PostgreSQL store in front of its
// thread leases, so that one instance queues its own requests instead of
// polling the database for each.
package locks

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrTimeout is a wait that ran out.
var ErrTimeout = errors.New("lock wait timed out")

// Set is a set of locks. The zero value is ready to use.
type Set struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	// ch holds a token while the lock is taken. Senders blocked on a
	// channel are served in arrival order, so waiters take turns in order.
	ch   chan struct{}
	refs int
}

// Acquire takes the lock key, waiting up to wait (not at all when wait <= 0).
// It returns the function that releases it (once; later calls do nothing),
// ErrTimeout, or ctx's error.
func (s *Set) Acquire(ctx context.Context, key string, wait time.Duration) (func(), error) {
	e := s.ref(key)
	acquired := func() func() {
		var once sync.Once
		return func() {
			once.Do(func() {
				<-e.ch
				s.unref(key, e)
			})
		}
	}
	select {
	case e.ch <- struct{}{}:
		return acquired(), nil
	default:
	}
	if wait <= 0 {
		s.unref(key, e)
		return nil, ErrTimeout
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case e.ch <- struct{}{}:
		return acquired(), nil
	case <-t.C:
		s.unref(key, e)
		return nil, ErrTimeout
	case <-ctx.Done():
		s.unref(key, e)
		return nil, ctx.Err()
	}
}

func (s *Set) ref(key string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*entry{}
	}
	e := s.m[key]
	if e == nil {
		e = &entry{ch: make(chan struct{}, 1)}
		s.m[key] = e
	}
	e.refs++
	return e
}

func (s *Set) unref(key string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(s.m, key)
	}
}
