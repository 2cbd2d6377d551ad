package runlog

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"testing"
)

// TestMemoryPacksEndedRuns: once a run has ended and no follower that
// began before its end reads it, its entries' data are packed into one
// array, values dropped, and followers read the same entries as before.
func TestMemoryPacksEndedRuns(t *testing.T) {
	ctx := context.Background()
	data := func(i int) []byte { return fmt.Appendf(nil, `{"n":%d,"text":"%s"}`, i, string(make([]byte, i%7))) }
	collect := func(m *Memory, id string, after int64) (got [][]byte, values int) {
		for e, err := range m.Follow(ctx, id, after) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Data)
			if e.Value != nil {
				values++
			}
		}
		return got, values
	}
	for _, followed := range []bool{false, true} {
		t.Run(fmt.Sprint("followed=", followed), func(t *testing.T) {
			m := NewMemory(MemoryOptions{})
			w, err := m.Start(ctx, Meta{RunID: "run"})
			if err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for i := range 50 {
				want = append(want, data(i))
				if _, err := w.Append(ctx, data(i), i); err != nil {
					t.Fatal(err)
				}
			}
			r, _ := m.lookup("run")
			// A follower that began before the end keeps the values
			// until it stops.
			var next func() (Entry, error, bool)
			var stop func()
			if followed {
				next, stop = iter.Pull2(m.Follow(ctx, "run", 0))
				if e, err, ok := next(); !ok || err != nil || e.Value != 0 {
					t.Fatalf("the first entry: %+v, %v", e, err)
				}
			}
			if err := w.End(ctx); err != nil {
				t.Fatal(err)
			}
			if followed {
				if r.mu.Lock(); r.entries == nil {
					t.Error("the entries were packed while a follower from before the end read them")
				}
				r.mu.Unlock()
				stop()
			}
			r.mu.Lock()
			if r.entries != nil || len(r.packed) != r.size || len(r.ends) != 50 {
				t.Errorf("after the end: %d entries kept one by one, %d bytes packed of %d, %d ends", len(r.entries), len(r.packed), r.size, len(r.ends))
			}
			r.mu.Unlock()
			for _, after := range []int64{0, 1, 49, 50} {
				got, values := collect(m, "run", after)
				if !slices.EqualFunc(got, want[after:], slices.Equal) || values != 0 {
					t.Errorf("after %d: %q (%d values), want %q", after, got, values, want[after:])
				}
			}
		})
	}
}

// BenchmarkRetained reports the heap that the runs a busy instance keeps
// after their end take, per byte of their entries (what MaxRetained
// counts): 20,000 runs of 70 entries of a streamed answer's size.
func BenchmarkRetained(b *testing.B) {
	data := []byte(`{"type":"text-delta","payload":{"id":"0123456789","text":" word"}}`)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := NewMemory(MemoryOptions{})
		for i := range 20_000 {
			w, err := m.Start(context.Background(), Meta{RunID: fmt.Sprint("run-", i)})
			if err != nil {
				b.Fatal(err)
			}
			for range 70 {
				if _, err := w.Append(context.Background(), data, &struct{ A, B string }{"x", "y"}); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.End(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		m.mu.Lock()
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(m.retained), "heap/retained-byte")
		b.ReportMetric(float64(after.HeapObjects-before.HeapObjects)/float64(len(m.runs)), "objects/run")
		m.mu.Unlock()
	}
}
