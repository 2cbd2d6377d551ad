// Package app assembles the service from its configuration: the model, the
// tools, the agent, the HTTP API and their telemetry (tracer provider,
// metrics registry, trace-aware logs), and serves it with a graceful
// shutdown.
// It is the one place where the parts are wired together; cmd/companion
// fills its Config from flags and environment, and end-to-end tests build it
// directly against the fakes.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/auth"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/postgres"
	"github.com/companionhq/companion/internal/memory/sqlite"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/provider"
	"github.com/companionhq/companion/internal/openapi"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/redact"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/telemetry"
	"github.com/companionhq/companion/internal/tool/weather"
	"github.com/companionhq/companion/internal/turn"
	"github.com/companionhq/companion/internal/web"
)

// Config is everything the service needs to know. Defaults() fills the
// documented defaults.
type Config struct {
	Addr            string
	Model           string
	MaxSteps        int
	MaxOutputTokens int
	// Limits bound what one request may ask (body, messages, ids, streams,
	// run duration, body read time).
	Limits        httpapi.Limits
	ShutdownGrace time.Duration
	// ShutdownDelay is how long /ready answers 503 at the start of a
	// shutdown while the listener still serves, so that a load balancer
	// stops sending requests before it closes.
	ShutdownDelay time.Duration

	WeatherGeocodingURL string
	WeatherForecastURL  string
	WeatherTimeout      time.Duration

	FakeFirstTokenDelay time.Duration
	FakeTokenDelay      time.Duration

	// Version is the service.version of exported spans.
	Version string
	// OTLPProtocol exports spans over OTLP, "grpc" or "http/protobuf"; ""
	// exports none. cmd/companion sets it from the standard
	// OTEL_EXPORTER_OTLP_* variables, which the exporter then reads itself.
	OTLPProtocol string
	// TraceContent records message contents, tool arguments and results in
	// spans. Off by default: they may hold personal data.
	TraceContent bool
	// SpanExporter, when set, receives every span as it ends; tests give an
	// in-memory one.
	SpanExporter sdktrace.SpanExporter
	// DatabaseURL chooses the conversation store: sqlite://PATH (a file,
	// created with its directory) or postgres://... (postgresql:// too).
	DatabaseURL string
	// HistoryWindow is how many stored messages of a thread each run sees.
	HistoryWindow int
	// LockWait is how long a turn waits for the thread's previous turn
	// before it is refused with 409.
	LockWait time.Duration
	// HistoryBytes bounds the message content a run sees of its thread.
	HistoryBytes int
	// MaxThreadBytes is what one thread may store (0: no limit).
	MaxThreadBytes int64
	// TokenQuota is the tokens one resource may use per UTC day (0: none).
	TokenQuota int64
	// CostQuota is what one resource's runs may cost per UTC day, in US
	// dollars (0: none).
	CostQuota float64
	// PricesFile is a prices table (JSON) over the shipped one; "" uses
	// the shipped one.
	PricesFile string

	// Auth: API keys (a file of "KEY RESOURCE[,RESOURCE...]" lines) and JWT
	// bearer tokens (a JWKS URL, or an HS256 secret file for development).
	// With none set, authentication is off.
	APIKeysFile      string
	JWKSURL          string
	JWTIssuer        string
	JWTAudience      string
	JWTResourceClaim string
	JWTSecretFile    string
	// CORSOrigins are the browser origins allowed to call the API; none by
	// default.
	CORSOrigins []string
	// RateLimit is the requests per minute one resource, and one client
	// address, may make (0: no limit).
	RateLimit int
	// RedisURL, when set, shares the rate limits of every instance through
	// Redis.
	RedisURL redact.Secret
	// StreamFormat is the stream dialect of requests that name none:
	// "seed" (or ""), "mastra" or "ai-sdk".
	StreamFormat string
	// StreamRetention is how long a streamed run's events stay to be
	// resumed after it ended; ResumeGrace how long a run goes on after its
	// last stream broke (0: cancel it at once).
	StreamRetention time.Duration
	ResumeGrace     time.Duration
	// StreamRetainedBytes bounds the events of ended runs this instance
	// keeps for resuming, all runs together: past it, the runs that ended
	// first are forgotten before their retention is over.
	StreamRetainedBytes int
	// MetricsAddr, when set, serves /metrics on a listener of its own and
	// not on the API's (cmd/companion opens it).
	MetricsAddr string
	// TrustedProxies are the networks of the proxies in front of the
	// service: from them, X-Forwarded-For names the client address.
	TrustedProxies []netip.Prefix
	// ModelBaseURL replaces the provider's address; with a model name that
	// names no provider it selects an OpenAI-compatible server.
	ModelBaseURL string
	// CohereAPIKey and OpenAIAPIKey are the providers' keys (CO_API_KEY,
	// OPENAI_API_KEY).
	CohereAPIKey redact.Secret
	OpenAIAPIKey redact.Secret
	// The resilience policy of real providers (see model.Policy).
	ModelTimeout           time.Duration
	ModelFirstTokenTimeout time.Duration
	ModelMaxRetries        int
	ModelRetryDelay        time.Duration
	ModelRetryBudget       time.Duration
	// WebUI serves the web chat page at / and /assets/ beside the API.
	WebUI bool
	// RecordDir, when set, records every exchange with the model provider
	// to a cassette in this directory (internal/model/replay).
	RecordDir string
	// ReplayDir holds the cassettes the model "replay" answers from;
	// ReplayFast replays them without their recorded delays.
	ReplayDir  string
	ReplayFast bool
}

