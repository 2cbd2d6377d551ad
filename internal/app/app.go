// Package app assembles the service from its configuration: the model, the
// tools, the agent and the HTTP API, and serves it with a graceful shutdown.
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
	"time"

	"github.com/companionhq/companion/fakes/fakemodel"
	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/postgres"
	"github.com/companionhq/companion/internal/memory/sqlite"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/tool/weather"
)

// Config is everything the service needs to know. Defaults() fills the
// documented defaults.
type Config struct {
	Addr            string
	Model           string
	MaxSteps        int
	MaxOutputTokens int
	MaxBodyBytes    int64
	ShutdownGrace   time.Duration

	WeatherGeocodingURL string
	WeatherForecastURL  string
	WeatherTimeout      time.Duration

	FakeFirstTokenDelay time.Duration
	FakeTokenDelay      time.Duration

	// DatabaseURL chooses the conversation store: sqlite://PATH (a file,
	// created with its directory) or postgres://... (postgresql:// too).
	DatabaseURL string
	// HistoryWindow is how many stored messages of a thread each run sees.
	HistoryWindow int
	// LockWait is how long a turn waits for the thread's previous turn
	// before it is refused with 409.
	LockWait time.Duration
}

// Defaults returns the configuration the service runs with when nothing is
// set.
func Defaults() Config {
	return Config{
		Addr:                "127.0.0.1:4111",
		MaxSteps:            agent.DefaultMaxSteps,
		MaxBodyBytes:        httpapi.DefaultMaxBodyBytes,
		ShutdownGrace:       10 * time.Second,
		WeatherGeocodingURL: "https://geocoding-api.open-meteo.com",
		WeatherForecastURL:  "https://api.open-meteo.com",
		WeatherTimeout:      10 * time.Second,
		DatabaseURL:         DefaultDatabaseURL,
		HistoryWindow:       memory.DefaultWindow,
		LockWait:            memory.DefaultLockWait,
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
	store   memory.Store
}

// New builds the service from cfg.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newModel(cfg, log)
	if err != nil {
		return nil, err
	}
	ag, err := agent.New(agent.Config{
		Model: m,
		Tools: []agent.Tool{weather.New(weather.Config{
			GeocodingURL: cfg.WeatherGeocodingURL, ForecastURL: cfg.WeatherForecastURL, Timeout: cfg.WeatherTimeout,
		})},
		MaxSteps:        cfg.MaxSteps,
		MaxOutputTokens: cfg.MaxOutputTokens,
		Logger:          log,
	})
	if err != nil {
		return nil, err
	}
	store, err := OpenStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	mem, err := memory.New(memory.Config{Store: store, Runner: ag, Window: cfg.HistoryWindow, LockWait: cfg.LockWait, Logger: log})
	if err != nil {
		store.Close()
		return nil, err
	}
	return &App{
		cfg:   cfg,
		log:   log,
		model: m,
		store: store,
		handler: httpapi.NewServer(httpapi.Config{Runner: mem, Threads: mem, Ready: mem.Ping,
			Logger: log, MaxBodyBytes: cfg.MaxBodyBytes}),
	}, nil
}

// Handler is the service's HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// Close releases what New opened.
func (a *App) Close() error { return a.store.Close() }

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
	return nil, fmt.Errorf("the database URL must start with sqlite:// (a file) or postgres:// (a server), not %q", redact(url))
}

// redact drops what may be a password from a URL for messages.
func redact(url string) string {
	if scheme, rest, ok := strings.Cut(url, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			return scheme + "://...@" + rest[at+1:]
		}
	}
	return url
}

// DatabaseKind names the store a database URL selects, for logs.
func DatabaseKind(url string) string {
	if strings.HasPrefix(url, "sqlite://") {
		return "sqlite"
	}
	return "postgres"
}

// newModel builds the model the configuration names.
func newModel(cfg Config, log *slog.Logger) (model.Model, error) {
	switch cfg.Model {
	case "", "fake":
		if cfg.Model == "" {
			log.Info("no model configured: answering with the deterministic fake model (set COMPANION_MODEL to use a real one)")
		}
		return fakemodel.New(fakemodel.Options{FirstTokenDelay: cfg.FakeFirstTokenDelay, TokenDelay: cfg.FakeTokenDelay}), nil
	}
	return nil, fmt.Errorf("model %q is not known: use \"fake\"", cfg.Model)
}

// Serve serves the API on ln until ctx ends, then shuts down gracefully: it
// stops accepting, lets in-flight runs finish within the grace period,
// cancels what is left (streams then end with an error event and
// run-finish), and returns nil.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	// Runs derive their context from base: cancelling it at the end of the
	// grace period stops what is still running.
	base, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	a.log.Info("listening", slog.String("addr", ln.Addr().String()),
		slog.String("model", a.model.Provider()+"/"+a.model.ID()), slog.Int("max_steps", a.cfg.MaxSteps),
		slog.Duration("shutdown_grace", a.cfg.ShutdownGrace), slog.String("database", DatabaseKind(a.cfg.DatabaseURL)),
		slog.Int("history_window", a.cfg.HistoryWindow), slog.Duration("lock_wait", a.cfg.LockWait))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}

	a.log.Info("shutting down", slog.Duration("grace", a.cfg.ShutdownGrace))
	graceCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(graceCtx); err != nil {
		// Grace is over: cancel the runs, give their streams a moment to
		// write their terminal events, then close what remains.
		a.log.Warn("grace period over: cancelling in-flight runs")
		cancelRuns()
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(closeCtx); err != nil {
			_ = srv.Close()
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	a.log.Info("stopped")
	return nil
}
