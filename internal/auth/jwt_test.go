package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/companionhq/companion/internal/auth"
	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/fakeclock"
)

const (
	issuer   = "https://idp.example"
	audience = "companion"
)

// newClock is a fake clock at a fixed time.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

// signer is a signing key as an identity provider holds it.
type signer struct {
	kid    string
	method jwt.SigningMethod
	key    crypto.Signer
}

// RSA keys are slow to make; the tests share a few.
var rsaKeys = sync.OnceValue(func() []*rsa.PrivateKey {
	keys := make([]*rsa.PrivateKey, 3)
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

func rsaSigner(kid string, i int) signer {
	return signer{kid: kid, method: jwt.SigningMethodRS256, key: rsaKeys()[i]}
}

func ecSigner(t *testing.T, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, method: jwt.SigningMethodES256, key: k}
}

func edSigner(t *testing.T, kid string) signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, method: jwt.SigningMethodEdDSA, key: k}
}

// sign returns claims signed by s, its kid in the header.
func (s signer) sign(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(s.method, claims)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	raw, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// claims are valid claims for alice at c's time, changed by edits (a nil
// value deletes the claim).
func claims(c *fakeclock.Clock, edits jwt.MapClaims) jwt.MapClaims {
	now := c.Now()
	m := jwt.MapClaims{
		"sub": "alice",
		"iss": issuer,
		"aud": audience,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range edits {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// idp is an identity provider's JWKS endpoint.
type idp struct {
	srv     *httptest.Server
	mu      sync.Mutex
	body    []byte
	down    bool
	fetches atomic.Int32
}

func newIDP(t *testing.T, keys ...signer) *idp {
	t.Helper()
	p := &idp{}
	p.publish(t, keys...)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		body, down := p.body, p.down
		p.mu.Unlock()
		if down {
			http.Error(w, "identity provider down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// publish replaces the key set the endpoint serves.
func (p *idp) publish(t *testing.T, keys ...signer) {
	t.Helper()
	set := jwkset.NewMemoryStorage()
	for _, s := range keys {
		jwk, err := jwkset.NewJWKFromKey(s.key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			KID: s.kid,
			ALG: jwkset.ALG(s.method.Alg()),
			USE: jwkset.UseSig,
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := set.KeyWrite(context.Background(), jwk); err != nil {
			t.Fatal(err)
		}
	}
	body, err := set.JSONPublic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.serve(body)
}

func (p *idp) serve(body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.body = body
}

func (p *idp) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// jwtConfig is a Config for tokens from p, checked at c's time.
func jwtConfig(p *idp, c *fakeclock.Clock) auth.Config {
	return auth.Config{
		JWKSURL:  p.srv.URL + "/.well-known/jwks.json",
		Issuer:   issuer,
		Audience: audience,
		Now:      c.Now,
	}
}

// secretFile writes an HS256 secret file and returns its path and the
// secret.
func secretFile(t *testing.T) (string, []byte) {
	t.Helper()
	secret := []byte("dev-secret-0123456789abcdefghijklmnopqrstuvwxyz")
	return writeFile(t, "secret", "\n  "+string(secret)+"\n"), secret
}

func TestJWTAccepted(t *testing.T) {
	c := newClock()
	rs, ec, ed := rsaSigner("rsa-1", 0), ecSigner(t, "ec-1"), edSigner(t, "ed-1")
	ps := signer{kid: "ps-1", method: jwt.SigningMethodPS256, key: rsaKeys()[1]}
	p := newIDP(t, rs, ec, ed, ps)
	a := newAuth(t, jwtConfig(p, c))
	if !a.Enabled() {
		t.Fatal("Enabled() = false with a JWKS")
	}
	want := auth.Identity{Method: "jwt", Subject: "alice", Resources: []string{"alice"}}
	for _, s := range []signer{rs, ec, ed, ps} {
		t.Run(s.method.Alg(), func(t *testing.T) {
			got, err := a.Authenticate(context.Background(), s.sign(t, claims(c, nil)))
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("identity %+v, want %+v", got, want)
			}
		})
	}
	if n := p.fetches.Load(); n != 1 {
		t.Errorf("the JWKS was fetched %d times, want once", n)
	}
}

func TestJWTClaims(t *testing.T) {
	c := newClock()
	s := rsaSigner("rsa-1", 0)
	p := newIDP(t, s)
	a := newAuth(t, jwtConfig(p, c))
	now := c.Now()
	tests := []struct {
		name      string
		edits     jwt.MapClaims
		resources []string // nil: refused
		refusal   string
	}{
		{"valid", nil, []string{"alice"}, ""},
		{"expired beyond the leeway", jwt.MapClaims{"exp": now.Add(-31 * time.Second).Unix()}, nil, "the token has expired"},
		{"expired within the leeway", jwt.MapClaims{"exp": now.Add(-20 * time.Second).Unix()}, []string{"alice"}, ""},
		{"not valid yet", jwt.MapClaims{"nbf": now.Add(time.Minute).Unix()}, nil, "the token is not valid yet"},
		{"not valid yet within the leeway", jwt.MapClaims{"nbf": now.Add(20 * time.Second).Unix()}, []string{"alice"}, ""},
		{"issued in the future", jwt.MapClaims{"iat": now.Add(time.Minute).Unix()}, nil, "the token was issued in the future"},
		{"issued in the future within the leeway", jwt.MapClaims{"iat": now.Add(20 * time.Second).Unix()}, []string{"alice"}, ""},
		{"no iat", jwt.MapClaims{"iat": nil}, []string{"alice"}, ""},
		{"no exp", jwt.MapClaims{"exp": nil}, nil, `the token has no expiry ("exp" claim)`},
		{"exp not a number", jwt.MapClaims{"exp": "tomorrow"}, nil, "the token's claims are malformed"},
		{"wrong issuer", jwt.MapClaims{"iss": "https://evil.example"}, nil, "the token's issuer is not accepted"},
		{"no issuer", jwt.MapClaims{"iss": nil}, nil, "the token's issuer is not accepted"},
		{"wrong audience", jwt.MapClaims{"aud": "someone-else"}, nil, "the token's audience is not accepted"},
		{"audience among others", jwt.MapClaims{"aud": []string{"someone-else", audience}}, []string{"alice"}, ""},
		{"no audience", jwt.MapClaims{"aud": nil}, nil, "the token's audience is not accepted"},
		{"sub as an array", jwt.MapClaims{"sub": []string{"bob", "alice", "bob"}}, []string{"alice", "bob"}, ""},
		{"no sub", jwt.MapClaims{"sub": nil}, nil, `the token names no resource in its "sub" claim`},
		{"empty sub", jwt.MapClaims{"sub": ""}, nil, `the token names no resource in its "sub" claim`},
		{"empty array", jwt.MapClaims{"sub": []string{}}, nil, `the token names no resource in its "sub" claim`},
		{"array with a number", jwt.MapClaims{"sub": []any{"alice", 7}}, nil, `the token's "sub" claim must be a string or an array of non-empty strings`},
		{"array with an empty name", jwt.MapClaims{"sub": []any{"alice", ""}}, nil, `the token's "sub" claim must be a string or an array of non-empty strings`},
		{"sub a number", jwt.MapClaims{"sub": 7}, nil, `the token's "sub" claim must be a string or an array of non-empty strings`},
		{"sub is *", jwt.MapClaims{"sub": "*"}, nil, `the token's "sub" claim may not name "*"`},
		{"sub with a trailing space", jwt.MapClaims{"sub": "alice "}, nil, `the token's "sub" claim names a resource with spaces around it or control characters in it ("alice "): resource ids have neither`},
		{"sub with a leading tab", jwt.MapClaims{"sub": []any{"bob", "\talice"}}, nil, `the token's "sub" claim names a resource with spaces around it or control characters in it ("\talice"): resource ids have neither`},
		{"sub with a NUL", jwt.MapClaims{"sub": "ali\x00ce"}, nil, `the token's "sub" claim names a resource with spaces around it or control characters in it ("ali\x00ce"): resource ids have neither`},
		{"sub with spaces inside", jwt.MapClaims{"sub": "alice smith"}, []string{"alice smith"}, ""},
		{"a minor", jwt.MapClaims{"minor": true}, []string{"alice"}, ""},
		{"minor not a boolean", jwt.MapClaims{"minor": "yes"}, []string{"alice"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := a.Authenticate(context.Background(), s.sign(t, claims(c, tt.edits)))
			if want := tt.edits["minor"] == true; err == nil && id.Minor != want {
				t.Errorf("Minor = %v, want %v", id.Minor, want)
			}
			if tt.resources == nil {
				refused(t, err, tt.refusal)
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if !reflect.DeepEqual(id.Resources, tt.resources) || id.Any {
				t.Errorf("identity %+v, want resources %v", id, tt.resources)
			}
		})
	}
}

func TestJWTRefused(t *testing.T) {
	c := newClock()
	s := rsaSigner("rsa-1", 0)
	p := newIDP(t, s)
	a := newAuth(t, jwtConfig(p, c))

	pub, err := x509.MarshalPKIXPublicKey(s.key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	valid := strings.Split(s.sign(t, claims(c, nil)), ".")
	other := strings.Split(s.sign(t, claims(c, jwt.MapClaims{"sub": "mallory"})), ".")
	xyz := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"XYZ","typ":"JWT"}`))

	tests := []struct {
		name  string
		token string
		want  string
	}{
		{"alg none", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims(c, nil))
			tok.Header["kid"] = s.kid
			raw, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}(), "the token's signing algorithm is not accepted"},
		// The classic confusion: HMAC keyed with the provider's public key.
		{"HS256 keyed with the public key", signer{kid: s.kid, method: jwt.SigningMethodHS256}.signHMAC(t, pubPEM, claims(c, nil)),
			"the token's signing algorithm is not accepted"},
		{"HS256 with only a JWKS", signer{kid: s.kid, method: jwt.SigningMethodHS256}.signHMAC(t, []byte(strings.Repeat("k", 32)), claims(c, nil)),
			"the token's signing algorithm is not accepted"},
		{"an unknown algorithm", xyz + "." + valid[1] + "." + valid[2],
			"the token's signing algorithm is not accepted"},
		{"signed by a key the provider does not publish", rsaSigner(s.kid, 2).sign(t, claims(c, nil)),
			"the token's signature is not valid"},
		{"signature of another token", valid[0] + "." + valid[1] + "." + other[2],
			"the token's signature is not valid"},
		{"claims changed after signing", valid[0] + "." + other[1] + "." + valid[2],
			"the token's signature is not valid"},
		{"not base64", "eyJhbGciOi!.eyJzdWIiOi.c2ln", "the token is malformed"},
		{"not a JWT at all", "just-a-string", "the token is malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Authenticate(context.Background(), tt.token)
			ae := refused(t, err, tt.want)
			if errors.Is(err, auth.ErrKeysUnavailable) {
				t.Errorf("refusal %v says the keys are unavailable", ae)
			}
		})
	}
}

// signHMAC signs claims with HMAC keyed by secret.
func (s signer) signHMAC(t *testing.T, secret []byte, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(s.method, claims)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	raw, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// When the provider rotates its keys, a token naming the new kid makes the
// service fetch the key set again, at most once per 30 seconds.
func TestJWKSRotation(t *testing.T) {
	c := newClock()
	old, next := rsaSigner("2026-02", 0), rsaSigner("2026-03", 1)
	p := newIDP(t, old)
	a := newAuth(t, jwtConfig(p, c))
	ctx := context.Background()

	if _, err := a.Authenticate(ctx, old.sign(t, claims(c, nil))); err != nil {
		t.Fatalf("old key: %v", err)
	}
	p.publish(t, next)

	// The set was fetched at start, under 30s ago: no fetch yet.
	_, err := a.Authenticate(ctx, next.sign(t, claims(c, nil)))
	refused(t, err, "the token is not signed by a known key")
	if n := p.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches within 30s of the first, want 1", n)
	}

	c.Advance(31 * time.Second)
	id, err := a.Authenticate(ctx, next.sign(t, claims(c, nil)))
	if err != nil {
		t.Fatalf("new key after rotation: %v", err)
	}
	if id.Subject != "alice" {
		t.Errorf("identity %+v", id)
	}
	if n := p.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2: one at start, one for the new kid", n)
	}

	// The withdrawn key is no longer accepted, and asking about it again
	// so soon does not fetch.
	_, err = a.Authenticate(ctx, old.sign(t, claims(c, nil)))
	refused(t, err, "the token is not signed by a known key")
	if n := p.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want still 2", n)
	}
}

// Many requests with a new kid at once share one fetch.
func TestJWKSRotationUnderLoad(t *testing.T) {
	c := newClock()
	old, next := rsaSigner("2026-02", 0), rsaSigner("2026-03", 1)
	p := newIDP(t, old)
	a := newAuth(t, jwtConfig(p, c))
	p.publish(t, next)
	c.Advance(time.Minute)
	token := next.sign(t, claims(c, nil))

	var wg sync.WaitGroup
	var refusedN atomic.Int32
	for range 32 {
		wg.Go(func() {
			if _, err := a.Authenticate(context.Background(), token); err != nil {
				refusedN.Add(1)
				t.Log(err)
			}
		})
	}
	wg.Wait()
	if n := refusedN.Load(); n > 0 {
		t.Errorf("%d of 32 requests with the new key were refused", n)
	}
	if n := p.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// A token without a kid is checked against every key; it causes no fetch.
func TestJWTWithoutKid(t *testing.T) {
	c := newClock()
	k1, k2 := rsaSigner("k1", 0), ecSigner(t, "k2")
	p := newIDP(t, k1, k2)
	a := newAuth(t, jwtConfig(p, c))
	for _, s := range []signer{k1, k2} {
		s.kid = ""
		if _, err := a.Authenticate(context.Background(), s.sign(t, claims(c, nil))); err != nil {
			t.Errorf("%s without kid: %v", s.method.Alg(), err)
		}
	}
	c.Advance(time.Minute)
	stranger := rsaSigner("", 2)
	_, err := a.Authenticate(context.Background(), stranger.sign(t, claims(c, nil)))
	refused(t, err, "the token's signature is not valid")
	if n := p.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

// The service starts while the identity provider is down; tokens are
// refused as "keys unavailable" until a fetch succeeds.
func TestJWKSDownAtStart(t *testing.T) {
	c := newClock()
	s := rsaSigner("rsa-1", 0)
	p := newIDP(t, s)
	p.setDown(true)
	var logs testkit.Buffer
	cfg := jwtConfig(p, c)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	a := newAuth(t, cfg)
	if !strings.Contains(logs.String(), "JWKS fetch failed") {
		t.Errorf("the failed fetch is not in the log:\n%s", logs.String())
	}
	ctx := context.Background()

	_, err := a.Authenticate(ctx, s.sign(t, claims(c, nil)))
	ae := refused(t, err, "the token cannot be checked: the signing keys are unavailable; try again later")
	if !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Errorf("%v does not wrap ErrKeysUnavailable", ae)
	}

	p.setDown(false)
	// Within 30s of the failed fetch, no new one: still unavailable.
	_, err = a.Authenticate(ctx, s.sign(t, claims(c, nil)))
	if !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("error %v, want ErrKeysUnavailable", err)
	}
	c.Advance(31 * time.Second)
	if _, err := a.Authenticate(ctx, s.sign(t, claims(c, nil))); err != nil {
		t.Fatalf("after the provider came back: %v", err)
	}
	if n := p.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}

	// Down again: the keys already fetched still work; an unknown kid is
	// the provider's failure, not the caller's.
	p.setDown(true)
	c.Advance(31 * time.Second)
	if _, err := a.Authenticate(ctx, s.sign(t, claims(c, nil))); err != nil {
		t.Fatalf("known key while the provider is down: %v", err)
	}
	_, err = a.Authenticate(ctx, rsaSigner("rsa-2", 1).sign(t, claims(c, nil)))
	if !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Errorf("unknown kid while the provider is down: %v, want ErrKeysUnavailable", err)
	}
}

func TestJWKSUnreachableAtStart(t *testing.T) {
	c := newClock()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	a := newAuth(t, auth.Config{JWKSURL: url, Now: c.Now})
	_, err := a.Authenticate(context.Background(), rsaSigner("rsa-1", 0).sign(t, claims(c, nil)))
	if !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Errorf("error %v, want ErrKeysUnavailable", err)
	}
}

func TestJWKSBadDocuments(t *testing.T) {
	s := rsaSigner("rsa-1", 0)
	good := newIDP(t, s).body
	tests := []struct {
		name string
		body []byte
	}{
		{"just under 1 MiB is fine", nil},
		{"larger than 1 MiB", padded(good, 1<<20+1)},
		{"not JSON", []byte("<html>login</html>")},
		{"no keys", []byte(`{"keys":[]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			p := newIDP(t)
			if tt.body == nil {
				p.serve(padded(good, 1<<20))
				a := newAuth(t, jwtConfig(p, c))
				if _, err := a.Authenticate(context.Background(), s.sign(t, claims(c, nil))); err != nil {
					t.Fatalf("a JWKS of 1 MiB: %v", err)
				}
				return
			}
			p.serve(tt.body)
			a := newAuth(t, jwtConfig(p, c))
			_, err := a.Authenticate(context.Background(), s.sign(t, claims(c, nil)))
			if !errors.Is(err, auth.ErrKeysUnavailable) {
				t.Errorf("error %v, want ErrKeysUnavailable", err)
			}
		})
	}
}

// padded is the JSON object doc grown to n bytes by a field of padding.
func padded(doc []byte, n int) []byte {
	prefix := `{"padding":"`
	fill := n - len(doc) - len(prefix) - len(`",`) + 1
	return []byte(prefix + strings.Repeat("x", fill) + `",` + string(doc[1:]))
}

// A symmetric key published in a JWKS is never used: whoever can read the
// JWKS could sign with it.
func TestJWKSSymmetricKeyIgnored(t *testing.T) {
	c := newClock()
	p := newIDP(t)
	secret := []byte(strings.Repeat("s", 32))
	p.serve([]byte(`{"keys":[{"kty":"oct","kid":"oct-1","alg":"HS256","k":"` + base64.RawURLEncoding.EncodeToString(secret) + `"}]}`))
	a := newAuth(t, jwtConfig(p, c))
	token := signer{kid: "oct-1", method: jwt.SigningMethodHS256}.signHMAC(t, secret, claims(c, nil))
	_, err := a.Authenticate(context.Background(), token)
	refused(t, err, "the token's signing algorithm is not accepted")

	// An asymmetric algorithm naming the symmetric key does not reach it
	// either.
	p.serve([]byte(`{"keys":[{"kty":"oct","kid":"oct-2","k":"` + base64.RawURLEncoding.EncodeToString(secret) + `"}]}`))
	c.Advance(time.Minute)
	_, err = a.Authenticate(context.Background(), rsaSigner("oct-2", 0).sign(t, claims(c, nil)))
	ae := refused(t, err, "the token is not signed by a known key")
	if !strings.Contains(ae.Err.Error(), "symmetric") {
		t.Errorf("cause %v, want the symmetric key named", ae.Err)
	}
}

func TestHS256Secret(t *testing.T) {
	c := newClock()
	path, secret := secretFile(t)
	a := newAuth(t, auth.Config{JWTSecretFile: path, Issuer: issuer, Audience: audience, Now: c.Now})
	ctx := context.Background()
	hs := signer{method: jwt.SigningMethodHS256}

	id, err := a.Authenticate(ctx, hs.signHMAC(t, secret, claims(c, nil)))
	if err != nil {
		t.Fatalf("HS256 with the secret: %v", err)
	}
	if want := (auth.Identity{Method: "jwt", Subject: "alice", Resources: []string{"alice"}}); !reflect.DeepEqual(id, want) {
		t.Errorf("identity %+v, want %+v", id, want)
	}

	_, err = a.Authenticate(ctx, hs.signHMAC(t, []byte(strings.Repeat("x", 40)), claims(c, nil)))
	refused(t, err, "the token's signature is not valid")

	_, err = a.Authenticate(ctx, rsaSigner("rsa-1", 0).sign(t, claims(c, nil)))
	refused(t, err, "the token's signing algorithm is not accepted")

	hs384 := signer{method: jwt.SigningMethodHS384}
	_, err = a.Authenticate(ctx, hs384.signHMAC(t, secret, claims(c, nil)))
	refused(t, err, "the token's signing algorithm is not accepted")

	_, err = a.Authenticate(ctx, hs.signHMAC(t, secret, claims(c, jwt.MapClaims{"exp": c.Now().Add(-time.Hour).Unix()})))
	refused(t, err, "the token has expired")
}

func TestSecretFileRefused(t *testing.T) {
	for name, content := range map[string]string{
		"short":                "too-short-secret",
		"short after trimming": "   " + strings.Repeat("s", 31) + "   \n",
		"empty":                "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := auth.New(context.Background(), auth.Config{JWTSecretFile: writeFile(t, "secret", content)})
			if err == nil || !strings.Contains(err.Error(), "at least 32") {
				t.Fatalf("error %v, want one asking for 32 bytes", err)
			}
			if strings.Contains(err.Error(), "too-short-secret") {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// With a secret and a JWKS, each algorithm is checked with its own keys.
func TestSecretAndJWKS(t *testing.T) {
	c := newClock()
	s := rsaSigner("rsa-1", 0)
	p := newIDP(t, s)
	path, secret := secretFile(t)
	cfg := jwtConfig(p, c)
	cfg.JWTSecretFile = path
	a := newAuth(t, cfg)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, s.sign(t, claims(c, nil))); err != nil {
		t.Errorf("RS256: %v", err)
	}
	hs := signer{kid: s.kid, method: jwt.SigningMethodHS256}
	if _, err := a.Authenticate(ctx, hs.signHMAC(t, secret, claims(c, nil))); err != nil {
		t.Errorf("HS256 with the secret: %v", err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(s.key.Public())
	_, err := a.Authenticate(ctx, hs.signHMAC(t, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), claims(c, nil)))
	refused(t, err, "the token's signature is not valid")
}

func TestCustomResourceClaim(t *testing.T) {
	c := newClock()
	s := rsaSigner("rsa-1", 0)
	p := newIDP(t, s)
	cfg := jwtConfig(p, c)
	cfg.ResourceClaim = "companion/tenants"
	a := newAuth(t, cfg)
	ctx := context.Background()

	id, err := a.Authenticate(ctx, s.sign(t, claims(c, jwt.MapClaims{"companion/tenants": []string{"team-b", "team-a"}})))
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Identity{Method: "jwt", Subject: "alice", Resources: []string{"team-a", "team-b"}}
	if !reflect.DeepEqual(id, want) {
		t.Errorf("identity %+v, want %+v", id, want)
	}
	if _, ok := id.Single(); ok {
		t.Error("Single() with two resources")
	}

	id, err = a.Authenticate(ctx, s.sign(t, claims(c, jwt.MapClaims{"companion/tenants": "team-a"})))
	if r, ok := id.Single(); err != nil || !ok || r != "team-a" {
		t.Errorf("a string claim: %+v, %v", id, err)
	}

	_, err = a.Authenticate(ctx, s.sign(t, claims(c, nil)))
	refused(t, err, `the token names no resource in its "companion/tenants" claim`)
}

// With API keys and tokens both configured, the shape of the bearer value
// decides how it is checked.
func TestAPIKeysAndJWT(t *testing.T) {
	c := newClock()
	s := rsaSigner("rsa-1", 0)
	p := newIDP(t, s)
	cfg := jwtConfig(p, c)
	cfg.APIKeysFile = writeFile(t, "keys", keyA+" bob\n")
	a := newAuth(t, cfg)
	ctx := context.Background()

	id, err := a.Authenticate(ctx, keyA)
	if err != nil || id.Method != "api-key" || !id.Allows("bob") {
		t.Errorf("API key: %+v, %v", id, err)
	}
	id, err = a.Authenticate(ctx, s.sign(t, claims(c, nil)))
	if err != nil || id.Method != "jwt" || !id.Allows("alice") {
		t.Errorf("token: %+v, %v", id, err)
	}
	_, err = a.Authenticate(ctx, "eyJhbGciOi.eyJzdWIiOi.c2ln")
	refused(t, err, "the token is malformed")
	_, err = a.Authenticate(ctx, "not.a-key")
	refused(t, err, "the API key is not valid")
}

func TestJWTConfigRefused(t *testing.T) {
	tests := []struct {
		name string
		cfg  auth.Config
		want string
	}{
		{"JWKS URL without scheme", auth.Config{JWKSURL: "idp.example/jwks.json"}, "must be an http:// or https:// URL"},
		{"JWKS URL of another scheme", auth.Config{JWKSURL: "file:///etc/jwks.json"}, "must be an http:// or https:// URL"},
		{"missing secret file", auth.Config{JWTSecretFile: "/nonexistent/secret"}, "reading the JWT secret file"},
		{"negative leeway", auth.Config{JWTSecretFile: "x", Leeway: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := auth.New(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// Close ends the background refresh; a JWKS fetch never outlives it.
func TestCloseStopsRefresh(t *testing.T) {
	c := newClock()
	p := newIDP(t, rsaSigner("rsa-1", 0))
	a, err := auth.New(context.Background(), jwtConfig(p, c))
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	a.Close() // twice is fine
	c.Advance(time.Hour)
	_, err = a.Authenticate(context.Background(), rsaSigner("other", 1).sign(t, claims(c, nil)))
	refused(t, err, "the token is not signed by a known key")
	if n := p.fetches.Load(); n != 1 {
		t.Errorf("%d fetches after Close, want none beyond the first", n)
	}
}
