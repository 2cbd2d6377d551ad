package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/cors"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/auth"
	"github.com/companionhq/companion/internal/limits"
)

// Authenticator turns a bearer credential into an identity; *auth.Authenticator
// is one.
type Authenticator interface {
	// Enabled reports whether any credential source is configured; when
	// none is, requests are not authenticated.
	Enabled() bool
	Authenticate(ctx context.Context, bearer string) (auth.Identity, error)
}

type identityKey struct{}

// identityOf is the identity the request authenticated as, when
// authentication is on.
func identityOf(ctx context.Context) (auth.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(auth.Identity)
	return id, ok
}

// authOn reports whether requests must carry a credential.
func (s *Server) authOn() bool { return s.cfg.Auth != nil && s.cfg.Auth.Enabled() }

// authenticate turns the request's bearer credential into an identity in
// its context, or answers 401 (503 while the identity provider's keys
// cannot be had). It does nothing when authentication is off.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authOn() {
			var ok bool
			if r, ok = s.authenticated(w, r); !ok {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticated returns r with the identity its credential proves, or
// answers it with the error and returns false.
func (s *Server) authenticated(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	id, err := s.credential(r)
	if err != nil {
		if apperr.CodeOf(err) == apperr.Unauthenticated {
			w.Header().Set("WWW-Authenticate", `Bearer realm="companion"`)
		}
		s.writeError(w, r, err)
		return r, false
	}
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "authenticated",
		slog.String("method", id.Method), slog.String("subject", id.Subject))
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
}

func (s *Server) credential(r *http.Request) (auth.Identity, error) {
	const none = "no credential: send Authorization: Bearer <API key or token>"
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0:
		return auth.Identity{}, apperr.New(apperr.Unauthenticated, none)
	case len(values) > 1:
		return auth.Identity{}, apperr.New(apperr.Unauthenticated, "send one Authorization header, not %d", len(values))
	}
	scheme, bearer, ok := strings.Cut(values[0], " ")
	bearer = strings.TrimSpace(bearer)
	if !ok || !strings.EqualFold(scheme, "Bearer") || bearer == "" {
		return auth.Identity{}, apperr.New(apperr.Unauthenticated, "the Authorization header must be \"Bearer <API key or token>\"")
	}
	id, err := s.cfg.Auth.Authenticate(r.Context(), bearer)
	if err == nil {
		return id, nil
	}
	msg := "the credential is not valid"
	var ae *auth.Error
	if errors.As(err, &ae) {
		msg = ae.Message
	}
	if errors.Is(err, auth.ErrKeysUnavailable) {
		return auth.Identity{}, apperr.Wrap(apperr.Unavailable, err, "%s", msg)
	}
	return auth.Identity{}, apperr.Wrap(apperr.Unauthenticated, err, "%s", msg)
}

// resource is the resource a request acts for (actAs), once it is within
// its rate limit.
func (s *Server) resource(ctx context.Context, named string) (string, error) {
	rid, err := s.actAs(ctx, named)
	if err != nil {
		return "", err
	}
	return rid, s.limitResource(ctx, rid)
}

// actAs is the resource a request acts for, given the resourceId it named
// ("" for none). Without authentication it is the one named. With it, a
// request that names none acts for its credential's resource, when the
// credential names exactly one, and a resource the credential does not
// allow is refused with 403.
func (s *Server) actAs(ctx context.Context, named string) (string, error) {
	id, ok := identityOf(ctx)
	if !ok {
		return named, nil
	}
	if named == "" {
		if one, ok := id.Single(); ok {
			return one, nil
		}
		return "", apperr.New(apperr.Invalid, "resourceId is required: this credential may act for several resources, so name one")
	}
	if !id.Allows(named) {
		return "", apperr.New(apperr.Forbidden, "this credential may not act for resource %q", named)
	}
	return named, nil
}

// RateLimiter admits requests per key; *limits.Local and *limits.Fallback
// are ones.
type RateLimiter = limits.Limiter

