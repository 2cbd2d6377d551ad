package httpapi

// Rate limits at the edge: per client address before authentication,
// per resource once the request names one.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/limits"
)

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
