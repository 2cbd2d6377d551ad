package turn

import (
	"context"
	"time"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
)

// Bounds of a crisis referrals report: by default the last
// DefaultReferralDays UTC days, today included; at most MaxReferralYears
// years.
const (
	DefaultReferralDays = 365
	MaxReferralYears    = 3
)

// ReferralReport is the crisis referrals shown from From to To (UTC days,
// inclusive), per day and locale (days without any left out), and their
// sum: counts only, of no resource.
type ReferralReport struct {
	From, To string
	Total    int64
	Days     []memory.ReferralCount
}

// Referrals reports the crisis referrals shown from from to to (UTC days
// as memory.Day formats them, inclusive). An empty to is today, an empty
// from DefaultReferralDays days back from to. A date that does not parse,
// a from after to, or a range of more than MaxReferralYears years is
// refused.
func (t *Threads) Referrals(ctx context.Context, from, to string) (ReferralReport, error) {
	end := t.cfg.Now().UTC()
	if to != "" {
		var err error
		if end, err = parseDay("to", to); err != nil {
			return ReferralReport{}, err
		}
	}
	start := end.AddDate(0, 0, -(DefaultReferralDays - 1))
	if from != "" {
		var err error
		if start, err = parseDay("from", from); err != nil {
			return ReferralReport{}, err
		}
	}
	r := ReferralReport{From: memory.Day(start), To: memory.Day(end)}
	if start.After(end) {
		return ReferralReport{}, apperr.New(apperr.Invalid, "from (%s) is after to (%s): give the first day, then the last", r.From, r.To)
	}
	if start.AddDate(MaxReferralYears, 0, 0).Before(end) {
		return ReferralReport{}, apperr.New(apperr.Invalid, "from %s to %s is more than %d years: ask for a shorter range", r.From, r.To, MaxReferralYears)
	}
	days, err := t.cfg.Store.ReferralCounts(ctx, r.From, r.To)
	if err != nil {
		return ReferralReport{}, storeErr(err)
	}
	r.Days = days
	for _, d := range days {
		r.Total += d.Count
	}
	return r, nil
}

// parseDay reads the day of parameter name, as YYYY-MM-DD.
func parseDay(name, v string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return time.Time{}, apperr.New(apperr.Invalid, "%s must be a day as YYYY-MM-DD, e.g. 2027-07-01, not %q", name, v)
	}
	return d, nil
}
