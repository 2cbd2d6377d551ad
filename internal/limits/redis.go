package limits

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/companionhq/companion/internal/redact"
)

// DefaultPrefix is the prefix the service gives its rate limit keys in Redis.
const DefaultPrefix = "companion:ratelimit:"

// Redis limits requests for every instance that shares its Redis: GCRA (the
// token bucket as one timestamp per key) in a Lua script of
// github.com/go-redis/redis_rate, on Redis's clock. A key is stored as
// "rate:" + prefix + key (redis_rate adds "rate:") and expires once its
// bucket is full again, within a minute.
type Redis struct {
	rate      *redis_rate.Limiter
	limit     redis_rate.Limit
	perMinute int
	prefix    string
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a limiter of perMinute requests per minute per key, with a
// burst of perMinute, kept in client's Redis under prefix (such as
// DefaultPrefix). perMinute <= 0 means no limit, and Redis is never asked.
func NewRedis(client redis.UniversalClient, perMinute int, prefix string) *Redis {
	perMinute = max(perMinute, 0)
	return &Redis{
		rate:      redis_rate.NewLimiter(client),
		limit:     redis_rate.PerMinute(perMinute),
		perMinute: perMinute,
		prefix:    prefix,
	}
}

// Allow takes one token from key's bucket in Redis if it has one. It fails
// when Redis does, or when ctx ends first.
func (r *Redis) Allow(ctx context.Context, key string) (Decision, error) {
	if r.perMinute == 0 {
		return Decision{Allowed: true}, nil
	}
	res, err := r.rate.Allow(ctx, r.prefix+key, r.limit)
	if err != nil {
		return Decision{}, fmt.Errorf("redis rate limit: %w", err)
	}
	if res.Allowed == 0 {
		return refused(r.perMinute, res.RetryAfter), nil
	}
	return Decision{Allowed: true, Limit: r.perMinute, Remaining: max(res.Remaining, 0)}, nil
}

// ParseRedisURL turns a redis://, rediss:// (TLS) or unix:// URL into client
// options (see redis.ParseURL for the query parameters it takes). The
// options respect context deadlines, so that a caller's timeout bounds each
// call. Its errors never show the URL's password.
func ParseRedisURL(s string) (*redis.Options, error) {
	opts, err := redis.ParseURL(s)
	if err == nil {
		opts.ContextTimeoutEnabled = true
		return opts, nil
	}
	// redis.ParseURL's own errors quote only the path or the query.
	// url.Parse's quote the URL, or a piece of it that may be a piece of a
	// password written without percent-encoding.
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		if redact.URL(s) != s { // it holds a password
			return nil, fmt.Errorf("invalid Redis URL %q: it does not parse as a URL (special characters in a user name or password must be percent-encoded)", redact.URL(s))
		}
		err = ue.Err
	}
	return nil, fmt.Errorf("invalid Redis URL %q: %w", redact.URL(s), err)
}
