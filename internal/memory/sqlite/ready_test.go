package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/sqlite"
	"github.com/companionhq/companion/internal/testkit"
)

// TestPingOnAFullDisk: on a filesystem that is full, Ping reports a store
// that cannot write, with the reason; once there is room again it reports
// it as soon as a turn's write succeeds. A turn's write failing for want
// of room is remembered even while Ping's own small write goes through.
func TestPingOnAFullDisk(t *testing.T) {
	dir := testkit.SmallFS(t, 2<<20)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "companion.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("a fresh store: %v", err)
	}
	// write stores a turn of a message of n bytes on thread id.
	write := func(id string, n int) error {
		now := time.Now()
		th := memory.Thread{ID: id, ResourceID: "r", Metadata: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
		turn, _, _, err := memory.LockAndBegin(ctx, s, th, 20, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
			text := strings.Repeat("x", n)
			return []memory.Message{{ID: id + "-1", Role: "user", Text: text, Model: json.RawMessage(`[]`), CreatedAt: now}}, nil
		})
		if err == nil {
			turn.Unlock()
		}
		return err
	}
	if err := write("before", 1000); err != nil {
		t.Fatalf("a turn before the disk filled: %v", err)
	}

	free := testkit.FillFS(t, dir)
	err = write("big", 512<<10)
	var we *memory.WriteError
	if !errors.As(err, &we) || we.Reason != "the disk is full" {
		t.Fatalf("a turn on a full disk: %v, want a write error saying the disk is full", err)
	}
	if err := s.Ping(ctx); !errors.As(err, &we) || we.Reason != "the disk is full" {
		t.Fatalf("Ping on a full disk: %v", err)
	}

	free()
	if err := s.Ping(ctx); !errors.As(err, &we) {
		t.Fatalf("Ping forgot the turn that failed %s ago: %v", memory.WriteHold, err)
	}
	if err := write("after", 1000); err != nil {
		t.Fatalf("a turn once there is room again: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after a turn's write succeeded: %v", err)
	}
}

// TestPingLockedElsewhere: while another process holds the database's
// write lock, Ping reports a store that cannot write within its deadline,
// and a store that can once the lock is free.
func TestPingLockedElsewhere(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "companion.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Another process holds the write lock for longer than the busy
	// timeout would wait; the test's deadline is shorter than it.
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var we *memory.WriteError
	if err := s.Ping(pctx); !errors.As(err, &we) {
		t.Fatalf("Ping with the write lock held elsewhere: %v, want a write error", err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(fmt.Errorf("Ping once the lock is free: %w", err))
	}
}
