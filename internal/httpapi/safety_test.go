package httpapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/testkit"
)

const safetyPath = "/api/safety/resources/"

// resourceSafety decodes the answer of a resource's safety route.
func resourceSafety(t *testing.T, res *http.Response, b []byte) api.ResourceSafety {
	t.Helper()
	return decodeOK[api.ResourceSafety](t, "the resource's safety", res, b)
}

// TestResourceSafetyAuth: with authentication on, a credential that may
// act for a resource reads its mark and may mark it a minor; only one
// that may act for every resource clears it, so that a minor's key or
// token, or any other credential of the resource, cannot; another
// resource's credential may do neither.
func TestResourceSafetyAuth(t *testing.T) {
	svc := authService(t, nil)
	steps := []struct {
		name, method, resource, body string
		header                       http.Header
		status                       int
		minor                        bool   // what the answer says, when 200
		says                         string // in the error, when not 200
	}{
		{"nothing set yet", "GET", "teen", "", bearer("key-teen"), 200, false, ""},
		{"a minor's key marks its resource", "PUT", "teen", `{"minor":true}`, bearer("key-teen"), 200, true, ""},
		{"a minor's key cannot clear it", "PUT", "teen", `{"minor":false}`, bearer("key-teen"), 403, false, "every resource"},
		{"nor can a minor's token", "PUT", "teen", `{"minor":false}`, bearer(minorToken(t, "teen")), 403, false, "every resource"},
		{"nor the resource's plain token", "PUT", "teen", `{"minor":false}`, bearer(token(t, "teen", time.Time{})), 403, false, "every resource"},
		{"still marked", "GET", "teen", "", bearer(token(t, "teen", time.Time{})), 200, true, ""},
		{"marking again is fine", "PUT", "teen", `{"minor":true}`, bearer(minorToken(t, "teen")), 200, true, ""},
		{"another resource's key reads nothing", "GET", "teen", "", bearer("key-alice"), 403, false, `may not act for resource \"teen\"`},
		{"nor marks", "PUT", "alice", `{"minor":true}`, bearer("key-teen"), 403, false, `may not act for resource \"alice\"`},
		{"a key for every resource clears it", "PUT", "teen", `{"minor":false}`, bearer("key-admin"), 200, false, ""},
		{"cleared", "GET", "teen", "", bearer("key-teen"), 200, false, ""},
		{"and marks any", "PUT", "alice", `{"minor":true}`, bearer("key-admin"), 200, true, ""},
		{"alice reads her mark", "GET", "alice", "", bearer("key-alice"), 200, true, ""},
		{"without a credential", "GET", "alice", "", nil, 401, false, "no credential"},
	}
	for _, st := range steps {
		res, b := svc.DoHeader(t, st.method, safetyPath+st.resource, st.body, st.header)
		if res.StatusCode != st.status {
			t.Fatalf("%s: %d %s, want %d", st.name, res.StatusCode, b, st.status)
		}
		if st.status != 200 {
			if !strings.Contains(string(b), st.says) {
				t.Fatalf("%s: %s, want it to say %q", st.name, b, st.says)
			}
			continue
		}
		rs := resourceSafety(t, res, b)
		if rs.ResourceID != st.resource || rs.Minor != st.minor {
			t.Fatalf("%s: %s, want %s minor %v", st.name, b, st.resource, st.minor)
		}
		if set := rs.UpdatedAt != nil; set != (st.name != "nothing set yet") {
			t.Fatalf("%s: updatedAt %v", st.name, rs.UpdatedAt)
		}
	}
}

