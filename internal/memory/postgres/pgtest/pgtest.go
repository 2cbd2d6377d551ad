// Package pgtest gives tests a fresh PostgreSQL schema of their own.
//
// The server is the one named by COMPANION_TEST_POSTGRES_URL, or the local
// default. When it cannot be reached, tests are skipped with a message,
// except with CI=true, where they fail: CI must test PostgreSQL.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the server tests use when COMPANION_TEST_POSTGRES_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// ServerURL is the URL of the test server.
func ServerURL() string {
	if u := os.Getenv("COMPANION_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// URL creates an empty schema for the test and returns a URL whose
// connections use it (search_path). The schema is dropped when the test
// ends, after the cleanups registered later (closing stores) have run.
func URL(t testing.TB) string {
	t.Helper()
	server := ServerURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI (CI=true) and is unreachable: %v (set COMPANION_TEST_POSTGRES_URL, or start it with .ci/postgres)", err)
		}
		t.Skipf("PostgreSQL is unreachable, skipping (set COMPANION_TEST_POSTGRES_URL or start it with .ci/postgres): %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "companion_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(server, "?") {
		sep = "&"
	}
	return server + sep + "search_path=" + schema
}
