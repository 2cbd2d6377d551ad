package memory

import (
	"errors"
	"testing"
	"time"
)

func TestWriteHealth(t *testing.T) {
	now := time.Date(2026, 5, 2, 12, 0, 0, 0, time.UTC)
	h := &WriteHealth{now: func() time.Time { return now }}
	if err := h.Err(); err != nil {
		t.Fatalf("a store that never failed: %v", err)
	}
	h.Failed(errors.New("a write the store refused"))
	if err := h.Err(); err != nil {
		t.Fatalf("a refused write is not the store's health: %v", err)
	}
	full := &WriteError{Reason: "the disk is full", Err: errors.New("SQLITE_FULL")}
	h.Failed(full)
	if err := h.Err(); !errors.Is(err, full) {
		t.Fatalf("after a failed write: %v", err)
	}
	now = now.Add(WriteHold - time.Millisecond)
	if err := h.Err(); !errors.Is(err, full) {
		t.Fatalf("within the hold: %v", err)
	}
	h.Succeeded()
	if err := h.Err(); err != nil {
		t.Fatalf("after a write that succeeded: %v", err)
	}
	h.Failed(full)
	now = now.Add(WriteHold)
	if err := h.Err(); err != nil {
		t.Fatalf("after the hold: %v", err)
	}
}
