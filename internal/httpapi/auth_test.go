package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

// secret is the HS256 secret of the tests' development tokens.
const secret = "a-development-secret-of-at-least-32-bytes"

// authService runs the service with API keys and HS256 tokens on.
func authService(t *testing.T, configure func(*app.Config)) *apptest.Service {
	t.Helper()
	dir := t.TempDir()
	hashed := sha256.Sum256([]byte("key-hashed"))
	keys := strings.Join([]string{
		"# callers of the tests",
		"key-alice alice",
		"key-team alice,bob   # may act for either",
		"key-admin *",
		"key-teen teen minor # a minor's app",
		"sha256:" + hex.EncodeToString(hashed[:]) + " carol",
	}, "\n")
	keyFile := filepath.Join(dir, "keys")
	secretFile := filepath.Join(dir, "secret")
	for path, body := range map[string]string{keyFile: keys, secretFile: secret} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return apptest.Start(t, func(c *app.Config) {
		c.Auth.APIKeysFile = keyFile
		c.Auth.JWTSecretFile = secretFile
		if configure != nil {
			configure(c)
		}
	})
}

// token is an HS256 token for sub, valid for a minute unless exp is given.
func token(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	if exp.IsZero() {
		exp = time.Now().Add(time.Minute)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "exp": exp.Unix(), "iat": time.Now().Unix()}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// minorToken is an HS256 token for sub that marks its user a minor.
func minorToken(t *testing.T, sub string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "minor": true, "exp": time.Now().Add(time.Minute).Unix(), "iat": time.Now().Unix()}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bearer(v string) http.Header { return http.Header{"Authorization": {"Bearer " + v}} }

// TestEveryRouteWithEveryCaller walks each route with each kind of caller:
// none, a wrong credential, an expired token, a key for one resource, a key
// for two, a key for any, a hashed key, a token, and each asking for a
// resource it may and may not act for.
func TestEveryRouteWithEveryCaller(t *testing.T) {
	svc := authService(t, nil)
	// Threads of alice and bob, made by callers that may.
	for _, c := range []struct{ thread, resource, key string }{{"a1", "alice", "key-alice"}, {"b1", "bob", "key-team"}, {"c1", "carol", "key-hashed"}} {
		res, b := svc.DoHeader(t, "POST", generatePath, fmt.Sprintf(`{"threadId":%q,"resourceId":%q,"messages":[{"role":"user","content":"Hi"}]}`, c.thread, c.resource), bearer(c.key))
		if res.StatusCode != 200 {
			t.Fatalf("creating %s: %d %s", c.thread, res.StatusCode, b)
		}
	}
	callers := []struct {
		name   string
		header http.Header
	}{
		{"none", nil},
		{"unknown key", bearer("key-nobody")},
		{"not bearer", http.Header{"Authorization": {"Basic a2V5LWFsaWNlOg=="}}},
		{"expired token", bearer(token(t, "alice", time.Now().Add(-time.Hour)))},
		{"forged token", bearer(token(t, "alice", time.Time{}) + "x")},
		{"alice key", bearer("key-alice")},
		{"team key", bearer("key-team")},
		{"admin key", bearer("key-admin")},
		{"alice token", bearer(token(t, "alice", time.Time{}))},
		{"bob token", bearer(token(t, "bob", time.Time{}))},
	}
	run := func(thread, resource string) string {
		rid := ""
		if resource != "" {
			rid = fmt.Sprintf(`,"resourceId":%q`, resource)
		}
		return fmt.Sprintf(`{"threadId":%q%s,"messages":[{"role":"user","content":"Hello"}]}`, thread, rid)
	}
	routes := []struct {
		name, method, path, body string
		// want is the status per caller; callers not named get 401.
		want map[string]int
	}{
		{"health", "GET", "/health", "", map[string]int{"*": 200}},
		{"ready", "GET", "/ready", "", map[string]int{"*": 200}},
		{"generate as alice", "POST", generatePath, run("a1", "alice"),
			map[string]int{"alice key": 200, "team key": 200, "admin key": 200, "alice token": 200, "bob token": 403}},
		{"generate naming no resource", "POST", generatePath, run("a1", ""),
			map[string]int{"alice key": 200, "team key": 400, "admin key": 400, "alice token": 200, "bob token": 403}},
		{"stream as bob", "POST", streamPath, run("b1", "bob"),
			map[string]int{"alice key": 403, "team key": 200, "admin key": 200, "alice token": 403, "bob token": 200}},
		{"list alice's threads", "GET", "/api/memory/threads?resourceId=alice", "",
			map[string]int{"alice key": 200, "team key": 200, "admin key": 200, "alice token": 200, "bob token": 403}},
		{"list own threads", "GET", "/api/memory/threads", "",
			map[string]int{"alice key": 200, "team key": 400, "admin key": 400, "alice token": 200, "bob token": 200}},
		{"get alice's thread", "GET", "/api/memory/threads/a1?resourceId=alice", "",
			map[string]int{"alice key": 200, "team key": 200, "admin key": 200, "alice token": 200, "bob token": 403}},
		{"get a thread as its owner by default", "GET", "/api/memory/threads/a1", "",
			map[string]int{"alice key": 200, "team key": 400, "admin key": 400, "alice token": 200, "bob token": 403}},
		{"messages of bob's thread", "GET", "/api/memory/threads/b1/messages?resourceId=bob", "",
			map[string]int{"alice key": 403, "team key": 200, "admin key": 200, "alice token": 403, "bob token": 200}},
		{"rename carol's thread", "PATCH", "/api/memory/threads/c1?resourceId=carol", `{"title":"x"}`,
			map[string]int{"alice key": 403, "team key": 403, "admin key": 200, "alice token": 403, "bob token": 403}},
		{"delete a missing thread of alice", "DELETE", "/api/memory/threads/none?resourceId=alice", "",
			map[string]int{"alice key": 404, "team key": 404, "admin key": 404, "alice token": 404, "bob token": 403}},
		{"read alice's minor mark", "GET", "/api/safety/resources/alice", "",
			map[string]int{"alice key": 200, "team key": 200, "admin key": 200, "alice token": 200, "bob token": 403}},
		{"mark bob a minor", "PUT", "/api/safety/resources/bob", `{"minor":true}`,
			map[string]int{"alice key": 403, "team key": 200, "admin key": 200, "alice token": 403, "bob token": 200}},
		{"clear bob's minor mark", "PUT", "/api/safety/resources/bob", `{"minor":false}`,
			map[string]int{"alice key": 403, "team key": 403, "admin key": 200, "alice token": 403, "bob token": 403}},
		{"metrics", "GET", "/metrics", "",
			map[string]int{"alice key": 200, "team key": 200, "admin key": 200, "alice token": 200, "bob token": 200}},
	}
	for _, rt := range routes {
		for _, c := range callers {
			t.Run(rt.name+"/"+c.name, func(t *testing.T) {
				want, ok := rt.want[c.name]
				if !ok {
					want, ok = rt.want["*"]
				}
				if !ok {
					want = 401
				}
				res, b := svc.DoHeader(t, rt.method, rt.path, rt.body, c.header)
				if res.StatusCode != want {
					t.Fatalf("status %d, want %d: %s", res.StatusCode, want, b)
				}
				if want >= 400 {
					var e struct{ Error string }
					if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
						t.Fatalf("error body %q is not {\"error\": ...}", b)
					}
				}
				if want == 401 && res.Header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			})
		}
	}
}

