package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/sqlite"
)

const referralsPath = "/api/safety/referrals"

// countReferrals counts crisis referrals in the SQLite file at path, as
// turns that showed them would: n of each day and locale.
func countReferrals(t *testing.T, path string, n int, days []string, locales ...string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, day := range days {
		for _, l := range locales {
			for range n {
				if err := s.CountReferral(ctx, day, l); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func referralReport(t *testing.T, res *http.Response, b []byte) api.ReferralReport {
	t.Helper()
	return decodeOK[api.ReferralReport](t, "the report", res, b)
}

// decodeOK decodes b, the body of res, which must have answered 200;
// what names it in a failure.
func decodeOK[T any](t *testing.T, what string, res *http.Response, b []byte) T {
	t.Helper()
	var v T
	if res.StatusCode != 200 {
		t.Fatalf("%s: %d %s", what, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: %v", what, b, err)
	}
	return v
}

// TestReferralsReport: the counts of crisis referrals per UTC day and
// locale, over the last 365 days by default or the days asked for, with
// their total; bad ranges are refused with what is wrong.
func TestReferralsReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "companion.db")
	svc := apptest.Start(t, func(c *app.Config) { c.Storage.DatabaseURL = "sqlite://" + path })
	now := time.Now().UTC()
	today, yesterday := memory.Day(now), memory.Day(now.AddDate(0, 0, -1))
	longAgo := memory.Day(now.AddDate(0, 0, -400))

	// None yet: an empty list, not null.
	res, b := svc.Do(t, "GET", referralsPath, "")
	if r := referralReport(t, res, b); r.Total != 0 || r.Days == nil || len(r.Days) != 0 || r.To != today ||
		r.From != memory.Day(now.AddDate(0, 0, -364)) || !strings.Contains(string(b), `"days":[]`) {
		t.Fatalf("the report before any referral: %s", b)
	}

	countReferrals(t, path, 2, []string{yesterday}, "en", "es")
	countReferrals(t, path, 1, []string{today, longAgo}, "en")
	res, b = svc.Do(t, "GET", referralsPath, "")
	r := referralReport(t, res, b)
	want := []api.ReferralCount{{Day: yesterday, Locale: "en", Count: 2}, {Day: yesterday, Locale: "es", Count: 2}, {Day: today, Locale: "en", Count: 1}}
	if r.Total != 5 || len(r.Days) != len(want) {
		t.Fatalf("the last year's report: %s", b)
	}
	for i := range want {
		if r.Days[i] != want[i] {
			t.Fatalf("the last year's report: %s, want days %+v", b, want)
		}
	}
	// Both bounds are in the range.
	res, b = svc.Do(t, "GET", referralsPath+"?from="+longAgo+"&to="+yesterday, "")
	if r := referralReport(t, res, b); r.From != longAgo || r.To != yesterday || r.Total != 5 || len(r.Days) != 3 || r.Days[0].Day != longAgo {
		t.Fatalf("from %s to %s: %s", longAgo, yesterday, b)
	}
	res, b = svc.Do(t, "GET", referralsPath+"?from="+today, "")
	if r := referralReport(t, res, b); r.From != today || r.To != today || r.Total != 1 {
		t.Fatalf("from today: %s", b)
	}

	for _, c := range []struct{ query, says string }{
		{"?from=2027-13-01", "from must be a day as YYYY-MM-DD"},
		{"?to=yesterday", "to must be a day as YYYY-MM-DD"},
		{"?from=2027-07-02&to=2027-07-01", "is after to"},
		{"?from=2024-01-01&to=2027-01-02", "more than 3 years"},
		{"?From=2027-01-01", "parameter names are case-sensitive"},
	} {
		res, b := svc.Do(t, "GET", referralsPath+c.query, "")
		if res.StatusCode != 400 || !strings.Contains(string(b), c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.query, res.StatusCode, b, c.says)
		}
	}
	// Three years exactly is fine.
	res, b = svc.Do(t, "GET", referralsPath+"?from=2024-01-01&to=2027-01-01", "")
	referralReport(t, res, b)
}

// TestReferralsReportNeedsEveryResource: with authentication on, the
// report is for a credential that may act for every resource; others are
// refused.
func TestReferralsReportNeedsEveryResource(t *testing.T) {
	svc := authService(t, nil)
	for _, c := range []struct {
		name   string
		header http.Header
		status int
	}{
		{"none", nil, 401},
		{"a key for one resource", bearer("key-alice"), 403},
		{"a key for two", bearer("key-team"), 403},
		{"a token", bearer(token(t, "alice", time.Time{})), 403},
		{"a key for any", bearer("key-admin"), 200},
	} {
		res, b := svc.DoHeader(t, "GET", referralsPath, "", c.header)
		if res.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.StatusCode, b, c.status)
		}
		if c.status == 403 && !strings.Contains(string(b), "every resource") {
			t.Errorf("%s: the refusal does not say why: %s", c.name, b)
		}
	}
}
