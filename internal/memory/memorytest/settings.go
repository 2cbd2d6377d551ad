package memorytest

import (
	"context"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// testResourceSettings: a resource's settings read as nothing set before
// any are; once set they read as set (at the time given, in UTC, to the
// microsecond), for that resource alone; a later set replaces them; and
// erasing the resource leaves them, for the minor mark is a safety setting.
func testResourceSettings(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	read := func(resource string) memory.ResourceSettings {
		t.Helper()
		rs, err := s.ResourceSettings(ctx, resource)
		if err != nil {
			t.Fatalf("reading the settings of %s: %v", resource, err)
		}
		return rs
	}
	setTo := func(resource string, minor bool, at time.Time) {
		t.Helper()
		if err := s.SetResourceSettings(ctx, memory.ResourceSettings{ResourceID: resource, Minor: minor, UpdatedAt: at}); err != nil {
			t.Fatalf("setting the settings of %s: %v", resource, err)
		}
	}
	if got := read("teen"); got != (memory.ResourceSettings{ResourceID: "teen"}) {
		t.Fatalf("before any setting: %+v", got)
	}

	// A time of another zone, with nanoseconds: stored in UTC, to the microsecond.
	at := base.Add(789 * time.Nanosecond).In(time.FixedZone("CET", 3600))
	setTo("teen", true, at)
	got := read("teen")
	if got.ResourceID != "teen" || !got.Minor || !got.UpdatedAt.Equal(base) || got.UpdatedAt.Location() != time.UTC {
		t.Fatalf("after marking a minor: %+v, want minor at %s", got, base)
	}
	for _, other := range []string{"adult", "Teen", "teen "} {
		if got := read(other); got.Minor || !got.UpdatedAt.IsZero() {
			t.Fatalf("%q shares the settings of teen: %+v", other, got)
		}
	}

	// A later set replaces it: cleared, then marked again.
	setTo("teen", false, base.Add(time.Hour))
	if got := read("teen"); got.Minor || !got.UpdatedAt.Equal(base.Add(time.Hour)) {
		t.Fatalf("after clearing: %+v", got)
	}
	setTo("teen", true, base.Add(2*time.Hour))
	setTo("adult", false, base.Add(2*time.Hour))
	if got := read("adult"); got.Minor || !got.UpdatedAt.Equal(base.Add(2*time.Hour)) {
		t.Fatalf("a resource set not a minor: %+v", got)
	}

	// Erasing the resource erases what is remembered of it, not its mark.
	seedThread(t, s, "teen-1", "teen", "", "Hi.", "Hello!")
	erased, err := s.EraseResource(ctx, "teen")
	if err != nil || erased.Threads != 1 {
		t.Fatalf("erasing: %+v, %v", erased, err)
	}
	if got := read("teen"); !got.Minor || !got.UpdatedAt.Equal(base.Add(2*time.Hour)) {
		t.Fatalf("after erasing the resource: %+v, want it still a minor", got)
	}
}
