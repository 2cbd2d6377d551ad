package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/openapi"
)

// metricsPath serves the Prometheus metrics, when the server has them.
const metricsPath = "/metrics"

// routes lists the whole API.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.observeRequests, s.recoverPanics, s.browserSafety)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, apperr.New(apperr.NotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, apperr.New(apperr.MethodNotAllowed, "method %s is not allowed on %s: use %s", r.Method, r.URL.Path, allowedMethods(s.router, r.URL.Path)))
	})

	// Probes answer anyone: an orchestrator has no credential.
	r.Get("/health", s.handleHealth())
	r.Get("/ready", s.handleReady())
	// So is the API's description: it holds nothing of anyone's.
	if s.cfg.Document != nil {
		r.Get(openapi.Path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(s.cfg.Document)))
			_, _ = w.Write(s.cfg.Document)
		})
	}

	r.Group(func(r chi.Router) {
		// The address's limit comes first: it also bounds guessing at keys.
		r.Use(s.limitAddress, s.authenticate)
		r.Get("/api/agents", s.handleListAgents())
		r.Get("/api/agents/{agentId}", s.handleGetAgent())
		r.With(s.requireJSON).Post("/api/agents/{agentId}/generate", s.handleGenerate())
		r.With(s.requireJSON).Post("/api/agents/{agentId}/stream", s.handleStream())
		r.With(s.requireJSON).Post("/api/agents/{agentId}/chat", s.handleChat())
		r.Get("/v1/models", s.handleModels())
		r.With(s.requireJSON).Post("/v1/chat/completions", s.handleChatCompletions())
		r.Get("/api/agents/{agentId}/runs/{runId}/stream", s.handleResume())
		r.Post("/api/agents/{agentId}/runs/{runId}/cancel", s.handleCancel())
		if s.cfg.Metrics != nil {
			r.Method(http.MethodGet, metricsPath, s.cfg.Metrics)
		}
		if s.cfg.Threads != nil {
			r.Get("/api/memory/threads", s.handleListThreads())
			r.Get("/api/memory/usage", s.handleUsage())
			r.Get("/api/memory/threads/{threadId}", s.handleGetThread())
			r.With(s.requireJSONOrText).Patch("/api/memory/threads/{threadId}", s.handleUpdateThread())
			r.Delete("/api/memory/threads/{threadId}", s.handleDeleteThread())
			r.Get("/api/memory/threads/{threadId}/messages", s.handleListMessages())
			r.Get("/api/memory/threads/{threadId}/working-memory", s.handleGetWorkingMemory())
			r.With(s.requireJSONOrText).Post("/api/memory/threads/{threadId}/working-memory", s.handleUpdateWorkingMemory())
			r.Get("/api/memory/threads/{threadId}/working-memory/versions", s.handleWorkingMemoryVersions())
			r.With(s.requireJSON).Post("/api/memory/threads/{threadId}/working-memory/restore", s.handleRestoreWorkingMemory())
			r.Get("/api/memory/search", s.handleSearch())
			r.With(s.requireJSON).Post("/api/memory/save-messages", s.handleSaveMessages())
			r.Delete("/api/memory/resources/{resourceId}", s.handleEraseResource())
			r.Get("/api/safety/referrals", s.handleReferrals())
			r.Get("/api/safety/resources/{resourceId}", s.handleGetResourceSafety())
			r.With(s.requireJSON).Put("/api/safety/resources/{resourceId}", s.handleSetResourceSafety())
		}
	})
	return r
}

// allowedMethods lists the methods routed for path, for Allow and for 405
// messages (chi does not hand a custom 405 handler its list).
func allowedMethods(r chi.Router, path string) string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if r.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
		}
	}
	return strings.Join(allowed, ", ")
}
