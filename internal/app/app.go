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
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/auth"
	"github.com/companionhq/companion/internal/embed"
	"github.com/companionhq/companion/internal/embedindex"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/provider"
	"github.com/companionhq/companion/internal/openapi"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/telemetry"
	"github.com/companionhq/companion/internal/tool/mcp"
	"github.com/companionhq/companion/internal/tool/weather"
	"github.com/companionhq/companion/internal/turn"
	"github.com/companionhq/companion/internal/web"
)

// App is the assembled service.
type App struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler
	model   model.Model
	tracing *sdktrace.TracerProvider
	store   memory.Store
	turns   *turn.Turns
	auth    *auth.Authenticator
	metrics http.Handler
	api     *httpapi.Server
	// closeShared closes the run log and the Redis client, if any.
	closeShared func()
	// mcp is the MCP servers' clients, stopping their processes on Close.
	mcp *mcp.Set
	// draining is set at the start of a shutdown: /ready answers 503.
	draining atomic.Bool
	// stopIndexer stops the vector indexer, if any, and waits for it.
	stopIndexer func()
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

// New builds the service from cfg, section by section: the model, the
// telemetry, the agent with its tools, authentication, the store and the
// turns, what instances share through Redis, and the HTTP API. What it
// opened is closed again when a later part fails.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Every line logged within a request or run names its trace and span.
	log = slog.New(telemetry.LogHandler(log.Handler()))
	m, err := provider.Open(cfg.Model.Config, log)
	if err != nil {
		return nil, err
	}
	tel, err := newInstruments(ctx, cfg.Telemetry)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tel.tracing.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	mcpTools, err := openMCP(ctx, cfg.Tools, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			mcpTools.Close()
		}
	}()
	ag, err := newAgent(cfg, m, mcpTools, tel, log)
	if err != nil {
		return nil, err
	}
	authn, err := newAuth(ctx, cfg.Auth, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			authn.Close()
		}
	}()
	store, turns, stopIndexer, err := newTurns(ctx, cfg, ag, m, tel, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			stopIndexer()
			store.Close()
		}
	}()
	sh, err := newShared(cfg, log, tel)
	if err != nil {
		return nil, err
	}
	a := &App{
		cfg:         cfg,
		log:         log,
		model:       m,
		tracing:     tel.tracing,
		store:       store,
		turns:       turns,
		auth:        authn,
		metrics:     telemetry.Handler(tel.registry),
		closeShared: sh.close,
		mcp:         mcpTools,
		stopIndexer: stopIndexer,
	}
	a.api = a.newAPI(turns, describeAgent(ag, turns, m), tel, sh)
	a.handler = a.api
	if cfg.Server.WebUI {
		a.handler = withWebUI(a.handler, web.Handler())
	}
	return a, nil
}

// instruments are the service's telemetry: its tracer provider, and its
// metrics with the registry that serves them.
type instruments struct {
	tracing  *sdktrace.TracerProvider
	registry *prometheus.Registry
	metrics  *telemetry.Metrics
}

