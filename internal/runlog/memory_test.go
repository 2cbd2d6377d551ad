package runlog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/testkit/fakeclock"
)

func TestMemory(t *testing.T) {
	testLog(t, func(t *testing.T) (runlog.Log, runlog.Log) {
		m := runlog.NewMemory(runlog.MemoryOptions{})
		t.Cleanup(func() { m.Close() })
		return m, m
	})
}

// newClock is a fake clock at a fixed time.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) }

func TestMemoryRetention(t *testing.T) {
	c := newClock()
	m := runlog.NewMemory(runlog.MemoryOptions{Retention: time.Minute, Now: c.Now})
	ctx := ctxFor(t)
	wr := start(t, m, "run-1")
	appendN(t, wr, 1, 3)
	long := start(t, m, "run-long") // never ended while the test runs
	c.Advance(time.Hour)
	end(t, wr)

	c.Advance(time.Minute - time.Nanosecond)
	if _, err := m.Meta(ctx, "run-1"); err != nil {
		t.Fatalf("Meta just before the retention is over: %v", err)
	}
	got, err := collect(ctx, m, "run-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 1, 3)

	c.Advance(time.Nanosecond)
	if _, err := m.Meta(ctx, "run-1"); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Meta once the retention is over: %v, want ErrNotFound", err)
	}
	if got, err := collect(ctx, m, "run-1", 0); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Follow once the retention is over: %s, %v, want ErrNotFound", seqs(got), err)
	}
	if err := m.Cancel(ctx, "run-1"); !errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Cancel once the retention is over: %v, want ErrNotFound", err)
	}
	if _, err := m.Meta(ctx, "run-long"); err != nil {
		t.Fatalf("a run in progress for an hour: %v", err)
	}
	// Its RunID may be used again.
	wr = start(t, m, "run-1")
	end(t, wr)
	end(t, long)
}

func TestMemoryBounds(t *testing.T) {
	m := runlog.NewMemory(runlog.MemoryOptions{MaxEntries: 3, MaxBytes: 21})
	ctx := ctxFor(t)
	wr := start(t, m, "run-1")
	appendN(t, wr, 1, 3)
	if seq, err := wr.Append(ctx, event(4), nil); !errors.Is(err, runlog.ErrTooLong) {
		t.Fatalf("a 4th Append with MaxEntries 3: %d, %v; want ErrTooLong", seq, err)
	}
	end(t, wr)
	got, err := collect(ctx, m, "run-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 0, 3)

	wr = start(t, m, "run-2")
	if _, err := wr.Append(ctx, []byte(strings.Repeat("x", 15)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wr.Append(ctx, []byte("1234567"), nil); !errors.Is(err, runlog.ErrTooLong) {
		t.Fatalf("an Append past MaxBytes: %v, want ErrTooLong", err)
	}
	if seq, err := wr.Append(ctx, []byte("123456"), nil); err != nil || seq != 2 {
		t.Fatalf("an Append up to MaxBytes: %d, %v", seq, err)
	}
	end(t, wr)
}

func TestMemoryAppendCopies(t *testing.T) {
	m := runlog.NewMemory(runlog.MemoryOptions{})
	wr := start(t, m, "run-1")
	buf := []byte("first")
	if _, err := wr.Append(ctxFor(t), buf, nil); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	end(t, wr)
	got, err := collect(ctxFor(t), m, "run-1", 0)
	if err != nil || len(got) != 1 || string(got[0].Data) != "first" {
		t.Fatalf("after the caller reused its buffer: %+v, %v", got, err)
	}
}

func TestMemoryStartsNow(t *testing.T) {
	c := newClock()
	m := runlog.NewMemory(runlog.MemoryOptions{Now: c.Now})
	if _, err := m.Start(ctxFor(t), runlog.Meta{}); err == nil {
		t.Fatal("Start without a RunID succeeded")
	}
	if _, err := m.Start(ctxFor(t), runlog.Meta{RunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Meta(ctxFor(t), "run-1"); err != nil || !got.Started.Equal(c.Now()) {
		t.Fatalf("Meta: %+v, %v; want Started now", got, err)
	}
}

// TestMemoryMaxRetained: past MaxRetained bytes of ended runs, the runs that
// ended first are forgotten before their retention is over; runs in
// progress never are.
func TestMemoryMaxRetained(t *testing.T) {
	m := runlog.NewMemory(runlog.MemoryOptions{Retention: time.Hour, MaxRetained: 100})
	ctx := ctxFor(t)
	live := start(t, m, "live")
	if _, err := live.Append(ctx, make([]byte, 500), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		w := start(t, m, fmt.Sprint("run-", i))
		if _, err := w.Append(ctx, make([]byte, 40), nil); err != nil {
			t.Fatal(err)
		}
		end(t, w)
	}
	// 200 bytes ended; at most 100 kept: the last two runs.
	for i := range 5 {
		_, err := m.Meta(ctx, fmt.Sprint("run-", i))
		if kept := err == nil; kept != (i >= 3) {
			t.Errorf("run-%d kept: %v (%v)", i, kept, err)
		}
	}
	if _, err := m.Meta(ctx, "live"); err != nil {
		t.Fatalf("a run in progress was forgotten: %v", err)
	}
	end(t, live)
}

// TestMemoryStats: Stats counts the runs in progress and those kept after
// their end, with the ended runs' bytes, and forgets what is past its
// retention or past MaxRetained.
func TestMemoryStats(t *testing.T) {
	c := newClock()
	m := runlog.NewMemory(runlog.MemoryOptions{Retention: time.Minute, MaxRetained: 100, Now: c.Now})
	ctx := ctxFor(t)
	check := func(want runlog.Stats) {
		t.Helper()
		if got := m.Stats(); got != want {
			t.Fatalf("Stats() = %+v, want %+v", got, want)
		}
	}
	check(runlog.Stats{})
	live := start(t, m, "live")
	if _, err := live.Append(ctx, make([]byte, 500), nil); err != nil {
		t.Fatal(err)
	}
	check(runlog.Stats{Running: 1})
	for i := range 3 {
		w := start(t, m, fmt.Sprint("run-", i))
		if _, err := w.Append(ctx, make([]byte, 40), nil); err != nil {
			t.Fatal(err)
		}
		end(t, w)
		c.Advance(time.Second)
	}
	// 120 bytes ended, over the 100 kept: the first run is forgotten.
	check(runlog.Stats{Running: 1, Ended: 2, EndedBytes: 80})
	c.Advance(time.Minute - 2*time.Second) // the second run's retention is over
	check(runlog.Stats{Running: 1, Ended: 1, EndedBytes: 40})
	// A run of more than MaxRetained is not kept past its end, nor are
	// those that ended before it.
	end(t, live)
	check(runlog.Stats{})
}