// Defaults returns the configuration the service runs with when nothing is
// set.
func Defaults() Config {
	p := model.DefaultPolicy()
	return Config{
		Addr:                "127.0.0.1:4111",
		MaxSteps:            agent.DefaultMaxSteps,
		Limits:              httpapi.DefaultLimits(),
		ShutdownGrace:       10 * time.Second,
		WeatherGeocodingURL: weather.DefaultGeocodingURL,
		WeatherForecastURL:  weather.DefaultForecastURL,
		WeatherTimeout:      weather.DefaultTimeout,
		DatabaseURL:         DefaultDatabaseURL,
		HistoryWindow:       turn.DefaultWindow,
		LockWait:            turn.DefaultLockWait,
		HistoryBytes:        turn.DefaultHistoryBytes,
		StreamRetention:     httpapi.DefaultStreamRetention,
		StreamRetainedBytes: runlog.DefaultMaxRetained,
		ResumeGrace:         httpapi.DefaultResumeGrace,
		MaxThreadBytes:      turn.DefaultMaxThreadBytes,

		ModelTimeout:           p.CallTimeout,
		ModelFirstTokenTimeout: p.FirstTokenTimeout,
		ModelMaxRetries:        p.MaxAttempts - 1,
		ModelRetryDelay:        p.BaseDelay,
		ModelRetryBudget:       p.RetryBudget,
		WebUI:                  true,
	}
}

// DefaultDatabaseURL is a SQLite file under ./data/, relative to the
// working directory.
const DefaultDatabaseURL = "sqlite://data/companion.db"

// App is the assembled service.
type App struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler
	model   model.Model
	tracing *sdktrace.TracerProvider
	store   memory.Store
	auth    *auth.Authenticator
	metrics http.Handler
	api     *httpapi.Server
	// closeShared closes the run log and the Redis client, if any.
	closeShared func()
	// draining is set at the start of a shutdown: /ready answers 503.
	draining atomic.Bool
}

// ReloadCredentials reads the API keys file again (on SIGHUP). A file that
// does not parse leaves the keys as they were.
func (a *App) ReloadCredentials() error {
	if err := a.auth.Reload(); err != nil {
		a.log.Error("the API keys file was not reloaded: the keys in use stay", slog.String("error", err.Error()))
		return err
	}
	a.log.Info("API keys reloaded")
	return nil
}

// tracerName is the instrumentation scope of the agent's spans.
const tracerName = "github.com/companionhq/companion/internal/agent"

