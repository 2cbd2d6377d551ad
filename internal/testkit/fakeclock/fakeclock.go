// Package fakeclock is a clock for tests that moves only when told to.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a fixed time that a test moves by hand. It is safe for
// concurrent use; its Now fits wherever a func() time.Time is asked for.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
