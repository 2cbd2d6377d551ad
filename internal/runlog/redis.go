package runlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Defaults of RedisOptions.
const (
	DefaultPrefix     = "companion:run:"
	DefaultMaxRunTime = time.Hour
	DefaultBlockTime  = time.Second
	DefaultTimeout    = time.Second
	DefaultBackoff    = time.Second
	DefaultLinger     = 100 * time.Millisecond
)

// One write to Redis carries at most writeEntries entries, and no more than
// writeBytes of data unless a single entry is larger. One read asks for at
// most readEntries.
const (
	writeEntries = 512
	writeBytes   = 1 << 20
	readEntries  = 512
)

// endID is the stream id of the entry that marks a run's end: greater than
// the id 0-<seq> of every event, so that a reader after any Seq gets it.
const endID = "1-0"

// RedisOptions configures a Redis log.
type RedisOptions struct {
	// Prefix starts every key and the control channel; DefaultPrefix when
	// empty.
	Prefix string
	// MaxRunTime is how long a run may go without a write before Redis
	// forgets it: its keys expire MaxRunTime + Retention after the run's
	// latest write, so the log of a run whose instance stopped is gone by
	// then. DefaultMaxRunTime when zero.
	MaxRunTime time.Duration
	// BlockTime is how long one read of a run held by another instance
	// waits for new entries before it looks again whether the run still
	// exists; Follow notices that its context ended within it.
	// DefaultBlockTime when zero, at most 5s.
	BlockTime time.Duration
	// Timeout bounds each write to Redis, with a client that respects
	// context deadlines (as limits.ParseRedisURL's options do), and how
	// long Start and End wait for theirs. DefaultTimeout when zero.
	Timeout time.Duration
	// Backoff is how long the writes to Redis pause after one failed,
	// before one of them tries again. DefaultBackoff when zero.
	Backoff time.Duration
	// Linger is how long a run's new entries wait to be written to Redis
	// with those that follow them, in one call: a model streams a token
	// every 10 to 50 ms, and a call a token made Redis's work grow with the
	// tokens (about 50 µs of Redis a call), not with the runs. Followers on
	// other instances see entries up to Linger late; Start's and End's
	// writes do not wait. DefaultLinger when zero, none when negative.
	Linger time.Duration
	// OnError, when set, is called with each failed call to Redis that
	// fails no caller: writes of a run's entries, which are tried again,
	// and announcements of readers. It is called from background
	// goroutines, concurrently, and should be quick (a log line, a
	// counter).
	OnError func(error)
	// OnChange, when set, is called when writes to Redis start failing
	// (up false, with the error) and when they succeed again (up true):
	// once for each change, for a log line.
	OnChange func(up bool, err error)
}

// Redis writes runs through to Redis, so that every instance sharing it can
// follow, resume and cancel them, and keeps them in a Memory, which serves
// this instance's readers and stands in while Redis fails.
//
// Append writes to the Memory and returns; a goroutine of the run writes the
// new entries to Redis in batches (one script call each, so that a retry
// never duplicates an entry and a Redis that lost them gets them again).
// While Redis fails, the runs wait: one write every Backoff tries Redis
// again, and once one succeeds the runs the Memory still keeps are written,
// one after another (a run it forgot, its retention over or past
// MaxRetained, is not). Start and End wait up to Timeout for
// their write, unless the last write failed, so that when they return
// another instance sees the run start or end.
//
// A run's keys share a hash tag, for Redis Cluster:
//
//	<prefix>{<run>}:events  a stream: each entry at id 0-<seq> with field d
//	                        (its data), then the end marker at id 1-0
//	<prefix>{<run>}:meta    a hash: run, thread, resource, started
//	                        (RFC 3339), last (the last Seq), end (once ended)
//
// Both expire MaxRunTime + Retention after each write, and Retention after
// the end. Cancel, and the followers on other instances that Readers counts,
// go through the Pub/Sub channel <prefix>control.
type Redis struct {
	client     redis.UniversalClient
	local      *Memory
	prefix     string
	maxRunTime time.Duration
	block      time.Duration
	timeout    time.Duration
	backoff    time.Duration
	linger     time.Duration
	onError    func(error)
	onChange   func(up bool, err error)

	healthy atomic.Bool // the latest write succeeded
	ctx     context.Context
	stop    context.CancelFunc
	pubsub  *redis.PubSub

	// parked are the writers whose write failed, and those with something
	// to write while Redis fails. One goroutine (retry) tries Redis again
	// every Backoff with one of them, and once that write succeeds writes
	// the others, one after another: a Redis that is down or full sees one
	// attempt per Backoff, not one per run, and a writer whose run the
	// Memory has forgotten (its retention over, or MaxRetained passed) is
	// dropped, so that an outage holds no more of the runs than the Memory
	// does.
	parkMu   sync.Mutex
	parked   map[*redisWriter]struct{}
	retrying bool // retry runs

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // the listener and the writers' goroutines
}

