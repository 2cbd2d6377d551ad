package app_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/testkit"
)

// TestReadyOnAFullDisk: with its SQLite file on a filesystem that fills
// up, the service answers 503 to /ready at once, saying why, while turns
// cannot be stored; and 200 again once there is room (within
// memory.WriteHold of the failed turn, which its own small write cannot
// clear).
func TestReadyOnAFullDisk(t *testing.T) {
	dir := testkit.SmallFS(t, 2<<20)
	svc := apptest.Start(t, func(c *app.Config) { c.Storage.DatabaseURL = "sqlite://" + filepath.Join(dir, "companion.db") })
	turn := func(text string) (int, string) {
		res, b := svc.Post(t, "/api/agents/companionAgent/generate",
			`{"threadId":"t-`+text[:3]+`","resourceId":"r","messages":[{"role":"user","content":"`+text+`"}]}`)
		return res.StatusCode, string(b)
	}
	if status, b := turn("Hello"); status != 200 {
		t.Fatalf("a turn before the disk filled: %d %s", status, b)
	}
	if res, b := svc.Do(t, "GET", "/ready", ""); res.StatusCode != 200 {
		t.Fatalf("/ready before the disk filled: %d %s", res.StatusCode, b)
	}

	free := testkit.FillFS(t, dir)
	if status, b := turn("Full " + strings.Repeat("x", 60<<10)); status != 503 {
		t.Fatalf("a turn on a full disk: %d %s", status, b)
	}
	res, b := svc.Do(t, "GET", "/ready", "")
	if res.StatusCode != 503 || !strings.Contains(string(b), "the conversation store cannot write: the disk is full") || res.Header.Get("Retry-After") == "" {
		t.Fatalf("/ready on a full disk: %d %v %s", res.StatusCode, res.Header, b)
	}

	free()
	deadline := time.Now().Add(memory.WriteHold + 3*time.Second)
	for {
		res, b := svc.Do(t, "GET", "/ready", "")
		if res.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready once there is room: %d %s", res.StatusCode, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, b := turn("Room again"); status != 200 {
		t.Fatalf("a turn once there is room: %d %s", status, b)
	}
}