// Scopes of a rate limit, as RequestLimited reports them.
const (
	ScopeAddress  = "address"
	ScopeResource = "resource"
	ScopeQuota    = "quota"
)

// limitAddress admits the request under its client address's rate limit.
func (s *Server) limitAddress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.RateLimiter != nil && !s.admitAddress(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// admitAddress admits r under its client address's rate limit, or answers
// it with the refusal and returns false.
func (s *Server) admitAddress(w http.ResponseWriter, r *http.Request) bool {
	addr := s.clientAddr(r)
	if err := s.admit(r.Context(), ScopeAddress, "addr:"+addr, "client address "+addr); err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// limitResource admits a request that acts for resource under the
// resource's rate limit. Requests that name no resource have only their
// address's.
func (s *Server) limitResource(ctx context.Context, resource string) error {
	if s.cfg.RateLimiter == nil || resource == "" {
		return nil
	}
	return s.admit(ctx, ScopeResource, "resource:"+resource, "resource "+strconv.Quote(resource))
}

func (s *Server) admit(ctx context.Context, scope, key, who string) error {
	d, err := s.cfg.RateLimiter.Allow(ctx, key)
	if err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "the request was cancelled")
	}
	if d.Allowed {
		return nil
	}
	s.obs.RequestLimited(scope)
	return apperr.New(apperr.RateLimited, "%s made more than %d requests in a minute, its limit (-rate-limit): try again in %s",
		who, d.Limit, retryIn(d.RetryAfter)).After(d.RetryAfter)
}

func retryIn(d time.Duration) string {
	return fmt.Sprintf("%ds", retrySeconds(d))
}

// corsHeaders are the request headers a browser may send cross-origin.
var corsHeaders = []string{"Authorization", "Content-Type", "X-Request-Id", "Traceparent", "Tracestate", "Last-Event-Id", "X-Stream-Format", "X-Resource-Id", "X-Personality"}

// browserSafety answers CORS for the allowed origins, and refuses the
// preflight of any other origin with 403, so that no page elsewhere gets
// to send a request that needs one. Credentials (cookies) are never
// allowed: the API takes bearer credentials, which a page must send itself.
func (s *Server) browserSafety(next http.Handler) http.Handler {
	allowed := s.cfg.CORSOrigins
	c := cors.New(cors.Options{
		AllowedOrigins:   allowed,
		AllowedMethods:   []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete},
		AllowedHeaders:   corsHeaders,
		ExposedHeaders:   []string{"X-Request-Id", "Retry-After", "X-Run-Id"},
		AllowCredentials: false,
		MaxAge:           600,
	}).Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && s.refusePreflight(w, r) {
			return
		}
		if len(allowed) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		c.ServeHTTP(w, r)
	})
}

// refusePreflight answers r, an OPTIONS request, with 403 when it is a
// CORS preflight from an origin that is not allowed, and says whether it did.
func (s *Server) refusePreflight(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || r.Header.Get("Access-Control-Request-Method") == "" || slices.Contains(s.cfg.CORSOrigins, origin) {
		return false
	}
	s.writeError(w, r, apperr.New(apperr.Forbidden, "origin %q may not call this API: it is not among the allowed origins (-cors-origins)", clip(origin)))
	return true
}

// clientAddr is the address of the client that sent r: the peer's, or,
// when the peer is a trusted proxy, the nearest address in
// X-Forwarded-For that is not a trusted proxy's.
func (s *Server) clientAddr(r *http.Request) string {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() {
		return r.RemoteAddr
	}
	if !s.trusted(peer) {
		return peer.String()
	}
	hops := r.Header.Values("X-Forwarded-For")
	var all []string
	for _, h := range hops {
		all = append(all, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(all) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(all[i]))
		if err != nil {
			break // a forged or broken entry: the last good hop is the client
		}
		client = a.Unmap()
		if !s.trusted(client) {
			break
		}
	}
	return client.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