var _ Log = (*Redis)(nil)

// NewRedis returns a log of the runs in client's Redis, keeping this
// instance's runs in local as well (a new Memory when nil), with its
// retention and bounds. It subscribes to the control channel until Close.
// It never fails: when Redis is unreachable, the subscription is retried,
// and runs are kept in local until Redis answers.
func NewRedis(client redis.UniversalClient, local *Memory, opts RedisOptions) *Redis {
	if local == nil {
		local = NewMemory(MemoryOptions{})
	}
	r := &Redis{
		client:     client,
		local:      local,
		prefix:     opts.Prefix,
		maxRunTime: opts.MaxRunTime,
		block:      opts.BlockTime,
		timeout:    opts.Timeout,
		backoff:    opts.Backoff,
		linger:     opts.Linger,
		onError:    opts.OnError,
		onChange:   opts.OnChange,
	}
	if r.prefix == "" {
		r.prefix = DefaultPrefix
	}
	if r.maxRunTime <= 0 {
		r.maxRunTime = DefaultMaxRunTime
	}
	if r.block <= 0 {
		r.block = DefaultBlockTime
	}
	r.block = max(min(r.block, readerBeat), time.Millisecond)
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.backoff <= 0 {
		r.backoff = DefaultBackoff
	}
	if r.linger == 0 {
		r.linger = DefaultLinger
	}
	if r.onChange == nil {
		r.onChange = func(bool, error) {}
	}
	if r.onError == nil {
		r.onError = func(error) {}
	}
	r.healthy.Store(true)
	r.ctx, r.stop = context.WithCancel(context.Background())
	r.pubsub = client.Subscribe(r.ctx, r.channel())
	r.wg.Add(1)
	go r.listen(r.pubsub.Channel())
	return r
}

func (r *Redis) metaKey(runID string) string   { return r.prefix + "{" + runID + "}:meta" }
func (r *Redis) eventsKey(runID string) string { return r.prefix + "{" + runID + "}:events" }
func (r *Redis) channel() string               { return r.prefix + "control" }

// Control messages: "cancel:<run>", "reading:<reader>:<run>" (a follower on
// another instance reads the run, announced every readerBeat) and
// "left:<reader>:<run>" (it stopped).
const (
	msgCancel  = "cancel"
	msgReading = "reading"
	msgLeft    = "left"
)

// listen acts on the control messages for this instance's runs.
func (r *Redis) listen(messages <-chan *redis.Message) {
	defer r.wg.Done()
	for msg := range messages {
		kind, rest, _ := strings.Cut(msg.Payload, ":")
		switch kind {
		case msgCancel:
			_ = r.local.Cancel(r.ctx, rest) // ErrNotFound: another instance's run
		case msgReading, msgLeft:
			if reader, runID, ok := strings.Cut(rest, ":"); ok {
				r.local.remoteReader(runID, reader, kind == msgReading)
			}
		}
	}
}

// publish sends a control message.
func (r *Redis) publish(ctx context.Context, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.client.Publish(ctx, r.channel(), msg).Err()
}