// New builds the service from cfg.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Every line logged within a request or run names its trace and span.
	log = slog.New(telemetry.LogHandler(log.Handler()))
	m, err := newModel(cfg, log)
	if err != nil {
		return nil, err
	}
	tp, err := telemetry.NewTracerProvider(ctx, telemetry.TracingConfig{
		ServiceVersion: cfg.Version, OTLPProtocol: cfg.OTLPProtocol, Exporter: cfg.SpanExporter,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tp.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	reg, err := telemetry.NewRegistry()
	if err != nil {
		return nil, err
	}
	metrics, err := telemetry.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	tools := []agent.Tool{weather.New(weather.Config{
		GeocodingURL: cfg.WeatherGeocodingURL, ForecastURL: cfg.WeatherForecastURL, Timeout: cfg.WeatherTimeout,
	})}
	toolNames := make([]string, 0, len(tools))
	for _, t := range tools {
		toolNames = append(toolNames, t.Name())
	}
	metrics.Known(m.Provider(), m.ID(), toolNames...)
	prices := pricing.Default()
	if cfg.PricesFile != "" {
		if prices, err = pricing.Load(cfg.PricesFile); err != nil {
			return nil, err
		}
	}
	ag, err := agent.New(agent.Config{
		Prices:          prices,
		Model:           m,
		Tools:           tools,
		MaxSteps:        cfg.MaxSteps,
		MaxOutputTokens: cfg.MaxOutputTokens,
		Tracer:          tp.Tracer(tracerName),
		TraceContent:    cfg.TraceContent,
		Observer:        metrics,
		Logger:          log,
	})
	if err != nil {
		return nil, err
	}
	authn, err := auth.New(ctx, auth.Config{
		APIKeysFile: cfg.APIKeysFile, JWKSURL: cfg.JWKSURL, JWTSecretFile: cfg.JWTSecretFile,
		Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, ResourceClaim: cfg.JWTResourceClaim, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	defer func() {
		if err != nil {
			authn.Close()
		}
	}()
	store, err := OpenStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	turns, err := turn.New(turn.Config{Store: store, Agent: ag, Window: cfg.HistoryWindow, LockWait: cfg.LockWait,
		HistoryBytes: cfg.HistoryBytes, MaxThreadBytes: limits.ThreadBytes(cfg.MaxThreadBytes),
		Quota: limits.Quota{Tokens: cfg.TokenQuota, Cost: cfg.CostQuota}})
	if err != nil {
		store.Close()
		return nil, err
	}
	a := &App{
		cfg:     cfg,
		log:     log,
		model:   m,
		tracing: tp,
		store:   store,
		auth:    authn,
		metrics: telemetry.Handler(reg),
	}
	apiMetrics := a.metrics
	if cfg.MetricsAddr != "" {
		apiMetrics = nil // served on its own listener only
	}
	var rdb *redis.Client
	if cfg.RedisURL != "" {
		opts, err := limits.ParseRedisURL(string(cfg.RedisURL))
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("the Redis URL: %w", err)
		}
		rdb = redis.NewClient(opts)
	}
	limiter := newRateLimiter(cfg, rdb, log, metrics)
	runLog, local := newRunLog(cfg, rdb, log)
	if err := telemetry.WatchRunLog(reg, local.Stats); err != nil {
		return nil, err
	}
	a.closeShared = func() {
		_ = runLog.Close()
		if rdb != nil {
			_ = rdb.Close()
		}
	}
	a.api = httpapi.NewServer(httpapi.Config{
		Runner:         turns,
		Threads:        turns.Threads(),
		Ready:          a.ready(turns.Ping),
		Logger:         log,
		Limits:         cfg.Limits,
		TracerProvider: tp,
		// The caller's W3C traceparent, explicitly: no global propagator.
		Propagator:      propagation.TraceContext{},
		Observer:        metrics,
		Metrics:         apiMetrics,
		Document:        openapi.Spec(),
		Auth:            authn,
		CORSOrigins:     cfg.CORSOrigins,
		TrustedProxies:  cfg.TrustedProxies,
		RateLimiter:     limiter,
		StreamFormat:    cfg.StreamFormat,
		RunLog:          runLog,
		StreamRetention: cfg.StreamRetention,
		ResumeGrace:     cfg.ResumeGrace,
	})
	a.handler = a.api
	if cfg.WebUI {
		a.handler = withWebUI(a.handler, web.Handler())
	}
	return a, nil
}

// withWebUI sends GET and HEAD of / and /assets/... to the web chat page,
// and every other request to the API, unchanged.
func withWebUI(api, page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
			(r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/assets/")) {
			page.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// newRateLimiter builds the request rate limiter of cfg: none without a
// rate limit; in process; or shared through Redis (rdb), falling back to
// the in-process one while Redis cannot be reached.
func newRateLimiter(cfg Config, rdb *redis.Client, log *slog.Logger, metrics *telemetry.Metrics) httpapi.RateLimiter {
	if cfg.RateLimit <= 0 {
		return nil
	}
	local := limits.NewLocal(cfg.RateLimit)
	if rdb == nil {
		return local
	}
	metrics.RateLimitsShared(true)
	f := limits.NewFallback(limits.NewRedis(rdb, cfg.RateLimit, limits.DefaultPrefix), local, limits.FallbackOptions{
		OnChange: func(up bool, err error) {
			metrics.RateLimitsShared(up)
			if up {
				log.Info("Redis answers again: rate limits are shared by every instance")
				return
			}
			log.Warn("Redis cannot be reached: rate limits are kept by this instance alone until it answers",
				slog.String("error", err.Error()))
		},
	})
	log.Info("rate limits shared through Redis", slog.String("redis", rdb.Options().Addr), slog.Int("per_minute", cfg.RateLimit))
	return f
}

// newRunLog is where streamed runs keep their events: in memory, or also
// in Redis (rdb) so that any instance can resume or cancel them. local is
// this instance's part, in memory.
func newRunLog(cfg Config, rdb *redis.Client, log *slog.Logger) (l runlog.Log, local *runlog.Memory) {
	local = runlog.NewMemory(runlog.MemoryOptions{Retention: cfg.StreamRetention, MaxRetained: cfg.StreamRetainedBytes})
	if rdb == nil {
		return local, local
	}
	l = runlog.NewRedis(rdb, local, runlog.RedisOptions{
		MaxRunTime: cfg.Limits.MaxRunDuration,
		// Each failed call at debug level; an outage's start and end once.
		OnError: func(err error) {
			log.Debug("a call to Redis for the run log failed", slog.String("error", err.Error()))
		},
		OnChange: func(up bool, err error) {
			if up {
				log.Info("Redis answers again: streams are resumable on every instance")
				return
			}
			log.Warn("run events could not be written to Redis: streams are resumable on this instance only until it answers",
				slog.String("error", err.Error()))
		},
	})
	return l, local
}

// ready is the readiness check: not ready from the start of a shutdown,
// else ready when the store's check passes.
func (a *App) ready(store func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if a.draining.Load() {
			return apperr.New(apperr.Unavailable, "not ready: the service is shutting down").AsExpected()
		}
		return store(ctx)
	}
}

// Handler is the service's HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// Close releases what New opened: it closes the store and flushes the
// spans still buffered for export, waiting a few seconds at most.
func (a *App) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	if err := a.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the database: %w", err))
	}
	if err := a.tracing.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("flushing spans: %w", err))
	}
	a.auth.Close()
	a.closeShared()
	return errors.Join(errs...)
}

