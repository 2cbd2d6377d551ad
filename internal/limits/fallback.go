package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of FallbackOptions.
const (
	DefaultTimeout = 100 * time.Millisecond
	DefaultBackoff = 5 * time.Second
)

// FallbackOptions configures a Fallback limiter.
type FallbackOptions struct {
	// Timeout bounds each call to Redis, through its context (the primary
	// must honour context deadlines); DefaultTimeout when zero.
	Timeout time.Duration
	// Backoff is how long Redis is left alone after it failed before one
	// request tries it again; DefaultBackoff when zero.
	Backoff time.Duration
	// OnChange, when set, is called once per change of state: with false
	// and the error when Redis fails while it was up, with true and nil
	// when it answers again. It is called synchronously by the request that
	// saw the change, with changes held until it returns, so it should be
	// quick (a log line, a gauge) and must not call Allow.
	OnChange func(up bool, err error)
	// Now is the clock for the back-off; time.Now when nil.
	Now func() time.Time
}

// Fallback limits through Redis, and through this process's Local limiter
// while Redis is unreachable, so that a failing Redis costs at most Timeout
// once per Backoff and never an error. While it falls back, each instance
// admits its own N per minute per key.
type Fallback struct {
	primary *Redis
	local   *Local
	timeout time.Duration
	backoff time.Duration
	notify  func(up bool, err error)
	now     func() time.Time

	up      atomic.Bool
	mu      sync.Mutex
	retryAt time.Time // while down: when to try Redis again
}

var _ Limiter = (*Fallback)(nil)

// NewFallback returns a limiter that asks primary, and local while primary
// fails. Redis is taken to be up until a call fails.
func NewFallback(primary *Redis, local *Local, opts FallbackOptions) *Fallback {
	f := &Fallback{
		primary: primary,
		local:   local,
		timeout: opts.Timeout,
		backoff: opts.Backoff,
		notify:  opts.OnChange,
		now:     opts.Now,
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.backoff <= 0 {
		f.backoff = DefaultBackoff
	}
	if f.notify == nil {
		f.notify = func(bool, error) {}
	}
	if f.now == nil {
		f.now = time.Now
	}
	f.up.Store(true)
	return f
}

// Up reports whether Redis answered the last time it was asked.
func (f *Fallback) Up() bool { return f.up.Load() }

// Allow asks Redis, or the Local limiter when Redis fails or is backed off
// from. It fails only when ctx has ended.
func (f *Fallback) Allow(ctx context.Context, key string) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	if !f.ask() {
		return f.local.Allow(ctx, key)
	}
	d, err := f.call(ctx, key)
	if err == nil {
		f.set(true, nil)
		return d, nil
	}
	if ctx.Err() != nil {
		return Decision{}, ctx.Err() // the caller gave up, Redis did not fail
	}
	f.set(false, err)
	return f.local.Allow(ctx, key)
}

// ask reports whether to ask Redis: always while it is up; while it is
// down, only the first request after the back-off, which starts another
// back-off, so that a Redis still down is tried once per Backoff.
func (f *Fallback) ask() bool {
	if f.up.Load() {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.up.Load() {
		return true
	}
	now := f.now()
	if now.Before(f.retryAt) {
		return false
	}
	f.retryAt = now.Add(f.backoff)
	return true
}

// set records what Redis did, and reports a change.
func (f *Fallback) set(up bool, err error) {
	if f.up.Load() == up && up {
		return // the common case, without the lock
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !up {
		f.retryAt = f.now().Add(f.backoff)
	}
	if f.up.Load() == up {
		return
	}
	f.up.Store(up)
	f.notify(up, err)
}

// call asks Redis, giving up after the timeout. The client must honour
// context deadlines, as one with ParseRedisURL's options does; a goroutine
// per call to enforce it would cost every request.
func (f *Fallback) call(ctx context.Context, key string) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	d, err := f.primary.Allow(ctx, key)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return Decision{}, fmt.Errorf("redis rate limit: no answer within %v: %w", f.timeout, err)
	}
	return d, err
}