// goroutine counts a goroutine the log starts, unless it was closed.
func (r *Redis) goroutine() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

// Start registers a new run in local and writes its metadata to Redis,
// waiting up to Timeout for it. A failed write is reported to OnError, and
// tried again.
func (r *Redis) Start(ctx context.Context, meta Meta) (Writer, error) {
	rn, err := r.local.start(meta)
	if err != nil {
		return nil, err
	}
	w := &redisWriter{
		memWriter: &memWriter{m: r.local, r: rn},
		log:       r,
		urgent:    make(chan struct{}, 1),
		attempt:   make(chan struct{}),
	}
	w.sync(ctx)
	return w, nil
}

// Meta returns the metadata of a run of this instance, or else from Redis.
func (r *Redis) Meta(ctx context.Context, runID string) (Meta, error) {
	if rn, err := r.local.lookup(runID); err == nil {
		return rn.meta, nil
	}
	vals, err := r.client.HMGet(ctx, r.metaKey(runID), "run", "thread", "resource", "started").Result()
	if err != nil {
		return Meta{}, fmt.Errorf("runlog: reading run %s from Redis: %w", runID, err)
	}
	if vals[0] == nil {
		return Meta{}, ErrNotFound
	}
	str := func(v any) string { s, _ := v.(string); return s }
	m := Meta{RunID: str(vals[0]), ThreadID: str(vals[1]), ResourceID: str(vals[2])}
	if m.Started, err = time.Parse(time.RFC3339Nano, str(vals[3])); err != nil {
		return Meta{}, fmt.Errorf("runlog: run %s in Redis: start time: %w", runID, err)
	}
	return m, nil
}

// Follow reads a run of this instance from local, and any other from Redis.
func (r *Redis) Follow(ctx context.Context, runID string, after int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if rn, err := r.local.lookup(runID); err == nil {
			rn.follow(ctx, after, yield)
			return
		}
		r.followRemote(ctx, runID, after, yield)
	}
}

// followRemote reads a run from Redis: XREAD BLOCK after the last Seq read,
// until the end marker, ctx's end, or the run's expiry. It announces itself
// to the run's instance, which counts it in Readers.
func (r *Redis) followRemote(ctx context.Context, runID string, after int64, yield func(Entry, error) bool) {
	if err := r.exists(ctx, runID); err != nil {
		yield(Entry{}, err)
		return
	}
	reader := uuid.NewString() // names this follower
	announce := func(ctx context.Context, kind string) {
		if err := r.publish(ctx, kind+":"+reader+":"+runID); err != nil && ctx.Err() == nil {
			r.onError(fmt.Errorf("runlog: announcing a reader of run %s: %w", runID, err))
		}
	}
	announce(ctx, msgReading)
	announced := time.Now()
	defer announce(context.WithoutCancel(ctx), msgLeft)

	next := max(after, 0) // the Seq of the last entry yielded
	for {
		if err := ctx.Err(); err != nil {
			yield(Entry{}, err)
			return
		}
		if time.Since(announced) >= readerBeat {
			announce(ctx, msgReading)
			announced = time.Now()
		}
		streams, err := r.client.XRead(ctx, &redis.XReadArgs{
			Streams: []string{r.eventsKey(runID), "0-" + strconv.FormatInt(next, 10)},
			Count:   readEntries,
			Block:   r.block,
		}).Result()
		if errors.Is(err, redis.Nil) { // nothing new within the block time
			err = r.exists(ctx, runID)
		}
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			} else if !errors.Is(err, ErrNotFound) {
				err = fmt.Errorf("runlog: reading run %s from Redis: %w", runID, err)
			}
			yield(Entry{}, err)
			return
		}
		for _, s := range streams {
			for j, m := range s.Messages {
				if m.ID == endID {
					return
				}
				more := j < len(s.Messages)-1 && s.Messages[j+1].ID != endID
				seq, ok := parseSeq(m.ID)
				if !ok || seq != next+1 {
					yield(Entry{}, fmt.Errorf("runlog: run %s in Redis: entry %s follows %d, entries are missing", runID, m.ID, next))
					return
				}
				data, _ := m.Values["d"].(string)
				if !yield(Entry{Seq: seq, Data: []byte(data), More: more}, nil) {
					return
				}
				next = seq
			}
		}
	}
}

