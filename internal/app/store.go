package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/postgres"
	"github.com/companionhq/companion/internal/memory/sqlite"
	"github.com/companionhq/companion/internal/redact"
)

// OpenStore opens the conversation store that url names: sqlite://PATH or
// postgres://... It migrates the database to the current schema.
func OpenStore(ctx context.Context, url string) (memory.Store, error) {
	kind, target, err := parseDatabaseURL(url)
	if err != nil {
		return nil, err
	}
	var s memory.Store
	if kind == "sqlite" {
		s, err = sqlite.Open(ctx, target)
	} else {
		s, err = postgres.Open(ctx, target)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the database: %w", err)
	}
	return s, nil
}

// CheckDatabaseURL says what is wrong with a database URL, if anything:
// the rule OpenStore follows, for a command line to report with its other
// settings before anything opens.
func CheckDatabaseURL(url string) error {
	_, _, err := parseDatabaseURL(url)
	return err
}

// parseDatabaseURL splits a database URL into the store it selects,
// "sqlite" or "postgres", and what that store opens: a file's path, or the
// URL itself.
func parseDatabaseURL(url string) (kind, target string, err error) {
	switch {
	case url == "sqlite://":
		return "", "", errors.New("database URL sqlite:// names no file: use e.g. sqlite://data/companion.db")
	case strings.HasPrefix(url, "sqlite://"):
		return "sqlite", strings.TrimPrefix(url, "sqlite://"), nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres", url, nil
	}
	return "", "", fmt.Errorf("database URL must start with sqlite:// or postgres://, not %q", redact.URL(url))
}

// databaseKind names the store a database URL selects, for logs.
func databaseKind(url string) string {
	kind, _, _ := parseDatabaseURL(url)
	return kind
}
