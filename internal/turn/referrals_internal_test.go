package turn

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
)

// referralCounter is a store that only counts crisis referrals, as
// "day locale", or fails to with err.
type referralCounter struct {
	memory.Store
	counted []string
	err     error
}

func (c *referralCounter) CountReferral(_ context.Context, day, locale string) error {
	if c.err != nil {
		return c.err
	}
	c.counted = append(c.counted, day+" "+locale)
	return nil
}

// TestNotifyCountsReferrals: a turn that shows a crisis referral counts it
// for its UTC day and locale; a count that fails is logged and the turn
// goes on with the referral.
func TestNotifyCountsReferrals(t *testing.T) {
	now := time.Date(2027, 7, 1, 23, 30, 0, 0, time.FixedZone("PDT", -7*3600))
	trip := func() *agent.Trip {
		return &agent.Trip{Code: "self-harm", Locale: "es", Notice: &agent.Notice{Kind: agent.NoticeCrisisReferral, Text: "988"}}
	}
	store := &referralCounter{}
	turns := &Turns{cfg: Config{Observer: nopObserver{}, Store: store}}
	if err := turns.notify(context.Background(), &State{Now: now, trip: trip()}); err != nil {
		t.Fatal(err)
	}
	if len(store.counted) != 1 || store.counted[0] != "2027-07-02 es" {
		t.Fatalf("counted %v, want the UTC day and the locale", store.counted)
	}
	// Another trip (no referral) counts nothing.
	other := &agent.Trip{Code: "other", Notice: &agent.Notice{Kind: "other"}}
	if err := turns.notify(context.Background(), &State{Now: now, trip: other}); err != nil || len(store.counted) != 1 {
		t.Fatalf("a trip without a referral: counted %v, %v", store.counted, err)
	}

	var log bytes.Buffer
	failing := &referralCounter{err: errors.New("disk full")}
	turns = &Turns{cfg: Config{Observer: nopObserver{}, Store: failing, Logger: slog.New(slog.NewTextHandler(&log, nil))}}
	s := &State{Now: now, trip: trip()}
	if err := turns.notify(context.Background(), s); err != nil {
		t.Fatalf("a count that fails fails the turn: %v", err)
	}
	if len(s.In.Notices) != 1 || s.In.Notices[0].Kind != agent.NoticeCrisisReferral {
		t.Fatalf("the referral is not shown: %+v", s.In.Notices)
	}
	if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "disk full") {
		t.Fatalf("the failed count is not logged as a warning: %q", l)
	}
}
