package limits

import (
	"container/list"
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxKeys is how many keys a Local limiter tracks at most unless
// WithMaxKeys says otherwise: about 50 MB with keys of 300 bytes.
const DefaultMaxKeys = 100_000

// idleAfter is how long a key must go unused before it is forgotten: a
// bucket left alone that long has refilled completely, so forgetting it
// changes no decision.
const idleAfter = time.Minute

// Local limits requests in this process: one token bucket
// (golang.org/x/time/rate) per key, holding perMinute tokens and refilling
// at perMinute per minute. Keys unused for a minute are forgotten (on the
// next call, no goroutine), and at most DefaultMaxKeys (WithMaxKeys) are
// tracked: past that, the least recently used key is forgotten early and
// starts afresh when it comes back. It is safe for concurrent use.
type Local struct {
	perMinute int
	perSecond rate.Limit // tokens added per second
	now       func() time.Time
	maxKeys   int

	mu   sync.Mutex
	keys map[string]*list.Element // of *bucket
	lru  list.List                // most recently used first
}

var _ Limiter = (*Local)(nil)

// bucket is one key's state.
type bucket struct {
	key  string
	lim  *rate.Limiter
	used time.Time
}

// LocalOption configures a Local limiter.
type LocalOption func(*Local)

// WithNow sets the clock a Local limiter reads; tests pass a fake one.
func WithNow(now func() time.Time) LocalOption {
	return func(l *Local) { l.now = now }
}

// WithMaxKeys sets how many keys a Local limiter tracks at most (at least 1).
func WithMaxKeys(n int) LocalOption {
	return func(l *Local) { l.maxKeys = max(n, 1) }
}

// NewLocal returns a limiter of perMinute requests per minute per key, with
// a burst of perMinute. perMinute <= 0 means no limit.
func NewLocal(perMinute int, opts ...LocalOption) *Local {
	perMinute = max(perMinute, 0)
	l := &Local{
		perMinute: perMinute,
		perSecond: rate.Limit(float64(perMinute) / 60),
		now:       time.Now,
		maxKeys:   DefaultMaxKeys,
		keys:      make(map[string]*list.Element),
	}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Allow takes one token from key's bucket if it has one. It never fails.
func (l *Local) Allow(_ context.Context, key string) (Decision, error) {
	if l.perMinute == 0 {
		return Decision{Allowed: true}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.bucket(key, now)
	if b.lim.AllowN(now, 1) {
		return Decision{Allowed: true, Limit: l.perMinute, Remaining: int(b.lim.TokensAt(now))}, nil
	}
	missing := 1 - b.lim.TokensAt(now)
	wait := time.Duration(math.Ceil(missing / float64(l.perSecond) * float64(time.Second)))
	return refused(l.perMinute, wait), nil
}

// Len is the number of keys tracked, for metrics and tests.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// bucket returns key's bucket, creating it when it is new, after forgetting
// the keys unused for idleAfter (key too: its bucket would be full) and, for
// a new key when the limiter is full, the least recently used one. The list
// is in order of use, so this only looks at the keys it forgets and one
// more. It requires l.mu.
func (l *Local) bucket(key string, now time.Time) *bucket {
	for e := l.lru.Back(); e != nil; e = l.lru.Back() {
		b := e.Value.(*bucket)
		if now.Sub(b.used) < idleAfter {
			break
		}
		l.forget(e)
	}
	if e, ok := l.keys[key]; ok {
		b := e.Value.(*bucket)
		b.used = now
		l.lru.MoveToFront(e)
		return b
	}
	for len(l.keys) >= l.maxKeys {
		l.forget(l.lru.Back())
	}
	b := &bucket{key: key, lim: rate.NewLimiter(l.perSecond, l.perMinute), used: now}
	l.keys[key] = l.lru.PushFront(b)
	return b
}

// forget drops the bucket at e. It requires l.mu.
func (l *Local) forget(e *list.Element) {
	delete(l.keys, e.Value.(*bucket).key)
	l.lru.Remove(e)
}
