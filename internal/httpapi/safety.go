package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
)

// resourceSafetyBody is rs as GET and PUT /api/safety/resources/{resourceId}
// answer it.
func resourceSafetyBody(rs memory.ResourceSettings) api.ResourceSafety {
	out := api.ResourceSafety{ResourceID: rs.ResourceID, Minor: rs.Minor}
	if !rs.UpdatedAt.IsZero() {
		at := timestamp(rs.UpdatedAt)
		out.UpdatedAt = &at
	}
	return out
}

// safetyResource is the resource of a /api/safety/resources/{resourceId}
// request, once the credential may act for it: the route takes no query.
func (s *Server) safetyResource(r *http.Request) (string, error) {
	if _, err := strictQuery(r.URL.RawQuery); err != nil {
		return "", err
	}
	rid, err := pathParam("resourceId", chi.URLParam(r, "resourceId"))
	if err != nil {
		return "", err
	}
	if err := checkID("resourceId", rid, s.cfg.Limits); err != nil {
		return "", err
	}
	return s.resource(r.Context(), rid)
}

// handleGetResourceSafety serves GET /api/safety/resources/{resourceId}:
// whether the resource is marked a minor. A credential that may act for
// the resource may read it.
func (s *Server) handleGetResourceSafety() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		rid, err := s.safetyResource(r)
		if err != nil {
			return nil, err
		}
		rs, err := s.cfg.Threads.ResourceSettings(r.Context(), rid)
		if err != nil {
			return nil, err
		}
		return resourceSafetyBody(rs), nil
	})
}

// handleSetResourceSafety serves PUT /api/safety/resources/{resourceId}:
// {"minor": true} marks the resource's user a minor, {"minor": false}
// clears the mark. A credential that may act for the resource may mark it;
// with authentication on, only one that may act for every resource may
// clear it, so that a minor cannot lift their own mark.
func (s *Server) handleSetResourceSafety() http.HandlerFunc {
	return s.answerJSON(func(w http.ResponseWriter, r *http.Request) (any, error) {
		rid, err := s.safetyResource(r)
		if err != nil {
			return nil, err
		}
		var body api.ResourceSafetyUpdate
		if err := s.readJSON(w, r, &body); err != nil {
			return nil, err
		}
		if body.Minor == nil {
			return nil, apperr.New(apperr.Invalid, `minor is required: true to mark the resource's user a minor, false to clear the mark, e.g. {"minor": true}`)
		}
		if id, ok := identityOf(r.Context()); ok && !*body.Minor && !id.Any {
			return nil, apperr.New(apperr.Forbidden, "only a credential that may act for every resource (an API key given *) may clear a resource's minor mark")
		}
		rs, err := s.cfg.Threads.SetMinor(r.Context(), rid, *body.Minor)
		if err != nil {
			return nil, err
		}
		// Who marked or cleared whom, for an operator to answer for it.
		attrs := []slog.Attr{slog.String("resource", rid), slog.Bool("minor", rs.Minor)}
		if id, ok := identityOf(r.Context()); ok {
			attrs = append(attrs, slog.String("subject", id.Subject))
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "minor mark set", attrs...)
		return resourceSafetyBody(rs), nil
	})
}
