package runlog_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/testkit"
)

// errs collects the errors a Redis log reports to OnError.
type errs struct {
	mu   sync.Mutex
	errs []error
}

func (e *errs) record(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errs) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

// newRedis returns a Redis log on client, closed when the test ends, that
// fails the test when it reports an error.
func newRedis(t *testing.T, client redis.UniversalClient, local *runlog.Memory, opts runlog.RedisOptions) *runlog.Redis {
	t.Helper()
	if opts.OnError == nil {
		opts.OnError = func(err error) { t.Errorf("OnError: %v", err) }
	}
	if opts.BlockTime == 0 {
		opts.BlockTime = 100 * time.Millisecond
	}
	if opts.Backoff == 0 {
		opts.Backoff = 50 * time.Millisecond
	}
	l := runlog.NewRedis(client, local, opts)
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// TestRedisOneInstance reads runs on the instance that writes them.
func TestRedisOneInstance(t *testing.T) {
	testLog(t, func(t *testing.T) (runlog.Log, runlog.Log) {
		l := newRedis(t, redistest.Client(t), nil, runlog.RedisOptions{Prefix: redistest.Prefix(t)})
		return l, l
	})
}

// TestRedisTwoInstances reads runs on another instance than the one that
// writes them, each with a client of its own.
func TestRedisTwoInstances(t *testing.T) {
	testLog(t, func(t *testing.T) (runlog.Log, runlog.Log) {
		prefix := redistest.Prefix(t)
		a := newRedis(t, redistest.Client(t), nil, runlog.RedisOptions{Prefix: prefix})
		b := newRedis(t, redistest.Client(t), nil, runlog.RedisOptions{Prefix: prefix})
		return a, b
	})
}

func TestRedisKeyLayoutAndExpiry(t *testing.T) {
	c := redistest.Client(t)
	prefix := redistest.Prefix(t)
	ctx := ctxFor(t)
	local := runlog.NewMemory(runlog.MemoryOptions{Retention: time.Minute})
	l := newRedis(t, c, local, runlog.RedisOptions{Prefix: prefix, MaxRunTime: 10 * time.Minute})
	meta, events := prefix+"{run-1}:meta", prefix+"{run-1}:events"
	ttls := func() (time.Duration, time.Duration) {
		t.Helper()
		m, err := c.PTTL(ctx, meta).Result()
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.PTTL(ctx, events).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m, e
	}

	wr := start(t, l, "run-1")
	if m, _ := ttls(); m <= 10*time.Minute || m > 11*time.Minute {
		t.Fatalf("meta TTL of a run in progress %v, want MaxRunTime + Retention", m)
	}
	appendN(t, wr, 1, 3)
	eventually(t, "the entries reach Redis", func() bool {
		n, err := c.XLen(ctx, events).Result()
		return err == nil && n == 3
	})
	for _, ttl := range []time.Duration{func() time.Duration { m, _ := ttls(); return m }(), func() time.Duration { _, e := ttls(); return e }()} {
		if ttl <= 10*time.Minute || ttl > 11*time.Minute {
			t.Fatalf("TTL of a run in progress %v, want MaxRunTime + Retention", ttl)
		}
	}
	end(t, wr)
	m, e := ttls()
	if m <= 0 || m > time.Minute || e <= 0 || e > time.Minute {
		t.Fatalf("TTLs after End: meta %v, events %v; want in (0, Retention]", m, e)
	}

	h, err := c.HGetAll(ctx, meta).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"run": "run-1", "thread": "thread-run-1", "resource": "user-1", "started": "2023-11-14T22:13:20.000000123Z", "last": "3", "end": "3"}
	for k, v := range want {
		if h[k] != v {
			t.Fatalf("meta hash %v, want %v", h, want)
		}
	}
	msgs, err := c.XRange(ctx, events, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, " ") != "0-1 0-2 0-3 1-0" || msgs[0].Values["d"] != string(event(1)) || msgs[3].Values["end"] != "3" {
		t.Fatalf("stream %v, want ids 0-1 0-2 0-3 and the end marker 1-0", msgs)
	}
}

func TestRedisRunWithoutEntries(t *testing.T) {
	prefix := redistest.Prefix(t)
	a := newRedis(t, redistest.Client(t), nil, runlog.RedisOptions{Prefix: prefix})
	b := newRedis(t, redistest.Client(t), nil, runlog.RedisOptions{Prefix: prefix})
	wr := start(t, a, "run-1")
	done := make(chan error, 1)
	go func() {
		got, err := collect(ctxFor(t), b, "run-1", 0)
		if err == nil && len(got) > 0 {
			err = errors.New("entries of a run without any")
		}
		done <- err
	}()
	eventually(t, "the follower on the other instance is counted", func() bool { return wr.Readers() == 1 })
	end(t, wr)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower on the other instance did not end with the run")
	}
}

func TestRedisUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: testkit.FreeAddr(t), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	var seen errs
	l := newRedis(t, c, nil, runlog.RedisOptions{OnError: seen.record, Timeout: 200 * time.Millisecond})
	ctx := ctxFor(t)

	began := time.Now()
	wr := start(t, l, "run-1")
	appendN(t, wr, 1, 20)
	end(t, wr)
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("a run took %v with Redis down", d)
	}
	got, err := collect(ctx, l, "run-1", 5)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 5, 20)
	if m, err := l.Meta(ctx, "run-1"); err != nil || m.RunID != "run-1" {
		t.Fatalf("Meta: %+v, %v", m, err)
	}
	eventually(t, "OnError sees the failed writes", func() bool { return len(seen.all()) > 0 })
	for _, err := range seen.all() {
		if !strings.HasPrefix(err.Error(), "runlog: writing run run-1 to Redis: ") {
			t.Fatalf("OnError(%v)", err)
		}
	}

	// What only Redis could answer fails, and does not say "not found".
	if _, err := l.Meta(ctx, "run-elsewhere"); err == nil || errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Meta of another instance's run: %v", err)
	}
	if got, err := collect(ctx, l, "run-elsewhere", 0); err == nil || errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Follow of another instance's run: %s, %v", seqs(got), err)
	}
	if err := l.Cancel(ctx, "run-elsewhere"); err == nil || errors.Is(err, runlog.ErrNotFound) {
		t.Fatalf("Cancel of another instance's run: %v", err)
	}
}

// TestRedisOutage stops Redis in the middle of a run, losing everything it
// held, and starts it again: the run goes on, and a follower on the other
// instance, resuming after the last entry it got, gets every entry once.
func TestRedisOutage(t *testing.T) {
	const total = 150
	srv := redistest.StartServer(t)
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	var seen errs
	var mu sync.Mutex
	var changes []bool
	opts := runlog.RedisOptions{OnError: seen.record, Timeout: 200 * time.Millisecond}
	b := newRedis(t, client(), nil, opts)
	opts.OnChange = func(up bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		if up != (err == nil) {
			t.Errorf("OnChange(%v, %v)", up, err)
		}
		changes = append(changes, up)
	}
	a := newRedis(t, client(), nil, opts)

	wr := start(t, a, "run-1")
	var got []runlog.Entry
	var followErrs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := ctxFor(t)
		for {
			var after int64
			if len(got) > 0 {
				after = got[len(got)-1].Seq
			}
			es, err := collect(ctx, b, "run-1", after)
			got = append(got, es...)
			if err == nil || ctx.Err() != nil {
				return
			}
			followErrs = append(followErrs, err)
			time.Sleep(20 * time.Millisecond) // and resume
		}
	}()

	appendN(t, wr, 1, 50)
	eventually(t, "the follower on the other instance is counted", func() bool { return wr.Readers() == 1 })
	time.Sleep(100 * time.Millisecond)
	srv.Stop()
	for n := 51; n <= 100; n++ {
		appendN(t, wr, n, n)
		time.Sleep(5 * time.Millisecond)
	}
	eventually(t, "OnError sees the outage", func() bool { return len(seen.all()) > 0 })
	srv.Start()
	appendN(t, wr, 101, total)
	end(t, wr)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the follower on the other instance did not end")
	}
	wantEntries(t, got, 0, total)
	mu.Lock()
	if fmt.Sprint(changes) != "[false true]" {
		t.Errorf("the writing instance reported the changes %v, want down then up", changes)
	}
	mu.Unlock()
	if len(followErrs) == 0 {
		t.Fatal("the follower saw no error while Redis was down")
	}
	t.Logf("the follower resumed after: %v", followErrs)
	// The restarted Redis, which had lost everything, holds the whole run.
	msgs, err := client().XRange(ctxFor(t), runlog.DefaultPrefix+"{run-1}:events", "-", "+").Result()
	if err != nil || len(msgs) != total+1 {
		t.Fatalf("Redis holds %d stream entries (%v), want %d and the end marker", len(msgs), err, total)
	}
}

// TestRedisOutageManyRuns: while Redis is down, many runs make one attempt
// to write a Backoff, not one each, and keep no goroutine each; the runs
// the Memory forgets meanwhile are not written when Redis is back, and
// those it keeps are, whole.
func TestRedisOutageManyRuns(t *testing.T) {
	const runs, entries = 300, 10 // 71 bytes of entries a run
	srv := redistest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	var seen errs
	const backoff = 50 * time.Millisecond
	local := runlog.NewMemory(runlog.MemoryOptions{MaxRetained: 2000}) // the last 28 runs
	l := newRedis(t, c, local, runlog.RedisOptions{OnError: seen.record, Timeout: 200 * time.Millisecond, Backoff: backoff})
	srv.Stop()

	goroutines := runtime.NumGoroutine()
	id := func(i int) string { return fmt.Sprint("run-", i) }
	for i := range runs {
		wr := start(t, l, id(i))
		appendN(t, wr, 1, entries)
		end(t, wr)
	}
	more := runtime.NumGoroutine() - goroutines
	if more > 10 {
		t.Errorf("%d more goroutines after %d runs with Redis down", more, runs)
	}
	before := len(seen.all())
	time.Sleep(10 * backoff)
	failed := len(seen.all()) - before
	if failed > 15 {
		t.Errorf("%d failed writes in 10 back-offs, want about one each", failed)
	}
	t.Logf("with Redis down: %d more goroutines after %d runs, %d failed writes in 10 back-offs", more, runs, failed)

	srv.Start()
	held := func(i int) (int64, error) {
		return c.XLen(ctxFor(t), runlog.DefaultPrefix+"{"+id(i)+"}:events").Result()
	}
	eventually(t, "the runs kept are written once Redis is back", func() bool {
		for i := runs - 20; i < runs; i++ {
			if n, err := held(i); err != nil || n != entries+1 { // and the end marker
				return false
			}
		}
		return true
	})
	for i := range runs - 50 {
		if n, err := held(i); err != nil || n != 0 {
			t.Fatalf("%s, forgotten by the Memory, has %d entries in Redis (%v)", id(i), n, err)
		}
	}
}

// scriptCalls counts a client's script calls (EVALSHA, and EVAL after
// NOSCRIPT).
type scriptCalls struct{ n atomic.Int64 }

func (*scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// TestRedisLinger: entries appended a few ms apart go to Redis a Linger's
// worth at a time, not one a call, and a follower on another instance gets
// them all; End does not wait for the Linger.
func TestRedisLinger(t *testing.T) {
	for _, tc := range []struct {
		name     string
		linger   time.Duration
		min, max int64 // script calls for the run
	}{
		{"none", -1, 30, 44},                    // about one an entry, with the start and the end
		{"200ms", 200 * time.Millisecond, 2, 8}, // the start, 40 entries in about 3 writes, the end
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.Client(t)
			var calls scriptCalls
			c.AddHook(&calls)
			opts := runlog.RedisOptions{Prefix: redistest.Prefix(t), Linger: tc.linger}
			a, b := newRedis(t, c, nil, opts), newRedis(t, redistest.Client(t), nil, opts)
			wr := start(t, a, "run-1")
			for n := 1; n <= 40; n++ {
				appendN(t, wr, n, n)
				time.Sleep(10 * time.Millisecond)
			}
			began := time.Now()
			end(t, wr)
			if d := time.Since(began); tc.linger > 0 && d >= tc.linger {
				t.Errorf("End took %v, waiting for the linger (%v)", d, tc.linger)
			}
			got, err := collect(ctxFor(t), b, "run-1", 0)
			if err != nil {
				t.Fatal(err)
			}
			wantEntries(t, got, 0, 40)
			n := calls.n.Load()
			if n < tc.min || n > tc.max {
				t.Errorf("%d script calls for a run of 40 entries, want %d to %d", n, tc.min, tc.max)
			}
			t.Logf("%d script calls for a run of 40 entries, 10 ms apart", n)
		})
	}
}

func TestRedisClose(t *testing.T) {
	l := newRedis(t, redistest.Client(t), nil, runlog.RedisOptions{Prefix: redistest.Prefix(t)})
	wr := start(t, l, "run-1")
	appendN(t, wr, 1, 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The run goes on in memory.
	appendN(t, wr, 101, 110)
	end(t, wr)
	got, err := collect(ctxFor(t), l, "run-1", 100)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, got, 100, 110)
}