// OpenStore opens the conversation store that url names: sqlite://PATH or
// postgres://... It migrates the database to the current schema.
func OpenStore(ctx context.Context, url string) (memory.Store, error) {
	switch {
	case strings.HasPrefix(url, "sqlite://"):
		path := strings.TrimPrefix(url, "sqlite://")
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("opening the database: %w", err)
		}
		return s, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("opening the database: %w", err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("the database URL must start with sqlite:// (a file) or postgres:// (a server), not %q", redact.URL(url))
}

// DatabaseKind names the store a database URL selects, for logs.
func DatabaseKind(url string) string {
	if strings.HasPrefix(url, "sqlite://") {
		return "sqlite"
	}
	return "postgres"
}

// newModel opens the model the configuration names (see provider.Open).
func newModel(cfg Config, log *slog.Logger) (model.Model, error) {
	return provider.Open(provider.Config{
		Model: cfg.Model, BaseURL: cfg.ModelBaseURL,
		CohereAPIKey: cfg.CohereAPIKey, OpenAIAPIKey: cfg.OpenAIAPIKey,
		Timeout: cfg.ModelTimeout, FirstTokenTimeout: cfg.ModelFirstTokenTimeout,
		MaxRetries: cfg.ModelMaxRetries, RetryDelay: cfg.ModelRetryDelay, RetryBudget: cfg.ModelRetryBudget,
		FakeFirstTokenDelay: cfg.FakeFirstTokenDelay, FakeTokenDelay: cfg.FakeTokenDelay,
		RecordDir: cfg.RecordDir, ReplayDir: cfg.ReplayDir, ReplayFast: cfg.ReplayFast,
	}, log)
}

// loopback reports whether addr is reachable from this host only.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// metricsOnly serves h at /metrics and nothing else.
func metricsOnly(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return mux
}

// Serve serves the API on ln until ctx ends, then shuts down gracefully: it
// stops accepting, lets in-flight runs finish within the grace period,
// cancels what is left (streams then end with an error event and
// run-finish), and returns nil. metrics, when not nil, serves /metrics
// alone (see Config.MetricsAddr).
func (a *App) Serve(ctx context.Context, ln, metrics net.Listener) error {
	// Requests derive their context from base: cancelling it, when their
	// handlers have not returned after the runs were cancelled
	// (api.CancelRuns), ends what is still waiting in them.
	base, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    a.cfg.Limits.ServerMaxHeaderBytes(),
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	spans := "not exported (no OTLP endpoint set)"
	if a.cfg.OTLPProtocol != "" {
		spans = "exported over OTLP " + a.cfg.OTLPProtocol
	}
	a.log.Info("listening", slog.String("addr", ln.Addr().String()),
		slog.String("model", a.model.Provider()+"/"+a.model.ID()), slog.Int("max_steps", a.cfg.MaxSteps),
		slog.Duration("shutdown_grace", a.cfg.ShutdownGrace), slog.String("spans", spans),
		slog.Bool("trace_content", a.cfg.TraceContent), slog.String("metrics", "/metrics"),
		slog.String("database", DatabaseKind(a.cfg.DatabaseURL)),
		slog.Int("history_window", a.cfg.HistoryWindow), slog.Duration("lock_wait", a.cfg.LockWait))

	if !a.auth.Enabled() && !loopback(ln.Addr()) {
		a.log.Warn("AUTHENTICATION IS OFF on a listener other hosts can reach: anyone who can connect may read and write every thread. "+
			"Set -api-keys-file or -jwt-jwks-url (see docs/security.md), or listen on 127.0.0.1.", slog.String("addr", ln.Addr().String()))
	}
	if metrics != nil {
		msrv := &http.Server{Handler: metricsOnly(a.metrics), ReadHeaderTimeout: 10 * time.Second, ErrorLog: srv.ErrorLog}
		go func() { _ = msrv.Serve(metrics) }()
		defer msrv.Close()
		a.log.Info("serving metrics", slog.String("addr", metrics.Addr().String()))
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}

	// Not ready first, while the listener still serves: a load balancer
	// polling /ready stops sending requests before they would be refused.
	a.draining.Store(true)
	if a.cfg.ShutdownDelay > 0 {
		a.log.Info("shutting down: not ready, still serving", slog.String("delay", a.cfg.ShutdownDelay.String()))
		time.Sleep(a.cfg.ShutdownDelay)
	}
	a.log.Info("shutting down", slog.Duration("grace", a.cfg.ShutdownGrace))
	graceCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(graceCtx)
	if err == nil {
		// Streamed runs whose connections are gone may still be going,
		// waiting to be resumed; they too get the grace period.
		err = a.api.WaitRuns(graceCtx)
	}
	if err != nil {
		// Grace is over: cancel the runs, give their streams a moment to
		// write their terminal events, then close what remains. Streamed
		// runs go first: their streams must still be open to say so.
		a.log.Warn("grace period over: cancelling in-flight runs")
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		a.api.CancelRuns()
		_ = a.api.WaitRuns(closeCtx)
		// Their streams write the runs' ends, then their handlers return.
		if err := srv.Shutdown(closeCtx); err != nil {
			cancelRequests()
			_ = srv.Close()
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	a.log.Info("stopped")
	return nil
}
