package model

import (
	"fmt"
	"time"
)

// ErrorKind classifies a model failure by what the caller should do about it.
type ErrorKind int

// Error kinds.
const (
	// KindUpstream: the provider answered with an error or a broken stream.
	KindUpstream ErrorKind = iota + 1
	// KindUnavailable: the provider is overloaded or rate-limits us.
	KindUnavailable
	// KindTimeout: the provider did not answer in time.
	KindTimeout
	// KindRejected: the provider refused the request itself (bad key, bad model).
	KindRejected
)

func (k ErrorKind) String() string {
	switch k {
	case KindUpstream:
		return "upstream"
	case KindUnavailable:
		return "unavailable"
	case KindTimeout:
		return "timeout"
	case KindRejected:
		return "rejected"
	}
	return "unknown"
}

// Error is a model failure. Message is safe to show to a client: it names the
// provider and the cause and never holds a secret.
type Error struct {
	Kind     ErrorKind
	Provider string
	Message  string
	// Status is the upstream HTTP status, 0 when there was none.
	Status int
	// RetryAfter is what the provider asked us to wait, 0 when it did not.
	RetryAfter time.Duration
	// Temporary marks a failure that the same request may not meet again
	// (rate limits, overload, 5xx, connection failures): it may be retried
	// while nothing of the answer has been used yet.
	Temporary bool
	// Err is the underlying cause, for logs.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Provider, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Provider, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }
