package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/golang-jwt/jwt/v5"
)

// The algorithms a token may be signed with: asymmetric ones for keys from
// the JWKS, HS256 only with the configured secret. `none` never.
var (
	asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
	secretAlg      = "HS256"
)

// minSecretLen is the shortest HS256 secret accepted: 256 bits.
const minSecretLen = 32

// verifier checks JWT bearer tokens.
type verifier struct {
	opts   []jwt.ParserOption
	algs   []string
	secret []byte // nil when there is no secret file
	jwks   *jwks  // nil when there is no JWKS
	claim  string
	issuer string
}

func newVerifier(ctx context.Context, cfg Config) (*verifier, error) {
	v := &verifier{claim: cfg.ResourceClaim, issuer: cfg.Issuer}
	if cfg.JWTSecretFile != "" {
		b, err := os.ReadFile(cfg.JWTSecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading the JWT secret file: %w", err)
		}
		b = bytes.TrimSpace(b)
		if len(b) < minSecretLen {
			return nil, fmt.Errorf("the JWT secret file %s holds %d bytes (surrounding whitespace trimmed); at least %d are needed", cfg.JWTSecretFile, len(b), minSecretLen)
		}
		v.secret = b
		v.algs = append(v.algs, secretAlg)
		cfg.Logger.Warn("JWT: accepting HS256 tokens signed with a shared secret; use a JWKS in production", "file", cfg.JWTSecretFile)
	}
	if cfg.JWKSURL != "" {
		j, err := newJWKS(ctx, cfg)
		if err != nil {
			return nil, err
		}
		v.jwks = j
		v.algs = append(v.algs, asymmetricAlgs...)
	}
	if cfg.Issuer == "" {
		cfg.Logger.Warn("JWT: no issuer configured; tokens from any issuer the keys sign for are accepted")
	}
	if cfg.Audience == "" {
		cfg.Logger.Warn("JWT: no audience configured; tokens meant for any audience are accepted")
	}
	v.opts = []jwt.ParserOption{
		jwt.WithValidMethods(v.algs),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if cfg.Issuer != "" {
		v.opts = append(v.opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		v.opts = append(v.opts, jwt.WithAudience(cfg.Audience))
	}
	return v, nil
}

func (v *verifier) close() {
	if v.jwks != nil {
		v.jwks.close()
	}
}

// verify checks raw and returns the identity it carries.
func (v *verifier) verify(ctx context.Context, raw string) (Identity, error) {
	claims := jwt.MapClaims{}
	token, err := jwt.NewParser(v.opts...).ParseWithClaims(raw, claims, v.keyfunc(ctx))
	if err != nil {
		return Identity{}, v.refusal(err, token, claims)
	}
	resources, err := claimResources(claims, v.claim)
	if err != nil {
		return Identity{}, err
	}
	sub, _ := claims["sub"].(string)
	minor, _ := claims[MinorClaim].(bool)
	return Identity{Method: MethodJWT, Subject: sub, Resources: resources, Minor: minor}, nil
}

// keyfunc picks the key a token is checked with by its algorithm: the
// secret for HS256, the JWKS for the rest. The parser has already refused
// algorithms not configured; the checks here keep the two apart even so.
func (v *verifier) keyfunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		alg := t.Method.Alg()
		switch {
		case alg == secretAlg && v.secret != nil:
			return v.secret, nil
		case slices.Contains(asymmetricAlgs, alg) && v.jwks != nil:
			return v.jwks.key(ctx, t)
		}
		return nil, fmt.Errorf("no key for algorithm %q", alg)
	}
}

// refusal turns a parse failure into the error the client sees.
func (v *verifier) refusal(err error, token *jwt.Token, claims jwt.MapClaims) *Error {
	msg := "the token is not valid"
	switch {
	case errors.Is(err, ErrKeysUnavailable):
		msg = msgKeysUnavailable
	case errors.Is(err, jwt.ErrTokenMalformed):
		msg = "the token is malformed"
	case token == nil || !v.algAccepted(token):
		msg = "the token's signing algorithm is not accepted"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		msg = "the token is not signed by a known key"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		msg = "the token's signature is not valid"
	case errors.Is(err, jwt.ErrTokenExpired):
		msg = "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		msg = "the token is not valid yet"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		msg = "the token was issued in the future"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		msg = "the token's issuer is not accepted"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		msg = "the token's audience is not accepted"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		iss, _ := claims["iss"].(string)
		switch {
		case claims["exp"] == nil:
			msg = `the token has no expiry ("exp" claim)`
		case v.issuer != "" && iss == "":
			msg = "the token's issuer is not accepted"
		default:
			msg = "the token's audience is not accepted"
		}
	case errors.Is(err, jwt.ErrInvalidType):
		msg = "the token's claims are malformed"
	}
	return &Error{Message: msg, Err: err}
}

// algAccepted reports whether the token's header names an algorithm this
// verifier accepts.
func (v *verifier) algAccepted(t *jwt.Token) bool {
	alg, _ := t.Header["alg"].(string)
	return slices.Contains(v.algs, alg)
}

// claimResources reads the resources a token names in claim: a string or a
// non-empty array of strings, none of them empty.
func claimResources(claims jwt.MapClaims, claim string) ([]string, error) {
	var names []string
	switch c := claims[claim].(type) {
	case nil:
	case string:
		if c != "" {
			names = []string{c}
		}
	case []any:
		for _, e := range c {
			s, ok := e.(string)
			if !ok || s == "" {
				return nil, &Error{Message: fmt.Sprintf("the token's %q claim must be a string or an array of non-empty strings", claim)}
			}
			names = append(names, s)
		}
	default:
		return nil, &Error{Message: fmt.Sprintf("the token's %q claim must be a string or an array of non-empty strings", claim)}
	}
	if len(names) == 0 {
		return nil, &Error{Message: fmt.Sprintf("the token names no resource in its %q claim", claim)}
	}
	for _, n := range names {
		// A request's resourceId is trimmed and may hold no control
		// character: a token naming such a resource could act for a
		// resource no request can name.
		if n != strings.TrimSpace(n) || strings.ContainsFunc(n, unicode.IsControl) {
			return nil, &Error{Message: fmt.Sprintf("the token's %q claim names a resource with spaces around it or control characters in it (%q): resource ids have neither", claim, n)}
		}
	}
	if slices.Contains(names, "*") {
		// Only an API key can grant every resource; a token naming "*" is
		// more likely a mistake than a grant.
		return nil, &Error{Message: fmt.Sprintf("the token's %q claim may not name \"*\"", claim)}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
