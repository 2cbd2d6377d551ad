package limits

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
)

// UsageReader reads what a resource's runs used on a day; a memory.Store is
// one.
type UsageReader interface {
	Used(ctx context.Context, resourceID, day string) (tokens int64, cost float64, err error)
}

// Quota is what one resource's runs may use per UTC day: tokens, and their
// cost in US dollars. A zero field is no quota of that kind.
type Quota struct {
	Tokens int64
	Cost   float64
}

// On reports whether q limits anything.
func (q Quota) On() bool { return q.Tokens > 0 || q.Cost > 0 }

// Check refuses (apperr.RateLimited, with the time until the next UTC day)
// a run of resourceID once its resource has spent its tokens or its money
// for the day, as usage reads it at now. A failure to read is returned as
// it is.
func (q Quota) Check(ctx context.Context, usage UsageReader, resourceID string, now time.Time) error {
	if !q.On() {
		return nil
	}
	tokens, cost, err := usage.Used(ctx, resourceID, memory.Day(now))
	if err != nil {
		return err
	}
	next := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	switch {
	case q.Tokens > 0 && tokens >= q.Tokens:
		return apperr.New(apperr.RateLimited, "resource %q has used %d tokens today, its quota of %d (-token-quota): it resets at 00:00 UTC",
			resourceID, tokens, q.Tokens).After(next.Sub(now))
	case q.Cost > 0 && cost >= q.Cost:
		return apperr.New(apperr.RateLimited, "resource %q has spent $%s today, its quota of $%s (-cost-quota): it resets at 00:00 UTC",
			resourceID, dollars(cost), dollars(q.Cost)).After(next.Sub(now))
	}
	return nil
}

// dollars formats an amount to the millionth of a dollar, without
// trailing zeros: 0.001037, 0.003, 2.5.
func dollars(d float64) string {
	return strconv.FormatFloat(math.Round(d*1e6)/1e6, 'f', -1, 64)
}

// ThreadBytes is what one thread may store (memory.Thread.Bytes); 0 or
// less is no limit.
type ThreadBytes int64

// Check refuses rows that would take th past what it may store.
func (max ThreadBytes) Check(th memory.Thread, rows []memory.Message) error {
	if max <= 0 {
		return nil
	}
	size := th.Bytes
	for _, r := range rows {
		size += r.Size()
	}
	if size <= int64(max) {
		return nil
	}
	return apperr.New(apperr.TooLarge, "thread %q stores %d bytes, and this turn would take it past its limit of %d (-max-thread-bytes): start a new thread, or delete this one",
		th.ID, th.Bytes, int64(max))
}