// TestResourceSafety: without authentication anyone may read, mark and
// clear; the answer is the setting as stored (updatedAt null before any,
// then when it was set); each change is logged; erasing the resource's
// memory leaves the mark.
func TestResourceSafety(t *testing.T) {
	log := &testkit.Buffer{}
	svc := apptest.StartLogged(t, slog.New(slog.NewTextHandler(log, nil)), nil)
	res, b := svc.Do(t, "GET", safetyPath+"teen", "")
	if rs := resourceSafety(t, res, b); rs.Minor || rs.UpdatedAt != nil || !strings.Contains(string(b), `"updatedAt":null`) {
		t.Fatalf("before any setting: %s", b)
	}
	before := time.Now().UTC()
	res, b = svc.Do(t, "PUT", safetyPath+"teen", `{"minor":true}`)
	rs := resourceSafety(t, res, b)
	at, err := time.Parse(time.RFC3339Nano, *rs.UpdatedAt)
	if !rs.Minor || err != nil || at.Before(before.Truncate(time.Microsecond)) || at.After(time.Now()) {
		t.Fatalf("marked: %s (%v)", b, err)
	}
	if res, got := svc.Do(t, "GET", safetyPath+"teen", ""); string(got) != string(b) {
		t.Fatalf("read back %d %s, want %s", res.StatusCode, got, b)
	}
	if !strings.Contains(log.String(), `level=INFO msg="minor mark set" resource=teen minor=true`) {
		t.Fatalf("the change is not logged:\n%s", log)
	}

	// Erasing what is remembered of the resource leaves its mark.
	if res, b := svc.Post(t, generatePath, `{"threadId":"t1","resourceId":"teen","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
		t.Fatalf("a turn: %d %s", res.StatusCode, b)
	}
	if res, b := svc.Do(t, "DELETE", "/api/memory/resources/teen", ""); res.StatusCode != 200 || !strings.Contains(string(b), `"threads":1`) {
		t.Fatalf("erasing: %d %s", res.StatusCode, b)
	}
	res, b = svc.Do(t, "GET", safetyPath+"teen", "")
	if rs := resourceSafety(t, res, b); !rs.Minor {
		t.Fatalf("after erasing the resource: %s, want it still a minor", b)
	}

	res, b = svc.Do(t, "PUT", safetyPath+"teen", `{"minor":false}`)
	if rs := resourceSafety(t, res, b); rs.Minor || rs.UpdatedAt == nil {
		t.Fatalf("cleared: %s", b)
	}
	// An id escaped in the path is the id.
	res, b = svc.Do(t, "PUT", safetyPath+"a%20teen%2Fb", `{"minor":true}`)
	if rs := resourceSafety(t, res, b); rs.ResourceID != "a teen/b" || !rs.Minor {
		t.Fatalf("an escaped id: %s", b)
	}
}

// TestResourceSafetyBadInput: a body that is not {"minor": true|false},
// a body of another type, a bad id, a query that does not parse: 400 with
// what is wrong; a body not JSON: 415; another method: 405.
func TestResourceSafetyBadInput(t *testing.T) {
	svc := apptest.Start(t, nil)
	long := strings.Repeat("x", 257)
	for _, c := range []struct {
		name, method, path, body, contentType string
		status                                int
		says                                  string
	}{
		{"no minor", "PUT", "teen", `{}`, "", 400, "minor is required"},
		{"minor null", "PUT", "teen", `{"minor":null}`, "", 400, "minor is required"},
		{"another field alone", "PUT", "teen", `{"isMinor":true}`, "", 400, "minor is required"},
		{"a string", "PUT", "teen", `{"minor":"true"}`, "", 400, "minor must be a boolean"},
		{"a number", "PUT", "teen", `{"minor":1}`, "", 400, "minor must be a boolean"},
		{"in another case", "PUT", "teen", `{"Minor":false}`, "", 400, "Minor"},
		{"twice", "PUT", "teen", `{"minor":true,"minor":false}`, "", 400, "minor"},
		{"not JSON", "PUT", "teen", `minor=true`, "", 400, "not valid JSON"},
		{"not an object", "PUT", "teen", `[true]`, "", 400, "must be a JSON object"},
		{"empty", "PUT", "teen", ``, "application/json", 400, "request body is empty"},
		{"not declared JSON", "PUT", "teen", `{"minor":true}`, "text/plain", 415, "Content-Type"},
		{"an id too long", "GET", long, "", "", 400, "longer than 256 bytes"},
		{"an id with a NUL", "PUT", "te%00en", `{"minor":true}`, "", 400, "control characters"},
		{"a blank id", "GET", "%20", "", "", 400, "must not be empty"},
		{"a query that does not parse", "GET", "teen?a=1;b=2", "", "", 400, "the query does not parse"},
		{"another method", "DELETE", "teen", "", "", 405, "use GET, PUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h http.Header
			if c.contentType != "" {
				h = http.Header{"Content-Type": {c.contentType}}
			}
			res, b := svc.DoHeader(t, c.method, safetyPath+c.path, c.body, h)
			if res.StatusCode != c.status || !strings.Contains(string(b), c.says) {
				t.Fatalf("%d %s, want %d saying %q", res.StatusCode, b, c.status, c.says)
			}
		})
	}
	// Nothing above set a mark.
	res, b := svc.Do(t, "GET", safetyPath+"teen", "")
	if rs := resourceSafety(t, res, b); rs.Minor || rs.UpdatedAt != nil {
		t.Fatalf("after the refused requests: %s", b)
	}
}

// TestMarkedMinorGetsBreakReminders: a resource marked a minor through
// the route gets the break reminder in a continuing conversation, once
// the interval has passed (here a microsecond), though its requests do
// not say it is a minor, in generate and in the stream; an unmarked
// resource does not; once the mark is cleared, neither does it.
func TestMarkedMinorGetsBreakReminders(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		svc := apptest.Start(t, func(c *app.Config) {
			c.Storage.DatabaseURL = db
			c.Safety.BreakReminderInterval = time.Microsecond
		})
		if res, b := svc.Do(t, "PUT", safetyPath+"teen", `{"minor":true}`); res.StatusCode != 200 {
			t.Fatalf("marking: %d %s", res.StatusCode, b)
		}
		turn := func(path, thread, resource, text string) string {
			t.Helper()
			res, b := svc.Post(t, path, fmt.Sprintf(`{"threadId":%q,"resourceId":%q,"messages":[{"role":"user","content":%q}]}`, thread, resource, text))
			if res.StatusCode != 200 {
				t.Fatalf("a turn of %s: %d %s", thread, res.StatusCode, b)
			}
			return string(b)
		}
		const reminder = `{"kind":"break-reminder","text":"You have been chatting for a while. This is a good moment to take a break."}`
		for _, c := range []struct {
			resource string
			reminded bool
		}{{"teen", true}, {"adult", false}} {
			th := "t-" + c.resource
			if first := turn(generatePath, th, c.resource, "Hi there."); strings.Contains(first, "break-reminder") {
				t.Fatalf("%s's first turn is reminded: %s", c.resource, first)
			}
			if next := turn(generatePath, th, c.resource, "Can you help me with my homework?"); strings.Contains(next, reminder) != c.reminded {
				t.Fatalf("%s's next turn: reminded %v, want %v: %s", c.resource, !c.reminded, c.reminded, next)
			}
			if streamed := turn(streamPath, th, c.resource, "And with my maths?"); strings.Contains(streamed, reminder) != c.reminded {
				t.Fatalf("%s's streamed turn: reminded %v, want %v: %s", c.resource, !c.reminded, c.reminded, streamed)
			}
		}
		if res, b := svc.Do(t, "PUT", safetyPath+"teen", `{"minor":false}`); res.StatusCode != 200 {
			t.Fatalf("clearing: %d %s", res.StatusCode, b)
		}
		if next := turn(generatePath, "t-teen", "teen", "Thanks!"); strings.Contains(next, "break-reminder") {
			t.Fatalf("a cleared resource is reminded: %s", next)
		}
	})
}
