package httpapi

// Authentication at the edge: a request's credential becomes an identity
// once, in its context; handlers ask the identity which resource they act
// for.

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/auth"
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
