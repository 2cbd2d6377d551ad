// Package apptest runs the whole service in-process for tests: the real app,
// on the fake model, with the weather tool on an in-process fake Open-Meteo.
package apptest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/companionhq/companion/fakes/openmeteo"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
)

// Service is a running in-process service.
type Service struct {
	URL       string
	App       *app.App
	OpenMeteo *openmeteo.Server
}

// Start runs the service until the test ends, on a fresh SQLite database in
// the test's temporary directory. configure, when not nil, may change the
// configuration before the app is built.
func Start(t testing.TB, configure func(*app.Config)) *Service {
	t.Helper()
	return StartLogged(t, nil, configure)
}

// StartLogged is Start with the service logging to log.
func StartLogged(t testing.TB, log *slog.Logger, configure func(*app.Config)) *Service {
	t.Helper()
	cfg, om := config(t, configure)
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("building the app: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &Service{URL: srv.URL, App: a, OpenMeteo: om}
}

// config is the defaults with the weather tool on a fake Open-Meteo that
// runs until the test ends and a fresh SQLite database, then configure.
func config(t testing.TB, configure func(*app.Config)) (app.Config, *openmeteo.Server) {
	om := openmeteo.New()
	omSrv := httptest.NewServer(om)
	t.Cleanup(omSrv.Close)
	cfg := app.Defaults()
	cfg.Tools.Weather.GeocodingURL = omSrv.URL
	cfg.Tools.Weather.ForecastURL = omSrv.URL
	cfg.Storage.DatabaseURL = SQLiteURL(t)
	if configure != nil {
		configure(&cfg)
	}
	return cfg, om
}

// Serving is a service run by App.Serve on a real listener, as the command
// runs it: its server's timeouts and header limit apply.
type Serving struct {
	*Service
	// Addr is the listener's host:port.
	Addr string
	// Stop starts a graceful shutdown (as SIGTERM would); Done is closed
	// when Serve has returned.
	Stop context.CancelFunc
	Done <-chan struct{}
}

// Serve runs the service with App.Serve until the test ends (or Stop).
func Serve(t testing.TB, log *slog.Logger, configure func(*app.Config)) *Serving {
	t.Helper()
	cfg, om := config(t, func(c *app.Config) {
		c.Server.ShutdownGrace = 2 * time.Second
		if configure != nil {
			configure(c)
		}
	})
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("building the app: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Serve(ctx, ln, nil); err != nil {
			t.Errorf("serving: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = a.Close()
	})
	addr := ln.Addr().String()
	return &Serving{Service: &Service{URL: "http://" + addr, App: a, OpenMeteo: om}, Addr: addr, Stop: cancel, Done: done}
}

// Post sends body to path and returns the response with its body read.
func (s *Service) Post(t testing.TB, path, body string) (*http.Response, []byte) {
	t.Helper()
	return s.Do(t, http.MethodPost, path, body)
}

// Do sends a request and returns the response with its body read.
func (s *Service) Do(t testing.TB, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return s.DoHeader(t, method, path, body, nil)
}

// DoHeader is Do with the fields of header added to the request's (a
// traceparent, say).
func (s *Service) DoHeader(t testing.TB, method, path, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || method == http.MethodPost || method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return res, b
}

// SQLiteURL is the URL of a new SQLite file in the test's temporary directory.
func SQLiteURL(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "companion.db")
}

// EachDatabase runs f as a subtest once per store, each on a fresh
// database: "sqlite" (a file) and "postgres" (a schema of its own; skipped
// when PostgreSQL is unreachable, except in CI, where that fails).
func EachDatabase(t *testing.T, f func(t *testing.T, databaseURL string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.URL(t)) })
}
