// Package auth turns the credential a request presents (an API key or a JWT
// bearer token) into an Identity: the resources the request may act for. The
// HTTP layer calls Authenticate once, at the edge; handlers only ask the
// Identity.
package auth

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
}

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

// Client-facing messages that more than one place returns.
const (
	msgNoCredential  = "no credential: send Authorization: Bearer <API key or token>"
	msgKeyInvalid    = "the API key is not valid"
	msgNotConfigured = "authentication is not configured"
)

// Config says where credentials come from. The zero Config authenticates
// nothing (Enabled is false).
type Config struct {
	// APIKeysFile is the API key file (see the package's key file format);
	// "" means no API keys.
	APIKeysFile string
	Logger      *slog.Logger
}

// Authenticator checks credentials against the configured sources. It is
// safe for concurrent use.
type Authenticator struct {
	log      *slog.Logger
	keysFile string
	keys     atomic.Pointer[keySet] // nil when there is no key file
	reloadMu sync.Mutex             // one Reload at a time
}

// New builds an Authenticator from cfg: it reads the API key file.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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
	return a, nil
}

// Enabled reports whether any credential source is configured. When it is
// not, the service runs without authentication and Authenticate refuses
// everything.
func (a *Authenticator) Enabled() bool {
	return a.keysFile != ""
}

// Authenticate turns the value of an "Authorization: Bearer" header into an
// Identity. A refusal is an *Error.
func (a *Authenticator) Authenticate(ctx context.Context, bearer string) (Identity, error) {
	bearer = strings.TrimSpace(bearer)
	if bearer == "" {
		return Identity{}, &Error{Message: msgNoCredential}
	}
	keys := a.keys.Load()
	switch {
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

// Close stops background work; there is none yet.
func (a *Authenticator) Close() {}

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
