// Package httpapi is the HTTP face of the service: the routes of
// docs/api.md, request decoding and validation, Server-Sent Events, and the
// one mapping from errors to statuses. Handlers decode, call the runner,
// encode; the logic lives below.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/agent"
)

// Runner runs the agent. *agent.Agent is one; the memory layer wraps it.
type Runner interface {
	Run(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error)
}

// DefaultMaxBodyBytes caps a request body unless Config says otherwise.
const DefaultMaxBodyBytes = 1 << 20

// Config holds the server's dependencies.
type Config struct {
	Runner Runner
	// Threads serves the threads API (/api/memory/threads); nil leaves it
	// out.
	Threads Threads
	// Ready checks what the service depends on, for GET /ready; nil is
	// always ready.
	Ready func(ctx context.Context) error
	// Logger gets a line per request; nil discards.
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// Server is the API's http.Handler.
type Server struct {
	cfg    Config
	log    *slog.Logger
	router chi.Router
}

// NewServer returns the API handler.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.router = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }
