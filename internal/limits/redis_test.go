package limits_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/testkit"
)

func TestRedisBurst(t *testing.T) {
	c := redistest.Client(t)
	prefix := redistest.Prefix(t)
	for _, n := range []int{1, 3, 10} {
		l := limits.NewRedis(c, n, prefix)
		key := "resource:" + strings.Repeat("u", n)
		burst(t, l, key, n)
	}
}

func TestRedisInstancesShareOneBudget(t *testing.T) {
	prefix := redistest.Prefix(t)
	a := limits.NewRedis(redistest.Client(t), 5, prefix)
	b := limits.NewRedis(redistest.Client(t), 5, prefix)
	key := "addr:" + strings.Repeat("2001:db8::1:", 25) // a long key
	allowed := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		d := allow(t, l, key)
		if d.Allowed {
			allowed++
		} else if d.RetryAfter <= 0 || d.RetryAfter > 12*time.Second+time.Millisecond {
			t.Fatalf("refused with RetryAfter %v, want in (0, 12s]", d.RetryAfter)
		}
	}
	if allowed != 5 {
		t.Fatalf("%d of 10 requests through two instances allowed, want 5", allowed)
	}
	// Another key, or another prefix, has a budget of its own.
	burst(t, a, "addr:203.0.113.7", 5)
	burst(t, limits.NewRedis(redistest.Client(t), 5, prefix+"other:"), key, 5)
}

func TestRedisMatchesLocal(t *testing.T) {
	r := limits.NewRedis(redistest.Client(t), 4, redistest.Prefix(t))
	c := newClock()
	l := limits.NewLocal(4, limits.WithNow(c.Now))
	for i := range 8 {
		dr, dl := allow(t, r, "k"), allow(t, l, "k")
		if dr.Allowed != dl.Allowed || dr.Limit != dl.Limit || dr.Remaining != dl.Remaining {
			t.Fatalf("request %d: Redis %+v, Local %+v", i+1, dr, dl)
		}
	}
}

func TestRedisKeyLayout(t *testing.T) {
	c := redistest.Client(t)
	prefix := redistest.Prefix(t)
	allow(t, limits.NewRedis(c, 10, prefix), "resource:user-1")
	ttl, err := c.TTL(context.Background(), "rate:"+prefix+"resource:user-1").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Minute {
		t.Fatalf("key TTL %v, want the key stored as rate:<prefix><key>, expiring within a minute", ttl)
	}
}

func TestRedisUnlimitedNeverAsksRedis(t *testing.T) {
	for _, n := range []int{0, -3} {
		l := limits.NewRedis(redis.NewClient(&redis.Options{Addr: testkit.FreeAddr(t)}), n, "p:")
		if d := allow(t, l, "k"); d != (limits.Decision{Allowed: true}) {
			t.Fatalf("NewRedis(%d): %+v, want allowed without a limit", n, d)
		}
	}
}

func TestRedisUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: testkit.FreeAddr(t), MaxRetries: -1})
	defer c.Close()
	d, err := limits.NewRedis(c, 10, "p:").Allow(context.Background(), "k")
	if err == nil || !strings.HasPrefix(err.Error(), "redis rate limit: ") {
		t.Fatalf("Allow with Redis down: %+v, %v; want an error", d, err)
	}
}

func TestParseRedisURL(t *testing.T) {
	opts, err := limits.ParseRedisURL("rediss://app:s3cret@redis.example:6380/2?dial_timeout=250ms")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Addr != "redis.example:6380" || opts.Username != "app" || opts.Password != "s3cret" ||
		opts.DB != 2 || opts.TLSConfig == nil || opts.DialTimeout != 250*time.Millisecond || !opts.ContextTimeoutEnabled {
		t.Fatalf("options %+v", opts)
	}
	if opts, err := limits.ParseRedisURL("redis://127.0.0.1"); err != nil || opts.Addr != "127.0.0.1:6379" || opts.DB != 0 || opts.TLSConfig != nil {
		t.Fatalf("redis://127.0.0.1: %+v, %v", opts, err)
	}

	for _, bad := range []struct{ url, want string }{
		{"redis://:s3cret@127.0.0.1:63x79/0", `invalid Redis URL "redis://:xxxxx@127.0.0.1:63x79/0": it does not parse`},
		{"redis://user:s3cr/et@127.0.0.1/0", `invalid Redis URL "redis://user:xxxxx@127.0.0.1/0": it does not parse`},
		{"redis://user:s3%zzcret@127.0.0.1/0", `invalid Redis URL "redis://user:xxxxx@127.0.0.1/0": it does not parse`},
		{"redis://user:s3cret@127.0.0.1/zero", `invalid Redis URL "redis://user:xxxxx@127.0.0.1/zero": redis: invalid database number: "zero"`},
		{"redis://user:s3cret@127.0.0.1/0?dial_timeout=soon", `invalid Redis URL "redis://user:xxxxx@127.0.0.1/0?dial_timeout=soon": redis: invalid dial_timeout`},
		{"redis://user:s3cret@127.0.0.1/0?colour=blue", `redis: unexpected option: colour`},
		{"http://user:s3cret@127.0.0.1/0", `invalid Redis URL "http://user:xxxxx@127.0.0.1/0": redis: invalid URL scheme: http`},
		{"redis://127.0.0.1:63x79/0", `invalid Redis URL "redis://127.0.0.1:63x79/0": invalid port ":63x79" after host`},
	} {
		_, err := limits.ParseRedisURL(bad.url)
		if err == nil {
			t.Errorf("%s: no error", bad.url)
			continue
		}
		if !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %q, want it to contain %q", bad.url, err, bad.want)
		}
		if strings.Contains(err.Error(), "s3cr") {
			t.Errorf("%s: error %q shows the password", bad.url, err)
		}
	}
}
