// Package limits holds what bounds the use of the service: the daily token
// and cost quotas of a resource and the size of a thread (quota.go), and the
// request rate limits.
//
// The rate limiters admit or refuse requests by key, N per minute: in this
// process (Local), shared by every instance through Redis (Redis), or through
// Redis with this process's limits standing in while Redis is unreachable
// (Fallback).
//
// Every limiter has the same semantics: a token bucket of N tokens that
// refills at N per minute. A fresh key may make N requests at once, then one
// more every 60/N seconds; a key left alone for a minute is fresh again. A
// limit of zero or less means no limit: every request is allowed, and
// Decision.Limit is 0.
package limits

import (
	"context"
	"time"
)

// Decision is the outcome of one request's check.
type Decision struct {
	Allowed bool
	// Limit is the number of requests per minute, 0 when there is no limit.
	Limit int
	// Remaining is how many more requests the key could make at once now;
	// a best effort, 0 when refused or unlimited.
	Remaining int
	// RetryAfter, when not allowed, is how long until one more request
	// would be allowed: more than zero, rounded up to a millisecond.
	// It is zero when allowed.
	RetryAfter time.Duration
}

// Limiter admits requests per key ("resource:user-1", "addr:203.0.113.7").
// Keys are opaque strings.
type Limiter interface {
	Allow(ctx context.Context, key string) (Decision, error)
}

// refused is the decision for a request refused for wait, with wait rounded
// up to a whole millisecond so that waiting RetryAfter is always enough and
// never zero.
func refused(perMinute int, wait time.Duration) Decision {
	if wait < time.Millisecond {
		wait = time.Millisecond
	}
	if r := wait % time.Millisecond; r != 0 {
		wait += time.Millisecond - r
	}
	return Decision{Limit: perMinute, RetryAfter: wait}
}
