package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

// TestMinorCommand: `companion minor` reads whether a running service has
// a resource marked a minor, and with -set marks it or clears the mark, or
// prints the route's JSON; a minor's own key may mark, not clear.
func TestMinorCommand(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte("key-admin *\nkey-teen teen minor\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(c *app.Config) { c.Auth.APIKeysFile = keys })
	env := func(key string) func(string) string {
		return func(k string) string {
			return map[string]string{"COMPANION_URL": svc.URL, "COMPANION_API_KEY": key}[k]
		}
	}
	ctx := context.Background()
	since := `\(since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\)\n$`
	for _, c := range []struct {
		name, key string
		args      []string
		exit      int
		out       string // a pattern of stdout when the exit is 0, of the error's text otherwise
	}{
		{"nothing set yet", "key-teen", []string{"-resource", "teen"}, 0, `^teen is not marked a minor\n$`},
		{"the resource's own key marks it", "key-teen", []string{"-resource", "teen", "-set", "true"}, 0, `^teen is marked a minor ` + since},
		{"but cannot clear it", "key-teen", []string{"-resource=teen", "-set=false"}, 1, `every resource`},
		{"the JSON", "key-admin", []string{"-resource", "teen", "-json"}, 0, `^\{"resourceId":"teen","minor":true,"updatedAt":"[^"]+"\}\n$`},
		{"a key of every resource clears it", "key-admin", []string{"--resource", "teen", "--set", "false"}, 0, `^teen is not marked a minor ` + since},
		{"another resource's", "key-teen", []string{"-resource", "alice"}, 1, `may not act for resource "alice"`},
		{"without a key", "", []string{"-resource", "teen"}, 1, `no credential`},
	} {
		var stdout, stderr strings.Builder
		err := run(ctx, append([]string{"minor"}, c.args...), env(c.key), &stdout, &stderr)
		if exitCode(err) != c.exit {
			t.Fatalf("%s: exit %d (%v), want %d; stdout %q, stderr %q", c.name, exitCode(err), err, c.exit, stdout.String(), stderr.String())
		}
		got := stdout.String()
		if c.exit != 0 {
			got = err.Error()
			if stdout.String() != "" {
				t.Fatalf("%s: stdout %q", c.name, stdout.String())
			}
		}
		if !regexp.MustCompile(c.out).MatchString(got) {
			t.Fatalf("%s: %q, want it to match %s", c.name, got, c.out)
		}
		if strings.Contains(c.name, "JSON") {
			var rs api.ResourceSafety
			if err := json.Unmarshal([]byte(got), &rs); err != nil || !rs.Minor {
				t.Fatalf("%s: %q does not decode: %v", c.name, got, err)
			}
		}
	}
}

// TestMinorCommandBadFlags: flags it cannot take, and no resource, are
// one line and status 2, before any request.
func TestMinorCommandBadFlags(t *testing.T) {
	hint := "\nrun 'companion minor -h' for the flags\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"minor"}, "companion minor: -resource is required: the resourceId whose mark to read or set" + hint},
		{[]string{"minor", "-resource", " "}, "companion minor: -resource is required: the resourceId whose mark to read or set" + hint},
		{[]string{"minor", "-resource", "teen", "-set", "maybe"}, `companion minor: -set: "maybe" is not true or false` + hint},
		{[]string{"minor", "-resource", "teen", "-set"}, "companion minor: -set needs a value: true or false" + hint},
		{[]string{"minor", "-resource", "teen", "-json=maybe"}, `companion minor: -json: "maybe" is not true or false` + hint},
		{[]string{"minor", "-resource", "teen", "true"}, `companion minor: unexpected argument "true"` + hint},
		{[]string{"minor", "-nope"}, "companion minor: unknown flag -nope" + hint},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if exitCode(err) != 2 || stderr != tc.want || stdout != "" {
			t.Errorf("companion %q: status %d (%v), stderr %q, stdout %q; want 2 and %q", tc.args, exitCode(err), err, stderr, stdout, tc.want)
		}
	}
	stdout, _, err := runCLI(t, "minor", "-h")
	if err != errHelp || !strings.Contains(stdout, "Usage: companion minor -resource ID [-set true|false] [-json]") ||
		!strings.Contains(stdout, "-set true|false") || !strings.Contains(stdout, "COMPANION_API_KEY") {
		t.Errorf("the help: %v\n%s", err, stdout)
	}
}
