package limits_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/testkit"
)

// changes records the calls of a Fallback's OnChange.
type changes struct {
	mu     sync.Mutex
	ups    []bool
	errors []error
}

func (c *changes) record(up bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ups = append(c.ups, up)
	c.errors = append(c.errors, err)
}

// want fails the test unless the changes so far are ups, each down with an
// error and each up without one.
func (c *changes) want(t *testing.T, ups ...bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if fmt.Sprint(c.ups) != fmt.Sprint(ups) {
		t.Fatalf("OnChange calls %v, want %v (errors %v)", c.ups, ups, c.errors)
	}
	for i, up := range c.ups {
		if up != (c.errors[i] == nil) {
			t.Fatalf("OnChange(%v, %v)", up, c.errors[i])
		}
	}
}

// commands counts the commands a client sends.
type commands struct{ n atomic.Int64 }

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// serviceClient is a client to addr as the service makes one
// (ParseRedisURL): it retries, and honours context deadlines, which is how
// the Fallback's timeout bounds a call.
func serviceClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	opts, err := limits.ParseRedisURL("redis://" + addr + "/0")
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	return client
}

func TestFallbackAnswersLocallyWhileRedisIsDown(t *testing.T) {
	client := serviceClient(t, testkit.FreeAddr(t))
	var sent commands
	client.AddHook(&sent)
	var got changes
	c := newClock()
	f := limits.NewFallback(limits.NewRedis(client, 3, "p:"), limits.NewLocal(3, limits.WithNow(c.Now)),
		limits.FallbackOptions{OnChange: got.record, Now: c.Now})

	if !f.Up() {
		t.Fatal("Up before the first call: false, want true")
	}
	allowed := 0
	for i := range 10 {
		start := time.Now()
		d, err := f.Allow(context.Background(), "k")
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		// A refused connection fails at once; the bound would be the
		// 100 ms timeout (TestFallbackBoundsARedisThatDoesNotAnswer). This
		// machine may be busy.
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("request %d took %v", i+1, took)
		}
		if d.Allowed {
			allowed++
		} else if d.RetryAfter <= 0 {
			t.Fatalf("refused with RetryAfter %v", d.RetryAfter)
		}
	}
	if allowed != 3 {
		t.Fatalf("%d of 10 allowed, want the local limit of 3", allowed)
	}
	got.want(t, false)
	if f.Up() {
		t.Fatal("Up with Redis down: true")
	}
	if n := sent.n.Load(); n != 1 {
		t.Fatalf("%d commands sent to Redis, want 1: none during the back-off", n)
	}

	c.Advance(limits.DefaultBackoff - time.Millisecond)
	allow(t, f, "k")
	if n := sent.n.Load(); n != 1 {
		t.Fatalf("%d commands sent to Redis before the back-off ended, want 1", n)
	}
	c.Advance(time.Millisecond)
	for range 5 {
		allow(t, f, "k")
	}
	if n := sent.n.Load(); n != 2 {
		t.Fatalf("%d commands sent to Redis, want 2: one more after the back-off", n)
	}
	got.want(t, false) // still down: no change to report
}

// TestFallbackBoundsARedisThatDoesNotAnswer: a Redis that takes the
// connection and never answers costs a call its timeout (100 ms), not the
// client's own (seconds), and the local limiter decides.
func TestFallbackBoundsARedisThatDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn // open, never answered
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn)
			mu.Unlock()
		}
	}()
	var got changes
	f := limits.NewFallback(limits.NewRedis(serviceClient(t, ln.Addr().String()), 3, "p:"), limits.NewLocal(3), limits.FallbackOptions{OnChange: got.record})
	start := time.Now()
	d, err := f.Allow(context.Background(), "k")
	if err != nil || !d.Allowed {
		t.Fatalf("Allow: %+v, %v; want the local limiter's yes", d, err)
	}
	// 100 ms, on a machine that may be busy; the client's own timeouts are
	// seconds.
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Allow took %v against a Redis that does not answer", took)
	}
	got.want(t, false)
}

func TestFallbackReportsAChangeOnceUnderLoad(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: testkit.FreeAddr(t), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	var got changes
	f := limits.NewFallback(limits.NewRedis(client, 1000, "p:"), limits.NewLocal(1000), limits.FallbackOptions{OnChange: got.record})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if _, err := f.Allow(context.Background(), "k"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got.want(t, false)
}

func TestFallbackErrsOnlyForAnEndedContext(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: testkit.FreeAddr(t)})
	t.Cleanup(func() { client.Close() })
	var got changes
	f := limits.NewFallback(limits.NewRedis(client, 3, "p:"), limits.NewLocal(3), limits.FallbackOptions{OnChange: got.record})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Allow(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allow with a cancelled context: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := f.Allow(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Allow past a deadline: %v, want context.DeadlineExceeded", err)
	}
	got.want(t)
	if !f.Up() {
		t.Fatal("an ended context marked Redis down")
	}
}

func TestFallbackUsesRedisWhileItIsUp(t *testing.T) {
	prefix := redistest.Prefix(t)
	var got changes
	// A busy machine may take longer than 100 ms to answer.
	opts := limits.FallbackOptions{OnChange: got.record, Timeout: 10 * time.Second}
	// Two instances: they share Redis's budget, not their local ones.
	a := limits.NewFallback(limits.NewRedis(redistest.Client(t), 4, prefix), limits.NewLocal(4), opts)
	b := limits.NewFallback(limits.NewRedis(redistest.Client(t), 4, prefix), limits.NewLocal(4), opts)
	allowed := 0
	for i := range 8 {
		f := a
		if i%2 == 1 {
			f = b
		}
		if allow(t, f, "k").Allowed {
			allowed++
		}
	}
	if allowed != 4 {
		t.Fatalf("%d of 8 allowed through two instances, want 4", allowed)
	}
	got.want(t)
	if !a.Up() || !b.Up() {
		t.Fatal("Up: false with Redis up")
	}
}

func TestFallbackSwitchesToLocalAndBack(t *testing.T) {
	server := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr()})
	t.Cleanup(func() { client.Close() })
	var got changes
	c := newClock()
	f := limits.NewFallback(limits.NewRedis(client, 10, "p:"), limits.NewLocal(10),
		limits.FallbackOptions{OnChange: got.record, Now: c.Now, Timeout: 10 * time.Second})
	inRedis := func() bool {
		t.Helper()
		n, err := client.Exists(context.Background(), "rate:p:k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	allow(t, f, "k")
	if !f.Up() || !inRedis() {
		t.Fatalf("with Redis up: Up %v, counted in Redis %v", f.Up(), inRedis())
	}
	got.want(t)

	server.Stop()
	for range 3 {
		allow(t, f, "k")
	}
	if f.Up() {
		t.Fatal("Up: true after Redis stopped")
	}
	got.want(t, false)

	server.Start() // empty: nothing was saved
	deadline := time.Now().Add(30 * time.Second)
	for !f.Up() {
		if time.Now().After(deadline) {
			t.Fatal("Fallback did not switch back to Redis within 30 s of its restart")
		}
		c.Advance(limits.DefaultBackoff)
		allow(t, f, "k")
		time.Sleep(10 * time.Millisecond) // the client may wait before dialling again
	}
	got.want(t, false, true)
	if !inRedis() {
		t.Fatal("the request that found Redis back was not counted there")
	}
}
