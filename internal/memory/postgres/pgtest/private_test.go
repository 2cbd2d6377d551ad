package pgtest_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
)

// TestPrivateCrashAndStart: a private server crashed and started again
// keeps what was committed before the crash.
func TestPrivateCrashAndStart(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Private(t)
	exec := func(q string) error {
		conn, err := pgx.Connect(ctx, s.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, q)
		return err
	}
	if err := exec(`CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	s.Crash(t)
	// What the crashed process leaves must not be collected away.
	runtime.GC()
	runtime.GC()
	if err := exec(`SELECT 1`); err == nil {
		t.Fatal("the crashed server answers")
	}
	s.Start(t)
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT n FROM kept`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after the crash: %d %v", n, err)
	}
}
