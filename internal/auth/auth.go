// Package auth turns the credential a request presents (an API key or a JWT
// bearer token) into an Identity: the resources the request may act for. The
// HTTP layer calls Authenticate once, at the edge; handlers only ask the
// Identity.
//
// # API keys
//
// The API key file holds one key a line:
//
//	KEY RESOURCE[,RESOURCE...]   # the key may act for these resources
//	KEY *                        # the key may act for any resource
//	sha256:HEX RESOURCE          # the key given as the hex SHA-256 of it
//
// Fields are separated by whitespace; `#` starts a comment that runs to the
// end of the line; blank lines are ignored. Several keys may be valid at
// once, so a new key can be added before the old one is retired; Reload
// reads the file again.
//
// # Tokens
//
// Tokens are checked with the keys of a JWKS (RS*, PS*, ES*, EdDSA) or with
// a shared secret (HS256, for development); each algorithm only with its
// own kind of key, `none` never. exp is required; exp, nbf and iat are
// checked with a leeway; iss and aud when configured. The resource claim
// (default "sub") names the resources: a string or an array of strings.
//
// The JWKS is fetched at start, every 15 minutes, and when a token names a
// kid not seen yet (at most once per 30 seconds, which is also how often a
// failing fetch is retried). A fetch is bounded to 10 seconds and 1 MiB.
// While fetches fail, the keys fetched last stay in use; a token they
// cannot check is refused with ErrKeysUnavailable.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Identity is who a request acts as: the resources it may act for.
type Identity struct {
	// Method is how the request authenticated: "api-key" or "jwt".
	Method string
	// Subject names the caller in logs; never the key itself. For an API key
	// it is "key:" and the first 8 hex digits of the key's SHA-256, for a
	// token its "sub" claim.
	Subject string
	// Resources are the resources the caller may act for, sorted and unique.
	Resources []string
	// Any is set when the caller may act for any resource (an API key
	// given `*`).
	Any bool
	// Minor is set when the caller is known to be a minor (a token's
	// MinorClaim, an API key's minor attribute): the safety rules for
	// minors apply (break reminders, a filter of sexual content).
	Minor bool
}

// MinorClaim is the claim of a token that marks its user a minor: true.
const MinorClaim = "minor"

// Allows reports whether the identity may act for resource.
func (id Identity) Allows(resource string) bool {
	if id.Any {
		return true
	}
	_, found := slices.BinarySearch(id.Resources, resource)
	return found
}

// Single is the one resource the identity names, when it names exactly one
// and is not Any: the resource to act for when a request names none.
func (id Identity) Single() (string, bool) {
	if id.Any || len(id.Resources) != 1 {
		return "", false
	}
	return id.Resources[0], true
}

// The methods an Identity may carry.
const (
	MethodAPIKey = "api-key"
	MethodJWT    = "jwt"
)

// Error is why a credential was refused. Message is safe to show the
// client; Err is the cause, for the log.
type Error struct {
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// ErrKeysUnavailable is wrapped by the *Error of a token that could not be
// checked because the signing keys could not be fetched: the identity
// provider is failing, not the caller (answer 503, not 401). Test it with
// errors.Is.
var ErrKeysUnavailable = errors.New("the signing keys could not be fetched")

// Client-facing messages that more than one place returns.
const (
	msgNoCredential    = "no credential: send Authorization: Bearer <API key or token>"
	msgKeyInvalid      = "the API key is not valid"
	msgNotConfigured   = "authentication is not configured"
	msgKeysUnavailable = "the token cannot be checked: the signing keys are unavailable; try again later"
)

// Config says where credentials come from. The zero Config authenticates
// nothing (Enabled is false).
type Config struct {
	// APIKeysFile is the API key file (see the package documentation);
	// "" means no API keys.
	APIKeysFile string
	// JWKSURL is where the identity provider publishes its signing keys;
	// "" means no JWKS.
	JWKSURL string
	// JWTSecretFile holds an HS256 secret, for development; "" means none.
	JWTSecretFile string
	// Issuer, when set, must equal a token's "iss" claim.
	Issuer string
	// Audience, when set, must be among a token's "aud" claim.
	Audience string
	// ResourceClaim is the claim that names a token's resources: a string or
	// an array of strings. Default "sub".
	ResourceClaim string
	// Leeway is the clock skew allowed for exp, nbf and iat; 0 means 30s.
	Leeway time.Duration
	// HTTPClient fetches the JWKS; nil means a client with a timeout.
	HTTPClient *http.Client
	// Logger gets key loads and JWKS fetches; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests fix it.
	Now func() time.Time
}

// Authenticator checks credentials against the configured sources. It is
// safe for concurrent use.
type Authenticator struct {
	log      *slog.Logger
	keysFile string
	keys     atomic.Pointer[keySet] // nil when there is no key file
	reloadMu sync.Mutex             // one Reload at a time
	jwt      *verifier              // nil when no token source is configured
}

// New builds an Authenticator from cfg: it reads the API key file and the
// JWT secret, and fetches the JWKS once. A JWKS that cannot be fetched is
// logged, not fatal: tokens are refused with ErrKeysUnavailable until a
// fetch succeeds. ctx bounds that first fetch.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ResourceClaim == "" {
		cfg.ResourceClaim = "sub"
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Leeway < 0 {
		return nil, fmt.Errorf("the leeway %v is negative", cfg.Leeway)
	}
	a := &Authenticator{log: cfg.Logger, keysFile: cfg.APIKeysFile}
	if cfg.APIKeysFile != "" {
		ks, err := loadKeys(cfg.APIKeysFile)
		if err != nil {
			return nil, err
		}
		a.keys.Store(ks)
		a.log.Info("api keys loaded", "file", cfg.APIKeysFile, "keys", len(ks.entries))
	}
	if cfg.JWKSURL != "" || cfg.JWTSecretFile != "" {
		v, err := newVerifier(ctx, cfg)
		if err != nil {
			return nil, err
		}
		a.jwt = v
	}
	return a, nil
}

// Enabled reports whether any credential source is configured. When it is
// not, the service runs without authentication and Authenticate refuses
// everything.
func (a *Authenticator) Enabled() bool {
	return a.keysFile != "" || a.jwt != nil
}

// Authenticate turns the value of an "Authorization: Bearer" header into an
// Identity. A refusal is an *Error; one that wraps ErrKeysUnavailable is
// the identity provider's failure, not the caller's.
//
// With both API keys and tokens configured, a value shaped like a JWT
// (three base64url segments separated by dots) is checked as a token,
// anything else as an API key.
func (a *Authenticator) Authenticate(ctx context.Context, bearer string) (Identity, error) {
	bearer = strings.TrimSpace(bearer)
	if bearer == "" {
		return Identity{}, &Error{Message: msgNoCredential}
	}
	keys := a.keys.Load()
	switch {
	case a.jwt != nil && (keys == nil || jwtShaped(bearer)):
		return a.jwt.verify(ctx, bearer)
	case keys != nil:
		if id, ok := keys.lookup(bearer); ok {
			return id, nil
		}
		return Identity{}, &Error{Message: msgKeyInvalid}
	default:
		return Identity{}, &Error{Message: msgNotConfigured}
	}
}

// Reload reads the API key file again and swaps the new keys in at once.
// On a broken file it keeps the keys it has and returns the error, which
// names the file and line. Without a key file it does nothing.
func (a *Authenticator) Reload() error {
	if a.keysFile == "" {
		return nil
	}
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	ks, err := loadKeys(a.keysFile)
	if err != nil {
		return err
	}
	a.keys.Store(ks)
	a.log.Info("api keys reloaded", "file", a.keysFile, "keys", len(ks.entries))
	return nil
}

// Close stops the background refresh of the JWKS and waits for it to end.
func (a *Authenticator) Close() {
	if a.jwt != nil {
		a.jwt.close()
	}
}

// jwtShaped reports whether s looks like a compact JWS: three base64url
// segments separated by dots, the first two not empty (the third is empty
// in an unsigned token, which is then refused as a token).
func jwtShaped(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
