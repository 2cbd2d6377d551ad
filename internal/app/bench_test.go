package app_test

import (
	"encoding/json"
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
	"github.com/companionhq/companion/internal/api"
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
	benchTurnsOf(b, databaseURL, path, func(int64) string { return "u" }, configure...)
}

// benchTurnsOf is benchTurns with the resource of turn n.
func benchTurnsOf(b *testing.B, databaseURL, path string, resource func(n int64) string, configure ...func(*app.Config)) {
	svc := apptest.Start(b, func(c *app.Config) {
		c.Storage.DatabaseURL = databaseURL
		// Every turn here is a thread's first, which a title follows off
		// the reply's path: a model call of its own that real traffic
		// makes once per thread, not per turn.
		c.Memory.Titles = false
		for _, f := range configure {
			f(c)
		}
	})
	seedMemory(b, svc)
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
			i := n.Add(1)
			body := fmt.Sprintf(`{"threadId":"bench-%d","resourceId":%q,"messages":[{"role":"user","content":%q}],"modelSettings":{"maxOutputTokens":64}}`,
				i, resource(i), benchQuestions[i%int64(len(benchQuestions))])
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

// benchQuestions are what the turns of the benchmarks ask, in turn.
var benchQuestions = []string{
	"How do I start my day well?",
	"Any ideas for a weekend with my dog?",
	"I feel tired after work lately, what can I do?",
	"What should I cook for my sister's birthday dinner?",
	"How can I keep running through the winter?",
}

// seedMemory gives resource "u" a history of 1,000 messages over 100
// earlier threads, imported, so that recall searches a resource as a user
// of some months has one.
func seedMemory(b *testing.B, svc *apptest.Service) {
	b.Helper()
	subjects := []string{"my dog Max", "my sister Ana", "the garden", "my new job", "running in the park", "the cello lessons",
		"our trip to Lisbon", "cooking pasta", "my sleep", "the book club", "my grandmother", "the old car"}
	verbs := []string{"I keep thinking about", "Yesterday I talked about", "I am worried about", "I loved", "Tell me more about"}
	var msgs []api.SavedMessage
	start := time.Now().Add(-100 * 24 * time.Hour)
	for i := range 1000 {
		text := fmt.Sprintf("%s %s, and how it went on day %d of the month.", verbs[i%len(verbs)], subjects[(i*7)%len(subjects)], i%28+1)
		role := "user"
		if i%2 == 1 {
			role, text = "assistant", "That sounds meaningful: "+subjects[(i*5)%len(subjects)]+" matters to you."
		}
		content, _ := json.Marshal(text)
		msgs = append(msgs, api.SavedMessage{ID: fmt.Sprint("seed-", i), ThreadID: fmt.Sprint("seed-thread-", i/10), ResourceID: "u",
			Role: role, Content: content, CreatedAt: start.Add(time.Duration(i) * time.Hour).UTC().Format(time.RFC3339)})
	}
	body, _ := json.Marshal(api.SaveMessages{Messages: msgs})
	if res, out := svc.Post(b, "/api/memory/save-messages", string(body)); res.StatusCode != http.StatusOK {
		b.Fatalf("seeding: %d %.300s", res.StatusCode, out)
	}
}

// noMemory turns working memory and recall off.
func noMemory(c *app.Config) {
	c.Memory.WorkingMemory.Off = true
	c.Memory.Recall.Off = true
}

// BenchmarkGenerateNoMemorySQLite is BenchmarkGenerateSQLite without
// working memory and recall: their cost is the difference.
func BenchmarkGenerateNoMemorySQLite(b *testing.B) {
	benchTurns(b, apptest.SQLiteURL(b), "/api/agents/companionAgent/generate", noMemory)
}

// BenchmarkGenerateNoMemoryPostgres is BenchmarkGeneratePostgres without
// working memory and recall.
func BenchmarkGenerateNoMemoryPostgres(b *testing.B) {
	benchTurns(b, pgtest.URL(b), "/api/agents/companionAgent/generate", noMemory)
}