// exists returns nil when Redis holds the run, ErrNotFound when it does
// not.
func (r *Redis) exists(ctx context.Context, runID string) error {
	n, err := r.client.Exists(ctx, r.metaKey(runID)).Result()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("runlog: reading run %s from Redis: %w", runID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// parseSeq returns the Seq of an event's stream id, 0-<seq>.
func parseSeq(id string) (int64, bool) {
	s, ok := strings.CutPrefix(id, "0-")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	return seq, err == nil && seq > 0
}

// Cancel cancels a run of this instance at once, and asks the instances
// through the control channel for any other run Redis holds that has not
// ended.
func (r *Redis) Cancel(ctx context.Context, runID string) error {
	if err := r.local.Cancel(ctx, runID); !errors.Is(err, ErrNotFound) {
		return err
	}
	vals, err := r.client.HMGet(ctx, r.metaKey(runID), "run", "end").Result()
	if err != nil {
		return fmt.Errorf("runlog: reading run %s from Redis: %w", runID, err)
	}
	switch {
	case vals[0] == nil:
		return ErrNotFound
	case vals[1] != nil: // it has ended
		return nil
	}
	if err := r.publish(ctx, msgCancel+":"+runID); err != nil {
		return fmt.Errorf("runlog: cancelling run %s through Redis: %w", runID, err)
	}
	return nil
}

// Close stops the subscription and the writes to Redis still under way,
// and waits for them. It does not close the client.
func (r *Redis) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.stop()
	err := r.pubsub.Close()
	r.wg.Wait()
	return errors.Join(err, r.local.Close())
}

// appendScript writes a batch of a run's entries, after its metadata, and
// its end marker when asked, then sets the keys' expiry.
//
// KEYS: the run's metadata hash, its stream of entries.
// ARGV: expiry (ms), MAXLEN, the batch's first Seq, "1" to end the run
// after the batch, run id, thread id, resource id, start time, then the
// entries' data.
//
// It returns {last, ended}: the last Seq Redis holds, and 1 when the run has
// ended there. Entries Redis holds already (a retry) are skipped. A last
// below the first Seq - 1 means Redis lost entries (it restarted, or the run
// expired): nothing is written, and the caller sends them again.
var appendScript = redis.NewScript(`
local meta, events = KEYS[1], KEYS[2]
local last = tonumber(redis.call('HGET', meta, 'last') or '0')
if redis.call('HEXISTS', meta, 'end') == 1 then
  return {last, 1}
end
local first = tonumber(ARGV[3])
if first > last + 1 then
  return {last, 0}
end
redis.call('HSET', meta, 'run', ARGV[5], 'thread', ARGV[6], 'resource', ARGV[7], 'started', ARGV[8])
for i = 9, #ARGV do
  local seq = first + i - 9
  if seq > last then
    redis.call('XADD', events, 'MAXLEN', '~', ARGV[2], string.format('0-%d', seq), 'd', ARGV[i])
    last = seq
  end
end
redis.call('HSET', meta, 'last', last)
local ended = 0
if ARGV[4] == '1' then
  redis.call('XADD', events, '1-0', 'end', last)
  redis.call('HSET', meta, 'end', last)
  ended = 1
end
redis.call('PEXPIRE', meta, ARGV[1])
redis.call('PEXPIRE', events, ARGV[1])
return {last, ended}
`)

// batch is one write of a run to Redis.
type batch struct {
	first int64    // Seq of data[0], or the next Seq when data is empty
	data  [][]byte // entries
	end   bool     // the run ended after data
	ttl   time.Duration
}

// write runs appendScript for a batch and returns the last Seq Redis holds
// and whether the run has ended there.
func (r *Redis) write(meta Meta, b batch) (last int64, ended bool, err error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	end := "0"
	if b.end {
		end = "1"
	}
	args := make([]any, 0, 8+len(b.data))
	args = append(args, max(b.ttl.Milliseconds(), 1), r.local.maxEntries, b.first, end,
		meta.RunID, meta.ThreadID, meta.ResourceID, meta.Started.Format(time.RFC3339Nano))
	for _, d := range b.data {
		args = append(args, d)
	}
	res, err := appendScript.Run(ctx, r.client, []string{r.metaKey(meta.RunID), r.eventsKey(meta.RunID)}, args...).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return 0, false, fmt.Errorf("runlog: writing run %s to Redis: %w", meta.RunID, err)
	}
	return res[0], res[1] == 1, nil
}

