package httpapi

// Browsers: CORS for the allowed origins, a refused preflight for others.

import (
	"net/http"
	"slices"

	"github.com/go-chi/cors"

	"github.com/companionhq/companion/internal/apperr"
)

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
		AllowedMethods:   []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
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
