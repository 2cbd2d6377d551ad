package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	"github.com/companionhq/companion/internal/redact"
)

// benchTurns sends one turn per iteration, each on a thread of its own,
// through the whole service in process: strict decoding, the agent on the
// fake model, memory on the store, the generate body or the stream.
func benchTurns(b *testing.B, databaseURL, path string, configure ...func(*app.Config)) {
	svc := apptest.Start(b, func(c *app.Config) {
		c.Storage.DatabaseURL = databaseURL
		for _, f := range configure {
			f(c)
		}
	})
	h := svc.App.Handler()
	var n atomic.Int64
	// 16 requests at once on 2 cores, as 16 connections would send them.
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	// The process's CPU time per turn is steadier than the wall time on a
	// shared machine: compare it before and after a change.
	cpu0 := cpuTime(b)
	defer func() { b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Sprintf(`{"threadId":"bench-%d","resourceId":"u","messages":[{"role":"user","content":"How do I start my day well?"}],"modelSettings":{"maxOutputTokens":64}}`, n.Add(1))
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func BenchmarkGenerateSQLite(b *testing.B) {
	benchTurns(b, apptest.SQLiteURL(b), "/api/agents/companionAgent/generate")
}

func BenchmarkStreamSQLite(b *testing.B) {
	benchTurns(b, apptest.SQLiteURL(b), "/api/agents/companionAgent/stream")
}

func BenchmarkGeneratePostgres(b *testing.B) {
	benchTurns(b, pgtest.URL(b), "/api/agents/companionAgent/generate")
}

// BenchmarkStreamRedis is BenchmarkStreamSQLite with the run log shared
// through Redis (-redis-url), as several instances run: each run's events
// are written through to Redis as well.
func BenchmarkStreamRedis(b *testing.B) {
	url := redistest.ServerURL()
	redistest.Options(b) // skips without Redis
	benchTurns(b, apptest.SQLiteURL(b), "/api/agents/companionAgent/stream", func(c *app.Config) {
		c.Storage.RedisURL = redact.Secret(url)
	})
}

// BenchmarkGenerateUpstream is BenchmarkGenerateSQLite through the
// OpenAI-compatible provider, against the fake upstream in process: what
// the provider's HTTP client and stream parsing add.
func BenchmarkGenerateUpstream(b *testing.B) {
	benchUpstream(b, "/api/agents/companionAgent/generate")
}

// BenchmarkStreamUpstream is BenchmarkGenerateUpstream as a stream: the
// records arrive as the upstream's chunks do, a few at a time.
func BenchmarkStreamUpstream(b *testing.B) {
	benchUpstream(b, "/api/agents/companionAgent/stream")
}

// benchUpstream is benchTurns on SQLite through the OpenAI-compatible
// provider, against the fake upstream in process.
func benchUpstream(b *testing.B, path string) {
	up := httptest.NewServer(fakeopenai.New(upstream.Options{}))
	b.Cleanup(up.Close)
	benchTurns(b, apptest.SQLiteURL(b), path, func(c *app.Config) {
		c.Model.Model, c.Model.BaseURL, c.Model.OpenAIAPIKey = "bench", up.URL+"/v1", "bench-key"
	})
}