// redisWriter writes a run to its Memory, and to Redis from a goroutine
// that runs while there is something to write.
type redisWriter struct {
	*memWriter
	log    *Redis
	urgent chan struct{} // ends the goroutine's linger

	mu       sync.Mutex
	metaSent bool          // Redis holds the metadata
	flushed  int64         // the last Seq Redis holds
	endSent  bool          // Redis holds the end marker
	running  bool          // the goroutine runs
	attempt  chan struct{} // closed after each write, then replaced
	err      error         // of the latest write
}

var _ Writer = (*redisWriter)(nil)

// Append adds the event to the Memory, and has it written to Redis.
func (w *redisWriter) Append(ctx context.Context, data []byte, value any) (int64, error) {
	seq, err := w.memWriter.Append(ctx, data, value)
	if err != nil {
		return 0, err
	}
	w.poke()
	return seq, nil
}

// End ends the run in the Memory, then waits up to Timeout for Redis to
// hold its end.
func (w *redisWriter) End(ctx context.Context) error {
	if err := w.memWriter.End(ctx); err != nil {
		return err
	}
	w.sync(ctx)
	return nil
}

// next returns the next batch to write, false when there is none. w.mu is
// held.
func (w *redisWriter) next() (batch, bool) {
	rn := w.r
	rn.mu.Lock()
	entries, ended, endedAt := rn.view(), rn.ended, rn.endedAt
	rn.mu.Unlock()
	if w.log.ctx.Err() != nil {
		return batch{}, false
	}
	if w.metaSent && w.flushed >= int64(entries.len()) && (!ended || w.endSent) {
		return batch{}, false
	}
	b := batch{first: w.flushed + 1, ttl: w.log.maxRunTime + w.m.retention}
	if ended {
		// The keys expire Retention after End, as the Memory forgets
		// the run. Once that is over, there is nothing left to write.
		if b.ttl = w.m.retention - w.m.now().Sub(endedAt); b.ttl <= 0 {
			return batch{}, false
		}
	}
	size := 0
	for i := int(w.flushed); i < entries.len(); i++ {
		data, _ := entries.at(i)
		if len(b.data) == writeEntries || (len(b.data) > 0 && size+len(data) > writeBytes) {
			break
		}
		b.data = append(b.data, data)
		size += len(data)
	}
	b.end = ended && w.flushed+int64(len(b.data)) == int64(entries.len())
	return b, true
}

// poke has what is new written: by the writer's goroutine, started when
// there is none, or while Redis fails, by the log's retry.
func (w *redisWriter) poke() {
	if !w.log.healthy.Load() {
		w.log.park(w)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running || !w.log.goroutine() {
		return
	}
	w.running = true
	go w.flush()
}

// claim marks the writer's goroutine as running, unless it already runs.
func (w *redisWriter) claim() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		return false
	}
	w.running = true
	return true
}

// flush is the writer's goroutine: write, lingering.
func (w *redisWriter) flush() {
	defer w.log.wg.Done()
	w.write(true)
}

