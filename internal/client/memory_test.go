package client_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/client"
)

// TestMemory: what the companion knows of a person, read and replaced;
// their past messages found; everything about them erased; on a thread
// whose id needs escaping.
func TestMemory(t *testing.T) {
	svc := apptest.Start(t, nil)
	c := newClient(t, svc.URL, "")
	ctx := context.Background()
	const thread = "ana's thread/1"

	wm, err := c.WorkingMemory(ctx, thread, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if wm.WorkingMemory != nil || wm.Version != 0 || wm.ThreadExists || wm.Source != "resource" || wm.WorkingMemoryTemplate.Format != "markdown" {
		t.Fatalf("before anything is kept: %+v", wm)
	}
	if _, err := c.Generate(ctx, turn(thread, "Remember that my sister is called Ana.")); err != nil {
		t.Fatal(err)
	}
	wm, err = c.WorkingMemory(ctx, thread, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if wm.WorkingMemory == nil || !strings.HasSuffix(*wm.WorkingMemory, "\n- my sister is called Ana") || wm.Version != 1 || !wm.ThreadExists || wm.UpdatedAt == "" {
		t.Fatalf("after the model noted a fact: %+v", wm)
	}

	edit := "# About the user\n- People who matter to them: Ana, my sister\n"
	up, err := c.SetWorkingMemory(ctx, thread, "u1", edit)
	if err != nil || !up.Success || up.Version != 2 {
		t.Fatalf("set: %+v %v", up, err)
	}
	// Any thread of the resource sees the resource's block.
	if wm, err = c.WorkingMemory(ctx, "another", "u1"); err != nil || wm.WorkingMemory == nil || *wm.WorkingMemory != edit || wm.Version != 2 || wm.ThreadExists {
		t.Fatalf("after the edit, from another thread: %+v %v", wm, err)
	}

	found, err := c.Search(ctx, "u1", "sister", 0)
	if err != nil {
		t.Fatal(err)
	}
	if found.Count != 2 || len(found.Results) != 2 || found.Query != "sister" || found.SearchScope != "resource" {
		t.Fatalf("search: %+v", found)
	}
	var mine bool
	for _, r := range found.Results {
		at, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
		if err != nil || time.Since(at) > time.Hour || r.ThreadID != thread {
			t.Fatalf("result %+v: %v", r, err)
		}
		mine = mine || (r.Role == "user" && r.Content == "Remember that my sister is called Ana.")
	}
	if !mine {
		t.Fatalf("the search does not find the person's message: %+v", found.Results)
	}
	if found, err = c.Search(ctx, "u1", "sister", 1); err != nil || len(found.Results) != 1 {
		t.Fatalf("search with a limit: %+v %v", found, err)
	}
	if found, err = c.Search(ctx, "u2", "sister", 0); err != nil || found.Count != 0 {
		t.Fatalf("another resource's search: %+v %v", found, err)
	}

	erased, err := c.EraseResource(ctx, "u1")
	if err != nil || erased.Threads != 1 || erased.Messages < 2 || erased.WorkingMemories < 1 {
		t.Fatalf("erase: %+v %v", erased, err)
	}
	if wm, err = c.WorkingMemory(ctx, thread, "u1"); err != nil || wm.WorkingMemory != nil || wm.ThreadExists {
		t.Fatalf("after the erasure: %+v %v", wm, err)
	}
	if found, err = c.Search(ctx, "u1", "sister", 0); err != nil || found.Count != 0 {
		t.Fatalf("search after the erasure: %+v %v", found, err)
	}

	// Refusals are the service's errors.
	var e *client.Error
	if _, err := c.Search(ctx, "", "sister", 0); !errors.As(err, &e) || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "resourceId is required") {
		t.Fatalf("search without a resource: %v", err)
	}
	if _, err := c.Search(ctx, "u1", "sister", 1000); !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("search past its limit: %v", err)
	}
	if _, err := c.EraseResource(ctx, ""); err == nil || errors.As(err, &e) {
		t.Fatalf("erasing no resource: %v", err)
	}
}

// TestMemoryWithAPIKey: with a credential, the resource may be left out,
// and another's memory is refused.
func TestMemoryWithAPIKey(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("k3y-for-alice alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(c *app.Config) { c.Auth.APIKeysFile = keys })
	c := newClient(t, svc.URL, "k3y-for-alice")
	ctx := context.Background()
	if _, err := c.SetWorkingMemory(ctx, "t", "", "- Likes: the sea\n"); err != nil {
		t.Fatal(err)
	}
	if wm, err := c.WorkingMemory(ctx, "t", "alice"); err != nil || wm.WorkingMemory == nil || *wm.WorkingMemory != "- Likes: the sea\n" {
		t.Fatalf("alice's working memory: %+v %v", wm, err)
	}
	if _, err := c.Search(ctx, "", "sea", 0); err != nil {
		t.Fatal(err)
	}
	var e *client.Error
	for what, call := range map[string]func() error{
		"working memory": func() error { _, err := c.WorkingMemory(ctx, "t", "bob"); return err },
		"set":            func() error { _, err := c.SetWorkingMemory(ctx, "t", "bob", "x"); return err },
		"search":         func() error { _, err := c.Search(ctx, "bob", "sea", 0); return err },
		"erase":          func() error { _, err := c.EraseResource(ctx, "bob"); return err },
	} {
		if err := call(); !errors.As(err, &e) || e.Status != http.StatusForbidden {
			t.Errorf("%s of another resource: %v", what, err)
		}
	}
	if erased, err := c.EraseResource(ctx, "alice"); err != nil || erased.WorkingMemories != 1 {
		t.Fatalf("alice's erasure: %+v %v", erased, err)
	}
}
