package main

import (
	"context"
	"encoding/json"
	"os"
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

// TestReferralsCommand: `companion referrals` prints a running service's
// crisis referrals per day and locale and their total, or the route's
// JSON; with authentication on, it needs a key given every resource.
func TestReferralsCommand(t *testing.T) {
	dir := t.TempDir()
	path, keys := filepath.Join(dir, "companion.db"), filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("key-admin *\nkey-alice alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(c *app.Config) {
		c.Storage.DatabaseURL = "sqlite://" + path
		c.Auth.APIKeysFile = keys
	})
	// The counts turns that showed referrals would have made.
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"2027-07-01", "en"}, {"2027-07-01", "en"}, {"2027-07-01", "es"}, {"2027-07-03", "en"}, {"2027-08-01", "en"}} {
		if err := s.CountReferral(ctx, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	env := func(key string) func(string) string {
		return func(k string) string {
			return map[string]string{"COMPANION_URL": svc.URL, "COMPANION_API_KEY": key}[k]
		}
	}

	var stdout, stderr strings.Builder
	err = run(ctx, []string{"referrals", "-from", "2027-07-01", "-to", "2027-07-31"}, env("key-admin"), &stdout, &stderr)
	want := "Crisis referrals from 2027-07-01 to 2027-07-31 (UTC days)\n\n" +
		"DAY         LOCALE  COUNT\n" +
		"2027-07-01  en      2\n" +
		"2027-07-01  es      1\n" +
		"2027-07-03  en      1\n" +
		"total               4\n"
	if err != nil || stdout.String() != want || stderr.String() != "" {
		t.Fatalf("the table: %v, stdout:\n%s\nstderr %q; want:\n%s", err, stdout.String(), stderr.String(), want)
	}

	stdout.Reset()
	err = run(ctx, []string{"referrals", "--json", "--from=2027-08-01", "--to", "2027-08-01", "--url", svc.URL}, env("key-admin"), &stdout, &stderr)
	var r api.ReferralReport
	if err != nil || json.Unmarshal([]byte(stdout.String()), &r) != nil || r.Total != 1 ||
		len(r.Days) != 1 || r.Days[0] != (api.ReferralCount{Day: "2027-08-01", Locale: "en", Count: 1}) {
		t.Fatalf("the JSON: %v, %q", err, stdout.String())
	}

	// By default, the last 365 days: nothing here but an empty table.
	stdout.Reset()
	err = run(ctx, []string{"referrals"}, env("key-admin"), &stdout, &stderr)
	now := time.Now().UTC()
	if err != nil || !strings.HasPrefix(stdout.String(), "Crisis referrals from "+memory.Day(now.AddDate(0, 0, -364))+" to "+memory.Day(now)) {
		t.Fatalf("the default range: %v, %q", err, stdout.String())
	}

	// A key for one resource may not read it; nor may no key.
	for _, key := range []string{"key-alice", ""} {
		stdout.Reset()
		err = run(ctx, []string{"referrals"}, env(key), &stdout, &stderr)
		if exitCode(err) != 1 || stdout.String() != "" {
			t.Errorf("with key %q: %v (exit %d), stdout %q", key, err, exitCode(err), stdout.String())
		}
	}
	if err := run(ctx, []string{"referrals"}, env("key-alice"), &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "every resource") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	// The service's refusal of a range is said as it says it.
	if err := run(ctx, []string{"referrals", "-from", "2027-08-01", "-to", "2027-07-01"}, env("key-admin"), &stdout, &stderr); exitCode(err) != 1 || !strings.Contains(err.Error(), "is after to") {
		t.Errorf("from after to: %v", err)
	}
}

// TestReferralsCommandBadFlags: flags it cannot take are one line and
// status 2, before any request.
func TestReferralsCommandBadFlags(t *testing.T) {
	hint := "\nrun 'companion referrals -h' for the flags\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"referrals", "-from", "July"}, `companion referrals: -from: "July" is not a day such as 2027-07-01` + hint},
		{[]string{"referrals", "-to", "2027-02-30"}, `companion referrals: -to: "2027-02-30" is not a day such as 2027-07-01` + hint},
		{[]string{"referrals", "-json=maybe"}, `companion referrals: -json: "maybe" is not true or false` + hint},
		{[]string{"referrals", "-nope"}, "companion referrals: unknown flag -nope" + hint},
		{[]string{"referrals", "2027"}, `companion referrals: unexpected argument "2027"` + hint},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if exitCode(err) != 2 || stderr != tc.want || stdout != "" {
			t.Errorf("companion %q: status %d (%v), stderr %q, stdout %q; want 2 and %q", tc.args, exitCode(err), err, stderr, stdout, tc.want)
		}
	}
	stdout, _, err := runCLI(t, "referrals", "-h")
	if err != errHelp || !strings.Contains(stdout, "Usage: companion referrals [-from YYYY-MM-DD] [-to YYYY-MM-DD] [-json]") || !strings.Contains(stdout, "COMPANION_API_KEY") {
		t.Errorf("the help: %v\n%s", err, stdout)
	}
}