// TestAuthErrors: what a refused caller is told.
func TestAuthErrors(t *testing.T) {
	svc := authService(t, nil)
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		error  string
	}{
		{"none", nil, 401, "no credential: send Authorization: Bearer <API key or token>"},
		{"two headers", http.Header{"Authorization": {"Bearer key-alice", "Bearer key-admin"}}, 401, "send one Authorization header, not 2"},
		{"basic", http.Header{"Authorization": {"Basic eDp5"}}, 401, `the Authorization header must be "Bearer <API key or token>"`},
		{"unknown key", bearer("key-nobody"), 401, "the API key is not valid"},
		{"expired", bearer(token(t, "alice", time.Now().Add(-time.Hour))), 401, "the token has expired"},
		{"other resource", bearer("key-alice"), 403, `this credential may not act for resource "bob"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := svc.DoHeader(t, "POST", generatePath, `{"threadId":"t","resourceId":"bob","messages":[{"role":"user","content":"Hi"}]}`, tc.header)
			var e struct{ Error string }
			_ = json.Unmarshal(b, &e)
			if res.StatusCode != tc.status || e.Error != tc.error {
				t.Fatalf("%d %s, want %d %q", res.StatusCode, b, tc.status, tc.error)
			}
			if strings.Contains(string(b), "key-") {
				t.Fatalf("the error repeats the key: %s", b)
			}
		})
	}
}

// TestAuthOffKeepsTheContract: without credentials configured nothing
// changes: the resource is the one the request names.
func TestAuthOffKeepsTheContract(t *testing.T) {
	svc := apptest.Start(t, nil)
	res, b := svc.Post(t, generatePath, `{"threadId":"t","resourceId":"anyone","messages":[{"role":"user","content":"Hi"}]}`)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

// TestKeysReload: a key added to the file works after a reload, a removed
// one stops working, and a broken file keeps the keys in use.
func TestKeysReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("old-key alice\n")
	svc := apptest.Start(t, func(c *app.Config) { c.Auth.APIKeysFile = file })
	status := func(key string) int {
		res, _ := svc.DoHeader(t, "GET", "/api/memory/threads", "", bearer(key))
		return res.StatusCode
	}
	if status("old-key") != 200 || status("new-key") != 401 {
		t.Fatal("before the reload")
	}
	write("old-key alice\nnew-key alice\n") // both, while clients move over
	if err := svc.App.ReloadCredentials(); err != nil {
		t.Fatal(err)
	}
	if status("old-key") != 200 || status("new-key") != 200 {
		t.Fatal("during the rotation both keys must work")
	}
	write("new-key alice\n")
	if err := svc.App.ReloadCredentials(); err != nil {
		t.Fatal(err)
	}
	if status("old-key") != 401 || status("new-key") != 200 {
		t.Fatal("after the rotation only the new key may work")
	}
	write("new-key\n") // no resources: refused
	if err := svc.App.ReloadCredentials(); err == nil {
		t.Fatal("a broken file was accepted")
	}
	if status("new-key") != 200 {
		t.Fatal("a broken file must leave the keys in use")
	}
}
