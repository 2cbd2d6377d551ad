package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/companionhq/companion/internal/auth"
	"github.com/companionhq/companion/internal/testkit"
)

// Keys long and odd enough that finding one in an error or a log is no
// accident.
const (
	keyA = "kA-3f9b1c7e2d8a4605"
	keyB = "kB-71e0c4a9b2f85d36"
	keyC = "kC-c0ffee5eed5a1d00"
)

func digest(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:])
}

func subject(key string) string { return "key:" + digest(key)[:8] }

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newAuth builds an Authenticator that is closed when the test ends.
func newAuth(t *testing.T, cfg auth.Config) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

// refused asserts that err is an *auth.Error with message want.
func refused(t *testing.T, err error, want string) *auth.Error {
	t.Helper()
	var ae *auth.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *auth.Error", err, err)
	}
	if ae.Message != want {
		t.Fatalf("message %q, want %q (cause: %v)", ae.Message, want, ae.Err)
	}
	return ae
}

func TestKeyFileAccepted(t *testing.T) {
	tests := []struct {
		name string
		file string
		key  string
		want auth.Identity
	}{
		{"one resource", keyA + " alice\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Resources: []string{"alice"}}},
		{"several resources are sorted and unique", keyA + " carol,alice,bob,alice\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Resources: []string{"alice", "bob", "carol"}}},
		{"any resource", keyA + " *\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Any: true}},
		{"comments, blank lines, tabs", "# keys for staging\n\n\t" + keyB + "\tbob   # rotated in May\n  \n" + keyA + " alice#no space before the comment\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Resources: []string{"alice"}}},
		{"sha256 form", "sha256:" + digest(keyA) + " alice\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Resources: []string{"alice"}}},
		{"sha256 form in capitals", "sha256:" + strings.ToUpper(digest(keyA)) + " alice\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Resources: []string{"alice"}}},
		{"no newline at the end", keyB + " bob,alice", keyB,
			auth.Identity{Method: "api-key", Subject: subject(keyB), Resources: []string{"alice", "bob"}}},
		{"a dotted key not shaped like a JWT", "v1.k.e.y alice\n", "v1.k.e.y",
			auth.Identity{Method: "api-key", Subject: subject("v1.k.e.y"), Resources: []string{"alice"}}},
		{"a minor's key", keyA + " alice minor # a teenager's app\n", keyA,
			auth.Identity{Method: "api-key", Subject: subject(keyA), Resources: []string{"alice"}, Minor: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAuth(t, auth.Config{APIKeysFile: writeFile(t, "keys", tt.file)})
			if !a.Enabled() {
				t.Fatal("Enabled() = false with a key file")
			}
			got, err := a.Authenticate(context.Background(), tt.key)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("identity %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestKeyFileRefused(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string // in the error, after the file's name
	}{
		{"a key without resources", "# ok\n" + keyA + "\n", "line 2: a key without resources"},
		{"a key without resources, then a comment", keyA + " # alice\n", "line 1: a key without resources"},
		{"an empty resource", keyA + " alice,,bob\n", "line 1: an empty resource name"},
		{"a trailing comma", keyA + " alice,\n", "line 1: an empty resource name"},
		{"a leading comma", keyA + " ,alice\n", "line 1: an empty resource name"},
		{"a space in the list", keyA + " alice, bob\n", "line 1: an unknown attribute \"bob\" after the resources"},
		{"too many fields", keyA + " alice minor more\n", "line 1: 4 fields where 2 or 3 were expected"},
		{"* mixed with names", keyA + " alice,*\n", "line 1: * mixed with resource names"},
		{"sha256 form too short", "sha256:" + digest(keyA)[:63] + " alice\n", "line 1: a malformed sha256 key"},
		{"sha256 form too long", "sha256:" + digest(keyA) + "00 alice\n", "line 1: a malformed sha256 key"},
		{"sha256 form not hex", "sha256:" + strings.Repeat("zz", 32) + " alice\n", "line 1: a malformed sha256 key"},
		{"sha256 form empty", "sha256: alice\n", "line 1: a malformed sha256 key"},
		{"the same key twice", keyA + " alice\n" + keyB + " bob\n\n" + keyA + " carol\n", "line 4: the same key as line 1"},
		{"the same key in clear and as sha256", keyA + " alice\nsha256:" + digest(keyA) + " bob\n", "line 2: the same key as line 1"},
		{"a key shaped like a JWT", "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl alice\n", "line 1: the key is shaped like a JWT"},
		{"only comments", "# nothing yet\n\n   # really\n", "holds no keys"},
		{"empty", "", "holds no keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "keys", tt.file)
			_, err := auth.New(context.Background(), auth.Config{APIKeysFile: path})
			if err == nil {
				t.Fatal("New accepted the file")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want the file's name and %q", msg, tt.want)
			}
			for _, secret := range []string{keyA, keyB, digest(keyA), "c2lnbmF0dXJl"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q shows a key", msg)
				}
			}
		})
	}
}

func TestKeyFileMissing(t *testing.T) {
	_, err := auth.New(context.Background(), auth.Config{APIKeysFile: filepath.Join(t.TempDir(), "absent")})
	if err == nil || !strings.Contains(err.Error(), "reading the API key file") {
		t.Fatalf("error %v, want one about reading the file", err)
	}
}

func TestAuthenticateAPIKey(t *testing.T) {
	file := "# old and new key for alice, during a rotation\n" +
		keyA + " alice\n" +
		"sha256:" + digest(keyB) + " alice\n" +
		keyC + " *\n"
	a := newAuth(t, auth.Config{APIKeysFile: writeFile(t, "keys", file)})
	ctx := context.Background()

	for _, key := range []string{keyA, keyB, "  " + keyA + "\t"} {
		id, err := a.Authenticate(ctx, key)
		if err != nil {
			t.Fatalf("Authenticate(%q): %v", key, err)
		}
		if !id.Allows("alice") || id.Allows("bob") {
			t.Errorf("identity %+v: want alice and only alice", id)
		}
	}
	idA, _ := a.Authenticate(ctx, keyA)
	idB, _ := a.Authenticate(ctx, keyB)
	if idA.Subject == idB.Subject {
		t.Errorf("two keys share the subject %q", idA.Subject)
	}
	idC, err := a.Authenticate(ctx, keyC)
	if err != nil || !idC.Any || !idC.Allows("anyone") {
		t.Errorf("the * key: %+v, %v", idC, err)
	}

	tests := []struct {
		name, bearer, want string
	}{
		{"unknown key", "kZ-0000000000000000", "the API key is not valid"},
		{"a known key with a suffix", keyA + "x", "the API key is not valid"},
		{"a known key's digest", digest(keyA), "the API key is not valid"},
		{"a known key's sha256 form", "sha256:" + digest(keyB), "the API key is not valid"},
		{"empty", "", "no credential: send Authorization: Bearer <API key or token>"},
		{"blank", "  \t", "no credential: send Authorization: Bearer <API key or token>"},
		{"a JWT with only API keys configured", "eyJhbGciOi.eyJzdWIiOi.c2ln", "the API key is not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := a.Authenticate(ctx, tt.bearer)
			refused(t, err, tt.want)
			if !reflect.DeepEqual(id, auth.Identity{}) {
				t.Errorf("a refusal came with the identity %+v", id)
			}
		})
	}
}

// A key written as sha256:HEX and the same key in clear are the same key.
func TestSHA256FormAuthenticatesLikeTheClearKey(t *testing.T) {
	clear := newAuth(t, auth.Config{APIKeysFile: writeFile(t, "clear", keyA+" bob,alice\n")})
	hashed := newAuth(t, auth.Config{APIKeysFile: writeFile(t, "hashed", "sha256:"+digest(keyA)+" bob,alice\n")})
	got1, err1 := clear.Authenticate(context.Background(), keyA)
	got2, err2 := hashed.Authenticate(context.Background(), keyA)
	if err1 != nil || err2 != nil {
		t.Fatalf("Authenticate: %v, %v", err1, err2)
	}
	if !reflect.DeepEqual(got1, got2) {
		t.Errorf("clear key gives %+v, sha256 form %+v", got1, got2)
	}
}

// The identity returned is the caller's to change.
func TestIdentityIsACopy(t *testing.T) {
	a := newAuth(t, auth.Config{APIKeysFile: writeFile(t, "keys", keyA+" alice,bob\n")})
	id, _ := a.Authenticate(context.Background(), keyA)
	id.Resources[0] = "mallory"
	again, _ := a.Authenticate(context.Background(), keyA)
	if again.Resources[0] != "alice" {
		t.Errorf("changing one identity changed the next: %v", again.Resources)
	}
}

func TestReload(t *testing.T) {
	var logs testkit.Buffer
	path := writeFile(t, "keys", keyA+" alice\n")
	a := newAuth(t, auth.Config{APIKeysFile: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	rewrite := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	accepts := func(key string, want bool) {
		t.Helper()
		_, err := a.Authenticate(ctx, key)
		if (err == nil) != want {
			t.Errorf("Authenticate(%s...): err %v, want accepted %v", key[:3], err, want)
		}
	}

	// Add the new key: both work.
	rewrite(keyA + " alice\n" + keyB + " alice\n")
	if err := a.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	accepts(keyA, true)
	accepts(keyB, true)

	// Retire the old key.
	rewrite(keyB + " alice\n")
	if err := a.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	accepts(keyA, false)
	accepts(keyB, true)

	// A broken file keeps the keys in force.
	rewrite(keyB + " alice\n" + keyC + " alice,,bob\n")
	err := a.Reload()
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), keyC) {
		t.Fatalf("Reload of a broken file: %v; want an error naming line 2 and not the key", err)
	}
	accepts(keyB, true)
	accepts(keyC, false)

	// So does a file that is gone.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err == nil {
		t.Fatal("Reload of a missing file succeeded")
	}
	accepts(keyB, true)

	for _, key := range []string{keyA, keyB, keyC} {
		if strings.Contains(logs.String(), key) {
			t.Errorf("the log shows a key:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "api keys reloaded") {
		t.Errorf("no reload in the log:\n%s", logs.String())
	}
}

// Authenticate runs while Reload swaps the keys; run with -race.
func TestReloadWhileAuthenticating(t *testing.T) {
	path := writeFile(t, "keys", keyA+" alice\n")
	a := newAuth(t, auth.Config{APIKeysFile: path})
	ctx := context.Background()

	var stop atomic.Bool
	var failures atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := a.Authenticate(ctx, keyA); err != nil {
					failures.Add(1)
				}
				a.Authenticate(ctx, keyB) // accepted or not, depending on the file
			}
		})
	}
	contents := []string{keyA + " alice\n", keyA + " alice\n" + keyB + " bob\n", keyB + " bob\n" + keyA + " alice,carol\n"}
	for i := range 200 {
		// Replace the file whole, as an editor or a deploy would.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(contents[i%len(contents)]), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		if err := a.Reload(); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("a key present in every version of the file was refused %d times", n)
	}
}

func TestReloadWithoutKeyFile(t *testing.T) {
	a := newAuth(t, auth.Config{})
	if err := a.Reload(); err != nil {
		t.Errorf("Reload without a key file: %v", err)
	}
}

func TestDisabled(t *testing.T) {
	a := newAuth(t, auth.Config{})
	if a.Enabled() {
		t.Fatal("Enabled() with nothing configured")
	}
	_, err := a.Authenticate(context.Background(), keyA)
	refused(t, err, "authentication is not configured")
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name     string
		id       auth.Identity
		allows   map[string]bool
		single   string
		singleOK bool
	}{
		{"one", auth.Identity{Resources: []string{"alice"}}, map[string]bool{"alice": true, "bob": false, "": false}, "alice", true},
		{"two", auth.Identity{Resources: []string{"alice", "bob"}}, map[string]bool{"alice": true, "bob": true, "carol": false}, "", false},
		{"any", auth.Identity{Any: true}, map[string]bool{"alice": true, "bob": true}, "", false},
		{"none", auth.Identity{}, map[string]bool{"alice": false}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for r, want := range tt.allows {
				if got := tt.id.Allows(r); got != want {
					t.Errorf("Allows(%q) = %v, want %v", r, got, want)
				}
			}
			got, ok := tt.id.Single()
			if got != tt.single || ok != tt.singleOK {
				t.Errorf("Single() = %q, %v; want %q, %v", got, ok, tt.single, tt.singleOK)
			}
		})
	}
}
