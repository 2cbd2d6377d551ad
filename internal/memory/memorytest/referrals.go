package memorytest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// testReferrals: crisis referrals are counted per day and locale, read
// over a range of days (both bounds included, oldest first, then by
// locale), counted concurrently without losing any, and kept when a
// resource is erased (they hold none).
func testReferrals(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	d0 := memory.Day(base.Add(-24 * time.Hour))
	d1, d2, d3 := memory.Day(base), memory.Day(base.Add(24*time.Hour)), memory.Day(base.Add(48*time.Hour))
	if got, err := s.ReferralCounts(ctx, d0, d3); err != nil || len(got) != 0 {
		t.Fatalf("counts before any referral: %+v, %v", got, err)
	}
	for _, c := range []struct {
		day, locale string
		n           int
	}{{d1, "en", 2}, {d1, "es", 1}, {d2, "en", 1}, {d0, "fr", 1}, {d3, "de", 4}, {d2, "de", 1}} {
		for range c.n {
			if err := s.CountReferral(ctx, c.day, c.locale); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.ReferralCounts(ctx, d1, d2)
	if err != nil {
		t.Fatal(err)
	}
	want := []memory.ReferralCount{{Day: d1, Locale: "en", Count: 2}, {Day: d1, Locale: "es", Count: 1},
		{Day: d2, Locale: "de", Count: 1}, {Day: d2, Locale: "en", Count: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("counts from %s to %s: %+v, want %+v", d1, d2, got, want)
	}
	if got, err := s.ReferralCounts(ctx, d3, d3); err != nil || !slices.Equal(got, []memory.ReferralCount{{Day: d3, Locale: "de", Count: 4}}) {
		t.Fatalf("counts of %s alone: %+v, %v", d3, got, err)
	}
	if got, err := s.ReferralCounts(ctx, d0, d3); err != nil || len(got) != 6 || got[0].Day != d0 || got[5].Day != d3 {
		t.Fatalf("counts from %s to %s: %+v, %v", d0, d3, got, err)
	}
	if got, err := s.ReferralCounts(ctx, d3, d1); err != nil || len(got) != 0 {
		t.Fatalf("counts of a range that ends before it begins: %+v, %v", got, err)
	}

	// Concurrent counts of one day and locale, and of another: none lost.
	const writers, each = 8, 5
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			locale := "pt"
			if i%2 == 1 {
				locale = "en"
			}
			for range each {
				if err := s.CountReferral(ctx, d2, locale); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err = s.ReferralCounts(ctx, d2, d2)
	want = []memory.ReferralCount{{Day: d2, Locale: "de", Count: 1}, {Day: d2, Locale: "en", Count: 1 + writers/2*each},
		{Day: d2, Locale: "pt", Count: writers / 2 * each}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("after concurrent counts: %+v, %v; want %+v", got, err, want)
	}

	// Erasing a resource leaves the counts: they are of none.
	seedThread(t, s, "alice-1", "alice", "", "I feel unsafe.", "You are not alone.")
	if _, err := s.EraseResource(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if after, err := s.ReferralCounts(ctx, d0, d3); err != nil || len(after) != 7 {
		t.Fatalf("counts after erasing a resource: %+v, %v", after, err)
	}
}
