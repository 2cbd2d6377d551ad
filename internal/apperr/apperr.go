// Package apperr is the service's one error type: a code from a small closed
// set, a message a client can act on, and the cause for the log. The HTTP
// layer maps codes to statuses in one function.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Code says who is at fault and what the caller can do.
type Code string

// The codes.
const (
	Invalid          Code = "invalid"            // the request is wrong
	Unauthenticated  Code = "unauthenticated"    // no valid credential came with it
	UnsupportedMedia Code = "unsupported_media"  // the body is not of a type the route takes
	SlowRequest      Code = "slow_request"       // the body did not arrive in time
	TooLarge         Code = "too_large"          // the request is too big
	HeadersTooLarge  Code = "headers_too_large"  // the request's headers are too big
	NotFound         Code = "not_found"          // what it names does not exist
	MethodNotAllowed Code = "method_not_allowed" // the route exists, the method does not
	Forbidden        Code = "forbidden"          // it belongs to someone else
	Conflict         Code = "conflict"           // it clashes with the current state
	RateLimited      Code = "rate_limited"       // too many requests
	Upstream         Code = "upstream"           // a dependency answered wrongly
	Unavailable      Code = "unavailable"        // a dependency or the service is overloaded
	Timeout          Code = "timeout"            // a dependency did not answer in time
	Internal         Code = "internal"           // a bug or an unexpected failure
)

// Error is an error with a code and a client-safe message.
type Error struct {
	Code    Code
	Message string
	// Err is the cause; it is logged, never sent to a client.
	Err error
	// RetryAfter, when positive, tells the client when to try again (a
	// Retry-After header over HTTP).
	RetryAfter time.Duration
	// Expected marks a failure that is part of normal operation (a
	// service that is draining answering 503 to its readiness probe): it is
	// logged as information, not as an error.
	Expected bool
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code c and a formatted message.
func New(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code c, a message, and cause err.
func Wrap(c Code, err error, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...), Err: err}
}

// After returns e with RetryAfter set to d.
func (e *Error) After(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// AsExpected returns e marked as part of normal operation (see Expected).
func (e *Error) AsExpected() *Error {
	e.Expected = true
	return e
}

// CodeOf is err's code: Internal unless err is or wraps an *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}
