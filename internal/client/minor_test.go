package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/client"
)

// TestResourceSafety: a resource's mark as a minor, read, set by the
// resource's own key, refused to it to clear, cleared by a key of every
// resource; on an id that needs escaping; the body as the service sent it.
func TestResourceSafety(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("key-admin *\nkey-teen teen/1 minor\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(c *app.Config) { c.Auth.APIKeysFile = keys })
	teen, admin := newClient(t, svc.URL, "key-teen"), newClient(t, svc.URL, "key-admin")
	ctx := context.Background()
	const resource = "teen/1"

	rs, raw, err := teen.ResourceSafety(ctx, resource)
	if err != nil || rs.ResourceID != resource || rs.Minor || rs.UpdatedAt != nil {
		t.Fatalf("before any setting: %+v %v", rs, err)
	}
	var again api.ResourceSafety
	if json.Unmarshal(raw, &again) != nil || again.ResourceID != resource {
		t.Fatalf("the body: %s", raw)
	}
	if rs, _, err = teen.SetMinor(ctx, resource, true); err != nil || !rs.Minor || rs.UpdatedAt == nil {
		t.Fatalf("marked by its own key: %+v %v", rs, err)
	}
	var e *client.Error
	if _, _, err = teen.SetMinor(ctx, resource, false); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Fatalf("cleared by its own key: %v, want 403", err)
	}
	if rs, _, err = admin.ResourceSafety(ctx, resource); err != nil || !rs.Minor {
		t.Fatalf("still marked: %+v %v", rs, err)
	}
	if rs, _, err = admin.SetMinor(ctx, resource, false); err != nil || rs.Minor {
		t.Fatalf("cleared by a key of every resource: %+v %v", rs, err)
	}
	if _, _, err = teen.ResourceSafety(ctx, "someone-else"); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Fatalf("another resource's: %v, want 403", err)
	}
	if _, _, err = admin.ResourceSafety(ctx, ""); err == nil || errors.As(err, &e) {
		t.Fatalf("no resource: %v, want an error before any request", err)
	}
}