// newInstruments builds the telemetry cfg asks for; on error, nothing is
// left to shut down.
func newInstruments(ctx context.Context, cfg TelemetryConfig) (_ instruments, err error) {
	tp, err := telemetry.NewTracerProvider(ctx, cfg.TracingConfig)
	if err != nil {
		return instruments{}, err
	}
	defer func() {
		if err != nil {
			_ = tp.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	reg, err := telemetry.NewRegistry()
	if err != nil {
		return instruments{}, err
	}
	metrics, err := telemetry.NewMetrics(reg)
	if err != nil {
		return instruments{}, err
	}
	return instruments{tracing: tp, registry: reg, metrics: metrics}, nil
}

// openMCP connects to the MCP servers of cfg's file, if any. Only a broken
// file fails the start: a server that cannot be reached is logged, and its
// tools fail until it answers.
func openMCP(ctx context.Context, cfg ToolsConfig, log *slog.Logger) (*mcp.Set, error) {
	var servers []mcp.Server
	if cfg.MCPServers != "" {
		var err error
		if servers, err = mcp.Load(cfg.MCPServers); err != nil {
			return nil, err
		}
	}
	return mcp.Open(ctx, servers, mcp.Options{Log: log}), nil
}

// newAgent is the agent on model m with the tools of cfg and the MCP
// servers' tools, its runs priced by the shipped prices or cfg's prices
// file.
func newAgent(cfg Config, m model.Model, servers *mcp.Set, tel instruments, log *slog.Logger) (*agent.Agent, error) {
	tools := []agent.Tool{weather.New(cfg.Tools.Weather)}
	for _, t := range servers.Tools() {
		tools = append(tools, t)
	}
	toolNames := make([]string, 0, len(tools)+1)
	for _, t := range tools {
		toolNames = append(toolNames, t.Name())
	}
	if !cfg.Memory.WorkingMemory.Off {
		// Offered by the turns, run by the agent like its own.
		toolNames = append(toolNames, turn.UpdateWorkingMemoryTool)
	}
	tel.metrics.Known(m.Provider(), m.ID(), toolNames...)
	prices := pricing.Default()
	if cfg.Model.PricesFile != "" {
		var err error
		if prices, err = pricing.Load(cfg.Model.PricesFile); err != nil {
			return nil, err
		}
	}
	return agent.New(agent.Config{
		Prices:          prices,
		Model:           m,
		Tools:           tools,
		MaxSteps:        cfg.Model.MaxSteps,
		MaxOutputTokens: cfg.Model.MaxOutputTokens,
		Tracer:          tel.tracing.Tracer(tracerName),
		TraceContent:    cfg.Telemetry.TraceContent,
		Observer:        tel.metrics,
		Logger:          log,
	})
}

// newAuth is the authenticator of cfg, logging to log.
func newAuth(ctx context.Context, cfg auth.Config, log *slog.Logger) (*auth.Authenticator, error) {
	cfg.Logger = log
	authn, err := auth.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	return authn, nil
}

// newTurns opens the store and runs the turns of its threads with ag; with
// an embedding model, it starts the vector indexer too, which stop stops.
// On error, the store is closed.
func newTurns(ctx context.Context, cfg Config, ag *agent.Agent, m model.Model, tel instruments, log *slog.Logger) (_ memory.Store, _ *turn.Turns, stop func(), err error) {
	wm := cfg.Memory.WorkingMemory
	if f := cfg.Memory.WorkingMemoryTemplateFile; f != "" {
		if wm.Format, wm.Template, err = turn.LoadWorkingMemoryTemplate(f); err != nil {
			return nil, nil, nil, err
		}
	}
	var titler turn.Titler
	if cfg.Memory.Titles {
		titler = turn.ModelTitler{Model: m}
	}
	ecfg := cfg.Memory.Embed
	ecfg.APIKey = string(cfg.Memory.EmbedAPIKey)
	embedder, err := embed.New(ecfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the embedding model: %w", err)
	}
	guard, err := safetyConfig(cfg.Safety, cfg.Model.BaseURL)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := OpenStore(ctx, cfg.Storage.DatabaseURL)
	if err != nil {
		return nil, nil, nil, err
	}
	stop = func() {}
	tcfg := turn.Config{Safety: guard, Store: store, Agent: ag, Window: cfg.Storage.HistoryWindow, LockWait: cfg.Storage.LockWait,
		HistoryBytes: cfg.Storage.HistoryBytes, MaxThreadBytes: cfg.Limits.MaxThreadBytes, Quota: cfg.Limits.Quota,
		WorkingMemory: wm, Recall: cfg.Memory.Recall, Titler: titler,
		Observer: tel.metrics, Tracer: tel.tracing.Tracer(tracerName), Logger: log}
	if embedder != nil {
		ix, err := embedindex.New(embedindex.Config{Store: store, Embedder: embedder, Observer: tel.metrics, Logger: log})
		if err != nil {
			store.Close()
			return nil, nil, nil, err
		}
		tcfg.Embedder, tcfg.Stored = embedder, ix.Wake
		tcfg.EmbedMinSimilarity, tcfg.EmbedWeight = cfg.Memory.EmbedMinSimilarity, cfg.Memory.EmbedWeight
		ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = ix.Run(ictx)
		}()
		stop = func() {
			cancel()
			<-done
		}
	}
	turns, err := turn.New(tcfg)
	if err != nil {
		stop()
		store.Close()
		return nil, nil, nil, err
	}
	return store, turns, stop, nil
}

// shared is what every instance may share through Redis: the rate limits
// and the run log.
type shared struct {
	limiter httpapi.RateLimiter
	runLog  runlog.Log
	// close closes the run log and the Redis client, if any.
	close func()
}

// newShared builds the rate limiter and the run log, through Redis when
// cfg names one; on error, nothing is left open.
func newShared(cfg Config, log *slog.Logger, tel instruments) (shared, error) {
	var rdb *redis.Client
	if cfg.Storage.RedisURL != "" {
		opts, err := limits.ParseRedisURL(string(cfg.Storage.RedisURL))
		if err != nil {
			return shared{}, fmt.Errorf("the Redis URL: %w", err)
		}
		rdb = redis.NewClient(opts)
	}
	limiter := newRateLimiter(cfg, rdb, log, tel.metrics)
	runLog, local := newRunLog(cfg, rdb, log)
	closeAll := func() {
		_ = runLog.Close()
		if rdb != nil {
			_ = rdb.Close()
		}
	}
	if err := telemetry.WatchRunLog(tel.registry, local.Stats); err != nil {
		closeAll()
		return shared{}, err
	}
	return shared{limiter: limiter, runLog: runLog, close: closeAll}, nil
}

// describeAgent is what the agent routes show of ag on model m: the
// default personality's instructions, and the tools of every run, the
// agent's own and those the turns add.
func describeAgent(ag *agent.Agent, turns *turn.Turns, m model.Model) httpapi.AgentInfo {
	return httpapi.AgentInfo{
		Instructions: agent.Instructions(agent.Friend, nil),
		Tools:        append(ag.Tools(), turns.Tools()...),
		Provider:     m.Provider(),
		ModelID:      m.ID(),
	}
}

// newAPI is the HTTP API over turns, with the agent described by info.
func (a *App) newAPI(turns *turn.Turns, info httpapi.AgentInfo, tel instruments, sh shared) *httpapi.Server {
	apiMetrics := a.metrics
	if a.cfg.Server.MetricsAddr != "" {
		apiMetrics = nil // served on its own listener only
	}
	return httpapi.NewServer(httpapi.Config{
		Runner:         turns,
		Agent:          info,
		Threads:        turns.Threads(),
		Ready:          a.ready(turns.Ping),
		Logger:         a.log,
		Limits:         a.cfg.Limits.Limits,
		TracerProvider: tel.tracing,
		// The caller's W3C traceparent, explicitly: no global propagator.
		Propagator:      propagation.TraceContext{},
		Observer:        tel.metrics,
		Metrics:         apiMetrics,
		Document:        openapi.Spec(),
		Auth:            a.auth,
		CORSOrigins:     a.cfg.Server.CORSOrigins,
		TrustedProxies:  a.cfg.Server.TrustedProxies,
		RateLimiter:     sh.limiter,
		StreamFormat:    a.cfg.Server.StreamFormat,
		RunLog:          sh.runLog,
		StreamRetention: a.cfg.Server.StreamRetention,
		ResumeGrace:     a.cfg.Server.ResumeGrace,
	})
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
	if cfg.Limits.RateLimit <= 0 {
		return nil
	}
	local := limits.NewLocal(cfg.Limits.RateLimit)
	if rdb == nil {
		return local
	}
	metrics.RateLimitsShared(true)
	f := limits.NewFallback(limits.NewRedis(rdb, cfg.Limits.RateLimit, limits.DefaultPrefix), local, limits.FallbackOptions{
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
	log.Info("rate limits shared through Redis", slog.String("redis", rdb.Options().Addr), slog.Int("per_minute", cfg.Limits.RateLimit))
	return f
}

// newRunLog is where streamed runs keep their events: in memory, or also
// in Redis (rdb) so that any instance can resume or cancel them. local is
// this instance's part, in memory.
func newRunLog(cfg Config, rdb *redis.Client, log *slog.Logger) (l runlog.Log, local *runlog.Memory) {
	local = runlog.NewMemory(runlog.MemoryOptions{Retention: cfg.Server.StreamRetention, MaxRetained: cfg.Server.StreamRetainedBytes})
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
	// Titles still being made write to the store: a few seconds for them.
	_ = a.turns.WaitTitles(ctx)
	// The indexer stops between calls: a batch it was embedding is
	// embedded again at the next start.
	a.stopIndexer()
	if err := a.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the database: %w", err))
	}
	if err := a.tracing.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("flushing spans: %w", err))
	}
	a.auth.Close()
	a.closeShared()
	if err := a.mcp.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the MCP servers: %w", err))
	}
	return errors.Join(errs...)
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
// alone (see ServerConfig.MetricsAddr).
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
	if a.cfg.Telemetry.OTLPProtocol != "" {
		spans = "exported over OTLP " + a.cfg.Telemetry.OTLPProtocol
	}
	a.log.Info("listening", slog.String("addr", ln.Addr().String()),
		slog.String("model", a.model.Provider()+"/"+a.model.ID()), slog.Int("max_steps", a.cfg.Model.MaxSteps),
		slog.Duration("shutdown_grace", a.cfg.Server.ShutdownGrace), slog.String("spans", spans),
		slog.Bool("trace_content", a.cfg.Telemetry.TraceContent), slog.String("metrics", "/metrics"),
		slog.String("database", databaseKind(a.cfg.Storage.DatabaseURL)),
		slog.Int("history_window", a.cfg.Storage.HistoryWindow), slog.Duration("lock_wait", a.cfg.Storage.LockWait))

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
	if a.cfg.Server.ShutdownDelay > 0 {
		a.log.Info("shutting down: not ready, still serving", slog.String("delay", a.cfg.Server.ShutdownDelay.String()))
		time.Sleep(a.cfg.Server.ShutdownDelay)
	}
	a.log.Info("shutting down", slog.Duration("grace", a.cfg.Server.ShutdownGrace))
	graceCtx, cancel := context.WithTimeout(context.Background(), a.cfg.Server.ShutdownGrace)
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
