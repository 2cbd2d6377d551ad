package limits_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/limits"
	_ "github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/fakeclock"
)

// newClock is a fake clock at a fixed time.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// allow calls l.Allow and fails the test on an error.
func allow(t *testing.T, l limits.Limiter, key string) limits.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key)
	if err != nil {
		t.Fatalf("Allow(%q): %v", key, err)
	}
	return d
}

// burst checks that a fresh key gets exactly n requests at once, counting
// down Remaining, and that the next is refused with a RetryAfter of about
// 60/n seconds (never less). It returns that refusal.
func burst(t *testing.T, l limits.Limiter, key string, n int) limits.Decision {
	t.Helper()
	for i := range n {
		d := allow(t, l, key)
		want := limits.Decision{Allowed: true, Limit: n, Remaining: n - 1 - i}
		if d != want {
			t.Fatalf("request %d of %d: %+v, want %+v", i+1, n, d, want)
		}
	}
	d := allow(t, l, key)
	interval := time.Minute / time.Duration(n)
	if d.Allowed || d.Limit != n || d.Remaining != 0 {
		t.Fatalf("request %d of a burst of %d: %+v, want refused", n+1, n, d)
	}
	// At most the interval: Redis counts the time since the burst began, on
	// its own clock.
	if d.RetryAfter <= 0 || d.RetryAfter > interval+time.Millisecond {
		t.Fatalf("RetryAfter %v, want about %v", d.RetryAfter, interval)
	}
	if d.RetryAfter%time.Millisecond != 0 {
		t.Fatalf("RetryAfter %v is not whole milliseconds", d.RetryAfter)
	}
	return d
}

func TestLocalBurstThenOneEveryInterval(t *testing.T) {
	for _, n := range []int{1, 3, 7, 10, 60, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := newClock()
			l := limits.NewLocal(n, limits.WithNow(c.Now))
			d := burst(t, l, "k", n)
			interval := time.Minute / time.Duration(n)
			if d.RetryAfter < interval {
				t.Fatalf("RetryAfter %v, want at least %v", d.RetryAfter, interval)
			}
			c.Advance(d.RetryAfter - 2*time.Millisecond)
			if d := allow(t, l, "k"); d.Allowed {
				t.Fatalf("allowed %v before RetryAfter: %+v", 2*time.Millisecond, d)
			}
			c.Advance(2 * time.Millisecond)
			if d := allow(t, l, "k"); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after RetryAfter: %+v, want allowed with none remaining", d)
			}
			if d := allow(t, l, "k"); d.Allowed || d.RetryAfter <= 0 {
				t.Fatalf("second request after RetryAfter: %+v, want refused", d)
			}
			c.Advance(time.Minute)
			burst(t, l, "k", n)
		})
	}
}

func TestLocalKeysAreIndependent(t *testing.T) {
	c := newClock()
	l := limits.NewLocal(3, limits.WithNow(c.Now))
	burst(t, l, "resource:user-1", 3)
	burst(t, l, "addr:203.0.113.7", 3)
	burst(t, l, "resource:user-2", 3)
}

func TestLocalUnlimited(t *testing.T) {
	for _, n := range []int{0, -1} {
		l := limits.NewLocal(n)
		for range 1000 {
			if d := allow(t, l, "k"); d != (limits.Decision{Allowed: true}) {
				t.Fatalf("NewLocal(%d): %+v, want allowed without a limit", n, d)
			}
		}
		if l.Len() != 0 {
			t.Fatalf("NewLocal(%d) tracks %d keys, want none", n, l.Len())
		}
	}
}

func TestLocalForgetsIdleKeys(t *testing.T) {
	c := newClock()
	l := limits.NewLocal(2, limits.WithNow(c.Now))
	for i := range 50 {
		allow(t, l, fmt.Sprint("old-", i))
	}
	c.Advance(30 * time.Second)
	for i := range 10 {
		allow(t, l, fmt.Sprint("old-", i))
	}
	if l.Len() != 50 {
		t.Fatalf("%d keys tracked, want 50", l.Len())
	}
	c.Advance(31 * time.Second) // 61 s since 40 of the keys were used
	allow(t, l, "new")
	if l.Len() != 11 {
		t.Fatalf("%d keys tracked after a minute, want the 10 used since and the new one", l.Len())
	}
	// A forgotten key had a full bucket: it gets its whole burst again.
	burst(t, l, "old-49", 2)
}

func TestLocalMaxKeys(t *testing.T) {
	c := newClock()
	l := limits.NewLocal(5, limits.WithNow(c.Now), limits.WithMaxKeys(100))
	burst(t, l, "hot", 5)
	for i := range 99 {
		allow(t, l, fmt.Sprint("addr:", i))
	}
	if d := allow(t, l, "hot"); d.Allowed {
		t.Fatalf("hot key forgotten while within the bound: %+v", d)
	}
	for i := range 10_000 {
		c.Advance(time.Millisecond)
		allow(t, l, fmt.Sprint("flood:", i))
		if l.Len() > 100 {
			t.Fatalf("%d keys tracked, want at most 100", l.Len())
		}
	}
	// Past the bound the least recently used key was forgotten: it starts
	// afresh, the price of bounded memory.
	burst(t, l, "hot", 5)
}

func TestLocalConcurrent(t *testing.T) {
	c := newClock() // stopped: no refill, so exactly the burst is allowed
	l := limits.NewLocal(20, limits.WithNow(c.Now), limits.WithMaxKeys(1000))
	const keys, workers, calls = 16, 8, 400
	var mu sync.Mutex
	allowed := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				key := fmt.Sprint("k", (w+i)%keys)
				d, err := l.Allow(context.Background(), key)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed[key]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for i := range keys {
		if n := allowed[fmt.Sprint("k", i)]; n != 20 {
			t.Errorf("key k%d: %d allowed, want 20", i, n)
		}
	}
}