// write writes batches until Redis holds the whole run, or the log is
// closed, or the run's retention is over; it reports false when a write
// failed: the failure is reported, and the writer parked for the log's
// retry. With linger, a batch of entries alone (neither the run's
// metadata nor its end) waits Linger for more, unless sync asks for it
// sooner. The writer is claimed, and write releases it.
func (w *redisWriter) write(linger bool) bool {
	for {
		w.mu.Lock()
		b, ok := w.next()
		if ok && linger && w.log.linger > 0 && w.metaSent && !b.end && len(b.data) < writeEntries {
			w.mu.Unlock()
			w.wait()
			w.mu.Lock()
			b, ok = w.next()
		}
		if !ok {
			w.running = false
			w.mu.Unlock()
			return true
		}
		w.mu.Unlock()

		last, ended, err := w.log.write(w.r.meta, b)

		w.mu.Lock()
		if err == nil {
			w.metaSent, w.flushed, w.endSent = true, last, ended
		} else {
			w.running = false
		}
		w.err = err
		close(w.attempt)
		w.attempt = make(chan struct{})
		w.mu.Unlock()

		if w.log.ctx.Err() != nil {
			if err != nil {
				return false
			}
			continue // closed: next returns false
		}
		if up := err == nil; w.log.healthy.Swap(up) != up {
			w.log.onChange(up, err)
		}
		if err != nil {
			w.log.onError(err)
			w.log.park(w)
			return false
		}
	}
}

// wait waits Linger, or until sync asks for the write, or the log closes.
func (w *redisWriter) wait() {
	t := time.NewTimer(w.log.linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.urgent:
	case <-w.log.ctx.Done():
	}
}

// park leaves w to the retry goroutine, started when there is none. A
// closed log writes nothing more, and parks nothing.
func (r *Redis) park(w *redisWriter) {
	if r.ctx.Err() != nil {
		return
	}
	r.parkMu.Lock()
	defer r.parkMu.Unlock()
	if r.parked == nil {
		r.parked = make(map[*redisWriter]struct{})
	}
	r.parked[w] = struct{}{}
	if !r.retrying && r.goroutine() {
		r.retrying = true
		go r.retry()
	}
}

// retry tries Redis again every Backoff with one parked writer, and after
// a write that succeeded goes on with the others, until none is parked or
// the log is closed.
func (r *Redis) retry() {
	defer r.wg.Done()
	t := time.NewTimer(r.backoff)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			r.parkMu.Lock()
			r.parked = nil // closed: nothing more is written
			r.parkMu.Unlock()
			return
		case <-t.C:
		}
		r.prune()
		for {
			w := r.unpark()
			if w == nil {
				return
			}
			if w.claim() && !w.write(false) {
				break // still failing: w is parked again
			}
		}
		t.Reset(r.backoff)
	}
}

// unpark takes a parked writer whose run the Memory still keeps; with
// none left, it ends the retry (retrying false).
func (r *Redis) unpark() *redisWriter {
	r.parkMu.Lock()
	defer r.parkMu.Unlock()
	for w := range r.parked {
		delete(r.parked, w)
		if r.local.keeps(w.r) {
			return w
		}
	}
	r.retrying = false
	return nil
}

// prune drops the parked writers whose run the Memory has forgotten, with
// what they hold of it.
func (r *Redis) prune() {
	r.parkMu.Lock()
	defer r.parkMu.Unlock()
	for w := range r.parked {
		if !r.local.keeps(w.r) {
			delete(r.parked, w)
		}
	}
}

// sync waits until Redis holds all of the run, a write fails, ctx ends or
// Timeout passes. While Redis fails, it does not wait.
func (w *redisWriter) sync(ctx context.Context) {
	if !w.log.healthy.Load() {
		w.poke()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, w.log.timeout)
	defer cancel()
	for {
		w.mu.Lock()
		_, pending := w.next()
		attempt, lingers := w.attempt, w.metaSent
		w.mu.Unlock()
		if !pending {
			return
		}
		w.poke()
		if lingers { // a lingering goroutine writes now
			select {
			case w.urgent <- struct{}{}:
			default:
			}
		}
		select {
		case <-attempt:
			w.mu.Lock()
			err := w.err
			w.mu.Unlock()
			if err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
