package memory

import (
	"errors"
	"sync"
	"time"
)

// WriteError is a store that cannot write: the disk is full, the database
// is read-only or locked by someone else. Reason says which, in words a
// client may see (a readiness probe's answer); Err is the cause, for the
// log.
type WriteError struct {
	Reason string
	Err    error
}

func (e *WriteError) Error() string {
	return "the store cannot write: " + e.Reason + ": " + e.Err.Error()
}
func (e *WriteError) Unwrap() error { return e.Err }

// WriteHealth remembers a store's last failed write, so that its Ping
// reports a store that cannot write even when the small write Ping tries
// itself still goes through (a nearly full disk). The zero value is
// ready to use and safe for concurrent use.
type WriteHealth struct {
	mu     sync.Mutex
	failed *WriteError
	at     time.Time
	// now is the clock; nil is time.Now (tests set it).
	now func() time.Time
}

func (h *WriteHealth) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// WriteHold is how long a failed write keeps a store reported as unable
// to write, unless a later write succeeds: a store that is not sent turns
// (it is not ready) has only Ping's own writes to show that it recovered.
const WriteHold = 5 * time.Second

// Failed records that a write failed for the reason err gives, when err
// is a *WriteError; other failures (a write the store refused) are not
// the store's health.
func (h *WriteHealth) Failed(err error) {
	var we *WriteError
	if !errors.As(err, &we) {
		return
	}
	h.mu.Lock()
	h.failed, h.at = we, h.clock()
	h.mu.Unlock()
}

// Succeeded records a write that went through.
func (h *WriteHealth) Succeeded() {
	h.mu.Lock()
	h.failed = nil
	h.mu.Unlock()
}

// Err is the last failed write's error if none succeeded since and it
// failed less than WriteHold ago, else nil.
func (h *WriteHealth) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil || h.clock().Sub(h.at) >= WriteHold {
		return nil
	}
	return h.failed
}
