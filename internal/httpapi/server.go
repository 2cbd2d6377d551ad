// Package httpapi is the HTTP face of the service: the routes of
// docs/api.md, request decoding and validation, Server-Sent Events, and the
// one mapping from errors to statuses. Handlers decode, call the runner,
// encode; the logic lives below.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/companionhq/companion/internal/agent"
)

// Runner runs the agent. *agent.Agent is one; the memory layer wraps it.
type Runner interface {
	Run(ctx context.Context, in agent.Input, emit agent.Emit) (*agent.Result, error)
}

// Observer is told about requests and streams, for metrics. Calls come from
// the request's goroutine; implementations must be safe for concurrent use
// and must not block.
type Observer interface {
	// RequestServed is called once a request is answered. route is its
	// pattern (such as /api/agents/{agentId}/generate), "unmatched" when no
	// route matched; status is the response status.
	RequestServed(method, route string, status int, elapsed time.Duration)
	// StreamOpened and StreamClosed bracket an event stream.
	StreamOpened()
	StreamClosed()
	// StreamFirstEvent is called when a stream's first event is written, and
	// StreamFirstText when its first text event is, elapsed since the
	// request arrived.
	StreamFirstEvent(elapsed time.Duration)
	StreamFirstText(elapsed time.Duration)
}

type nopObserver struct{}

func (nopObserver) RequestServed(string, string, int, time.Duration) {}
func (nopObserver) StreamOpened()                                    {}
func (nopObserver) StreamClosed()                                    {}
func (nopObserver) StreamFirstEvent(time.Duration)                   {}
func (nopObserver) StreamFirstText(time.Duration)                    {}

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
	// TracerProvider makes a server span per request; nil makes none.
	TracerProvider trace.TracerProvider
	// Propagator reads a caller's trace context from the request headers,
	// so that runs join the caller's trace; nil means W3C Trace Context.
	Propagator propagation.TextMapPropagator
	// Observer is told about requests and streams; nil is none.
	Observer Observer
	// Metrics, when set, is served at GET /metrics.
	Metrics http.Handler
}

// Server is the API's http.Handler.
type Server struct {
	cfg     Config
	log     *slog.Logger
	obs     Observer
	router  chi.Router
	handler http.Handler
}

// NewServer returns the API handler.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = tracenoop.NewTracerProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.TraceContext{}
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, obs: cfg.Observer}
	s.router = s.routes()
	// The server span is named after the route once routing has found it
	// (see observeRequests); scrapes of /metrics make no spans.
	s.handler = otelhttp.NewHandler(s.router, "companion",
		otelhttp.WithTracerProvider(cfg.TracerProvider),
		otelhttp.WithPropagators(cfg.Propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != metricsPath }),
	)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }
