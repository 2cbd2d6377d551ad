// Package httpapi is the HTTP face of the service: the routes of
// docs/api.md, request decoding and validation, Server-Sent Events, and the
// one mapping from errors to statuses. Handlers decode, call the runner,
// encode; the logic lives below.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/requestid"
	"github.com/companionhq/companion/internal/run"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/turn"
)

// Runner runs one turn of a thread: the agent, with the thread's memory.
// *turn.Turns is one.
type Runner interface {
	Run(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error)
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
	// RequestLimited is called when a request is refused by a rate limit or
	// a quota; scope is ScopeAddress, ScopeResource or ScopeQuota.
	RequestLimited(scope string)
}

type nopObserver struct{}

func (nopObserver) RequestServed(string, string, int, time.Duration) {}
func (nopObserver) StreamOpened()                                    {}
func (nopObserver) StreamClosed()                                    {}
func (nopObserver) StreamFirstEvent(time.Duration)                   {}
func (nopObserver) StreamFirstText(time.Duration)                    {}
func (nopObserver) RequestLimited(string)                            {}

// DefaultMaxBodyBytes caps a request body unless Config says otherwise.
const DefaultMaxBodyBytes = 1 << 20

// Limits bound what one request may ask of the service. A zero field takes
// its default from DefaultLimits.
type Limits struct {
	// MaxBodyBytes caps a request body (413 beyond it).
	MaxBodyBytes int64
	// MaxMessages caps the messages of one run request.
	MaxMessages int
	// MaxMessageBytes caps the content of one message, in bytes.
	MaxMessageBytes int
	// MaxIDBytes caps threadId, resourceId and message ids.
	MaxIDBytes int
	// MaxStreams caps the streams open at once; beyond it a stream request
	// gets 503 with Retry-After.
	MaxStreams int
	// MaxRunDuration caps a run's whole length; a stream then ends with an
	// error event (RUN_TIMEOUT) and run-finish, generate with 504.
	MaxRunDuration time.Duration
	// StreamStallTimeout ends a stream whose client has taken none of its
	// bytes for this long, as a broken stream: its run goes on (and may be
	// resumed), and its slot among MaxStreams is free at once.
	StreamStallTimeout time.Duration
	// BodyReadTimeout caps the time a client may take to send a request
	// body once its headers are in (408 beyond it).
	BodyReadTimeout time.Duration
	// MaxHeaderBytes caps a request's headers (431 beyond it). The HTTP
	// server's own cap (ServerMaxHeaderBytes) sits a little above, so that
	// most heads over the limit still get a JSON error naming it.
	MaxHeaderBytes int
}

// ServerMaxHeaderBytes is the http.Server's MaxHeaderBytes for l: past it
// the server itself refuses the request, in plain text.
func (l Limits) ServerMaxHeaderBytes() int { return l.orDefaults().MaxHeaderBytes + 16<<10 }

// DefaultLimits are the limits the service runs with unless told otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:       DefaultMaxBodyBytes,
		MaxMessages:        100,
		MaxMessageBytes:    64 << 10,
		MaxIDBytes:         256,
		MaxStreams:         1000,
		MaxRunDuration:     10 * time.Minute,
		BodyReadTimeout:    10 * time.Second,
		StreamStallTimeout: time.Minute,
		MaxHeaderBytes:     64 << 10,
	}
}

// orDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.MaxMessages <= 0 {
		l.MaxMessages = d.MaxMessages
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = d.MaxMessageBytes
	}
	if l.MaxIDBytes <= 0 {
		l.MaxIDBytes = d.MaxIDBytes
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = d.MaxStreams
	}
	if l.MaxRunDuration <= 0 {
		l.MaxRunDuration = d.MaxRunDuration
	}
	if l.StreamStallTimeout <= 0 {
		l.StreamStallTimeout = d.StreamStallTimeout
	}
	if l.BodyReadTimeout <= 0 {
		l.BodyReadTimeout = d.BodyReadTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	return l
}

// Config holds the server's dependencies.
type Config struct {
	Runner Runner
	// Agent describes the agent for GET /api/agents and
	// /api/agents/{agentId}.
	Agent AgentInfo
	// Threads serves the threads API (/api/memory/threads); nil leaves it
	// out.
	Threads Threads
	// Ready checks what the service depends on, for GET /ready; nil is
	// always ready.
	Ready func(ctx context.Context) error
	// Logger gets a line per request; nil discards.
	Logger *slog.Logger
	// Limits bound requests; zero fields take their defaults.
	Limits Limits
	// TracerProvider makes a server span per request; nil makes none.
	TracerProvider trace.TracerProvider
	// Propagator reads a caller's trace context from the request headers,
	// so that runs join the caller's trace; nil means W3C Trace Context.
	Propagator propagation.TextMapPropagator
	// Observer is told about requests and streams; nil is none.
	Observer Observer
	// Metrics, when set, is served at GET /metrics.
	Metrics http.Handler
	// Document, when set, is the API's OpenAPI document as JSON, served to
	// anyone at GET /openapi.json.
	Document []byte
	// Auth authenticates every request but /health and /ready; nil, or one
	// not Enabled, leaves authentication off.
	Auth Authenticator
	// CORSOrigins are the browser origins allowed to call the API.
	CORSOrigins []string
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// when telling a request's client address.
	TrustedProxies []netip.Prefix
	// RateLimiter, when set, limits the requests of each client address
	// and each resource (keys "addr:..." and "resource:...").
	RateLimiter RateLimiter
	// StreamFormat is the stream dialect of requests that name none
	// (X-Stream-Format): FormatSeed (""), FormatMastra or FormatAISDK.
	StreamFormat string
	// RunLog keeps streamed runs' events, for streams to follow and
	// resume; nil keeps them in memory for StreamRetention.
	RunLog runlog.Log
	// StreamRetention is how long a run's events stay to be resumed after
	// it ended (with the in-memory log); 0 means DefaultStreamRetention.
	StreamRetention time.Duration
	// ResumeGrace is how long a run goes on after its last stream broke,
	// waiting to be resumed; 0 cancels it when its stream breaks.
	ResumeGrace time.Duration
}

// Defaults of resumable streams.
const (
	DefaultStreamRetention = 5 * time.Minute
	DefaultResumeGrace     = 30 * time.Second
)

// Server is the API's http.Handler.
type Server struct {
	cfg     Config
	log     *slog.Logger
	obs     Observer
	router  chi.Router
	handler http.Handler
	// streams holds a token per open stream, Limits.MaxStreams at most.
	streams chan struct{}
	runs    *run.Runs
}

// NewServer returns the API handler.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Limits = cfg.Limits.orDefaults()
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = tracenoop.NewTracerProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.TraceContext{}
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.StreamRetention <= 0 {
		cfg.StreamRetention = DefaultStreamRetention
	}
	if cfg.RunLog == nil {
		cfg.RunLog = runlog.NewMemory(runlog.MemoryOptions{Retention: cfg.StreamRetention})
	}
	s := &Server{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, streams: make(chan struct{}, cfg.Limits.MaxStreams)}
	s.runs = run.New(run.Config{Log: cfg.RunLog, Runner: runner{s}, Failure: failedOf,
		MaxDuration: cfg.Limits.MaxRunDuration, Grace: cfg.ResumeGrace, Logger: cfg.Logger})
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

// ServeHTTP implements http.Handler. Every response carries the request's
// id in X-Request-Id: the client's own when it sent a well-formed one,
// else a new one; every log line of the request names it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r, ok := s.admitHead(w, r); ok {
		s.handler.ServeHTTP(w, r)
	}
}

// admitHead gives r its request id (the client's, when valid) and checks
// the size of its head; it answers r and returns false when that is too
// large.
func (s *Server) admitHead(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	id := ""
	if vs := r.Header.Values(requestid.Header); len(vs) == 1 && requestid.Valid(vs[0]) {
		id = vs[0]
	} else {
		id = requestid.New()
	}
	w.Header().Set(requestid.Header, id)
	r = r.WithContext(requestid.With(r.Context(), id))
	if n := headerBytes(r); n > s.cfg.Limits.MaxHeaderBytes {
		s.writeError(w, r, apperr.New(apperr.HeadersTooLarge, "request headers are %d bytes, more than the limit of %d (-max-header-bytes)", n, s.cfg.Limits.MaxHeaderBytes))
		return r, false
	}
	return r, true
}

// headerBytes is the size of r's head as the client sent it, near enough:
// the request line and each header line.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}
