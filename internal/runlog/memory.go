package runlog

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of MemoryOptions.
const (
	DefaultRetention  = 5 * time.Minute
	DefaultMaxEntries = 100_000
	DefaultMaxBytes   = 16 << 20
	// DefaultMaxRetained bounds the bytes of the ended runs kept for their
	// retention, all runs together.
	DefaultMaxRetained = 64 << 20
)

// A follower on another instance announces itself every readerBeat while it
// reads, and is no longer counted by Readers once its last announcement is
// readerStale old (it went away without saying so).
const (
	readerBeat  = 5 * time.Second
	readerStale = 3 * readerBeat
)

// MemoryOptions configures a Memory log.
type MemoryOptions struct {
	// Retention is how long a run's log is kept after End;
	// DefaultRetention when zero.
	Retention time.Duration
	// MaxEntries bounds the entries of one run: Append fails with
	// ErrTooLong past it. DefaultMaxEntries when zero.
	MaxEntries int
	// MaxBytes bounds the total size of one run's entries: Append fails
	// with ErrTooLong past it. DefaultMaxBytes when zero.
	MaxBytes int
	// MaxRetained bounds the bytes of the ended runs kept, all together:
	// past it the runs that ended first are forgotten before their
	// retention is over, so that a busy instance's memory stays bounded.
	// DefaultMaxRetained when zero.
	MaxRetained int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Memory keeps the logs of this process's runs. Followers are woken by
// Append and End, without polling. A run is forgotten Retention after it
// ended (on a later call, no goroutine), and each run holds at most
// MaxEntries entries of MaxBytes in all, so the memory held is bounded by
// the runs in progress and those that ended within the retention. A run that
// is never ended is never forgotten. It is safe for concurrent use.
type Memory struct {
	retention   time.Duration
	maxEntries  int
	maxBytes    int
	maxRetained int
	now         func() time.Time
	// retained is the bytes of the ended runs still kept.
	retained int

	mu    sync.Mutex
	runs  map[string]*run
	ended []endedRun // in the order the runs ended, for the sweep
}

var _ Log = (*Memory)(nil)

// endedRun is when a run ended, and its size.
type endedRun struct {
	id   string
	at   time.Time
	size int
}

// run is one run's log.
type run struct {
	meta      Meta
	cancelled context.Context // done once cancelled
	cancel    context.CancelFunc
	readers   atomic.Int64 // Follow calls on this instance

	mu      sync.Mutex
	entries []stored // entries[i] has Seq i+1; elements are never modified
	// Once the values are dropped, the entries are packed: entry i's data
	// is packed[ends[i-1]:ends[i]], and entries is nil.
	packed  []byte
	ends    []int
	size    int // bytes of data in the entries
	ended   bool
	endedAt time.Time
	wake    chan struct{}        // closed and replaced by each Append and by End
	remote  map[string]time.Time // followers on other instances: last announcement
	// live counts the followers on this instance that began before End
	// and still read: the values stay until the last of them stops.
	live int
}

// stored is an entry of a run, as Append was given it.
type stored struct {
	data  []byte
	value any
}

// view is a run's entries as they were at one moment: what was appended
// since is not in it. Neither the entries nor the packed ones are ever
// modified, so a view is read without the run's lock.
type view struct {
	entries []stored
	packed  []byte
	ends    []int
}

// view returns the run's entries now. r.mu is held.
func (r *run) view() view { return view{r.entries, r.packed, r.ends} }

func (v view) len() int { return len(v.entries) + len(v.ends) }

// at returns entry i's data and value (Seq i+1).
func (v view) at(i int) ([]byte, any) {
	if v.entries != nil {
		return v.entries[i].data, v.entries[i].value
	}
	start := 0
	if i > 0 {
		start = v.ends[i-1]
	}
	return v.packed[start:v.ends[i]:v.ends[i]], nil
}

// NewMemory returns an empty log.
func NewMemory(opts MemoryOptions) *Memory {
	m := &Memory{
		retention:   opts.Retention,
		maxEntries:  opts.MaxEntries,
		maxBytes:    opts.MaxBytes,
		maxRetained: opts.MaxRetained,
		now:         opts.Now,
		runs:        make(map[string]*run),
	}
	if m.retention <= 0 {
		m.retention = DefaultRetention
	}
	if m.maxEntries <= 0 {
		m.maxEntries = DefaultMaxEntries
	}
	if m.maxBytes <= 0 {
		m.maxBytes = DefaultMaxBytes
	}
	if m.maxRetained <= 0 {
		m.maxRetained = DefaultMaxRetained
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Start registers a new run. Its Started time is now when zero. It fails
// when the RunID is empty or in use.
func (m *Memory) Start(_ context.Context, meta Meta) (Writer, error) {
	r, err := m.start(meta)
	if err != nil {
		return nil, err
	}
	return &memWriter{m: m, r: r}, nil
}

func (m *Memory) start(meta Meta) (*run, error) {
	if meta.RunID == "" {
		return nil, errors.New("runlog: a run needs an id")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep()
	if _, ok := m.runs[meta.RunID]; ok {
		return nil, errors.New("runlog: run " + meta.RunID + " already exists")
	}
	if meta.Started.IsZero() {
		meta.Started = m.now()
	}
	r := &run{meta: meta, wake: make(chan struct{})}
	r.cancelled, r.cancel = context.WithCancel(context.Background())
	m.runs[meta.RunID] = r
	return r, nil
}

// lookup returns a run that is known and not expired.
func (m *Memory) lookup(runID string) (*run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep()
	r, ok := m.runs[runID]
	if !ok {
		return nil, ErrNotFound
	}
	return r, nil
}

// sweep forgets the runs whose retention is over, and the oldest ended
// runs while those kept are over MaxRetained. m.mu is held.
func (m *Memory) sweep() {
	now := m.now()
	i := 0
	for ; i < len(m.ended) && (!now.Before(m.ended[i].at.Add(m.retention)) || m.retained > m.maxRetained); i++ {
		delete(m.runs, m.ended[i].id)
		m.retained -= m.ended[i].size
		m.ended[i] = endedRun{}
	}
	m.ended = m.ended[i:] // append drops the head when it grows the array

}

// keeps reports whether r is still one of the log's runs: not forgotten
// after its retention, nor for MaxRetained.
func (m *Memory) keeps(r *run) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep()
	return m.runs[r.meta.RunID] == r
}

// Stats is what a Memory keeps at one moment.
type Stats struct {
	// Running is the runs not yet ended, Ended those kept for their
	// retention after the end.
	Running, Ended int
	// EndedBytes is the bytes of the ended runs' entries, which
	// MaxRetained bounds.
	EndedBytes int
}

// Stats returns what the log keeps now, after forgetting the runs whose
// retention is over.
func (m *Memory) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep()
	return Stats{Running: len(m.runs) - len(m.ended), Ended: len(m.ended), EndedBytes: m.retained}
}

// Meta returns a run's metadata.
func (m *Memory) Meta(_ context.Context, runID string) (Meta, error) {
	r, err := m.lookup(runID)
	if err != nil {
		return Meta{}, err
	}
	return r.meta, nil
}

// Follow yields the run's entries after after, then the new ones as they are
// appended, until the run ends or ctx does.
func (m *Memory) Follow(ctx context.Context, runID string, after int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		r, err := m.lookup(runID)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		r.follow(ctx, after, yield)
	}
}

// follow yields r's entries after after until r ends or ctx does.
func (r *run) follow(ctx context.Context, after int64, yield func(Entry, error) bool) {
	r.readers.Add(1)
	defer r.readers.Add(-1)
	r.mu.Lock()
	live := !r.ended
	if live {
		r.live++
	}
	r.mu.Unlock()
	if live {
		defer func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.live--; r.live == 0 && r.ended {
				r.dropValues()
			}
		}()
	}
	next := max(after, 0) // the Seq of the last entry yielded
	for {
		r.mu.Lock()
		v := r.view()
		ended, wake := r.ended, r.wake
		r.mu.Unlock()
		n := int64(v.len())
		pending := next < n // entries to yield before looking again
		for ; next < n; next++ {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, err)
				return
			}
			data, value := v.at(int(next))
			if !yield(Entry{Seq: next + 1, Data: data, Value: value, More: next < n-1}, nil) {
				return
			}
		}
		if pending {
			continue
		}
		if ended {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			yield(Entry{}, ctx.Err())
			return
		}
	}
}

// Cancel ends the run's Cancelled context.
func (m *Memory) Cancel(_ context.Context, runID string) error {
	r, err := m.lookup(runID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended {
		r.cancel() // once is enough; again does nothing
	}
	return nil
}

// Close does nothing: a Memory holds no goroutine.
func (m *Memory) Close() error { return nil }

// remoteReader records that follower id on another instance reads runID,
// or that it stopped.
func (m *Memory) remoteReader(runID, id string, reading bool) {
	r, err := m.lookup(runID)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reading {
		delete(r.remote, id)
		return
	}
	if r.remote == nil {
		r.remote = make(map[string]time.Time)
	}
	r.remote[id] = m.now()
}

// memWriter writes a run of a Memory.
type memWriter struct {
	m *Memory
	r *run
}

var _ Writer = (*memWriter)(nil)

// Append adds a copy of data, and value, to the log and wakes the
// followers.
func (w *memWriter) Append(_ context.Context, data []byte, value any) (int64, error) {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return 0, ErrEnded
	}
	if len(r.entries) >= w.m.maxEntries || r.size+len(data) > w.m.maxBytes {
		return 0, ErrTooLong
	}
	r.entries = append(r.entries, stored{append([]byte(nil), data...), value})
	r.size += len(data)
	close(r.wake)
	r.wake = make(chan struct{})
	return int64(len(r.entries)), nil
}

// End marks the run over and wakes the followers; the retention starts.
func (w *memWriter) End(context.Context) error {
	m, r := w.m, w.r
	m.mu.Lock()
	defer m.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	r.ended, r.endedAt = true, m.now()
	if r.live == 0 {
		r.dropValues()
	}
	close(r.wake)
	r.wake = make(chan struct{})
	m.ended = append(m.ended, endedRun{id: r.meta.RunID, at: r.endedAt, size: r.size})
	m.retained += r.size
	m.sweep()
	return nil
}

// dropValues lets the values go, once the run ended and no follower that
// began before its end still reads: what a run keeps for its retention is
// bounded by its bytes, and those who follow it from then on decode them.
// (A follower that falls behind a run, as a stream does when the model is
// faster than its client, reads the run's last entries after the end:
// keeping the values for it spares decoding them.) It runs once: at End
// when no such follower reads, else when the last of them stops (followers
// that begin after End do not count). A new slice, as followers may be
// reading the old one, values and all. r.mu is held.
//
// The data go into one array too, with their ends in another: neither
// holds a pointer, so the garbage collector neither marks the entries
// one by one nor scans them, and they take about their bytes. Kept
// entry by entry, the runs a busy instance retains took twice their
// bytes of heap, and the collector went through each of their entries
// in every cycle.
func (r *run) dropValues() {
	packed := make([]byte, 0, r.size)
	ends := make([]int, len(r.entries))
	for i, e := range r.entries {
		packed = append(packed, e.data...)
		ends[i] = len(packed)
	}
	r.entries, r.packed, r.ends = nil, packed, ends
}

// Cancelled is done once Cancel was called.
func (w *memWriter) Cancelled() context.Context { return w.r.cancelled }

// Readers counts the Follow calls reading the run on this instance, and
// those on other instances that announced themselves within readerStale.
func (w *memWriter) Readers() int {
	r := w.r
	n := int(r.readers.Load())
	now := w.m.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, seen := range r.remote {
		if now.Sub(seen) >= readerStale {
			delete(r.remote, id)
			continue
		}
		n++
	}
	return n
}
