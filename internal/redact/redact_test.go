package redact_test

import (
	"testing"

	"github.com/companionhq/companion/internal/redact"
	_ "github.com/companionhq/companion/internal/testkit"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/companion", "postgres://app:xxxxx@db:5432/companion"},
		{"redis://:s3cret@127.0.0.1:63x79/0", "redis://:xxxxx@127.0.0.1:63x79/0"}, // does not parse
		{"redis://user:s3cr/et@127.0.0.1/0", "redis://user:xxxxx@127.0.0.1/0"},    // a slash in the password
		{"http://user@127.0.0.1:8000/v1", "http://user@127.0.0.1:8000/v1"},        // no password
		{"sqlite://data/companion.db", "sqlite://data/companion.db"},              // no user information
		{"http://h/p?to=a@b", "http://h/p?to=a@b"},                                // an @ in the query, no password
		{"http://u:p@h/p?to=a@b", "http://u:xxxxx@b"},                             // more hidden than needed, never less
		{"not a url", "not a url"},
	} {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
