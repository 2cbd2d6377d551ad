package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/memory/memorytest"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	"github.com/companionhq/companion/internal/redact"
	"github.com/companionhq/companion/internal/testkit"
)

// benchTurns sends one turn per iteration, each on a thread of its own,
// through the whole service in process: strict decoding, the agent on the
// fake model, memory on the store, the generate body or the stream.
//
// What it measures is a turn of a user with a history of about 1,000
// messages, in a database that holds the histories of at least
// benchMinResources users alike (benchPool): each turn is for one of them
// in turn, so a user gains at most 2*benchTurnsEach messages whatever b.N,
// and the database is the same for up to benchMinResources*benchTurnsEach
// turns (more than -benchtime 1s gives on two cores), larger only past
// that. The questions go round independently of the resources, so that
// any number of turns asks the same mix. A benchmark with memory off
// (noMemory) runs on the same database, so the difference is working
// memory and recall alone.
func benchTurns(b *testing.B, databaseURL, path string, configure ...func(*app.Config)) {
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
	// 16 requests at once on 2 cores, as 16 connections would send them.
	conc := max(1, 16/runtime.GOMAXPROCS(0))
	warm := conc * runtime.GOMAXPROCS(0)
	resources := benchPool(b.N + warm)
	seedPool(b, svc, resources)
	settle(b, databaseURL)
	h := svc.App.Handler()
	var n atomic.Int64
	// turn sends the next turn: the resources in turn, and the questions
	// in turn, so that any run of turns asks each question as often
	// (their searches cost from one to several times the cheapest) and
	// each resource is asked them all in turn (benchPool).
	turn := func() error {
		i := n.Add(1)
		body := fmt.Sprintf(`{"threadId":"bench-%d","resourceId":%q,"messages":[{"role":"user","content":%q}],"modelSettings":{"maxOutputTokens":64}}`,
			i, benchResource(int(i%int64(resources))), memorytest.CompanionQuestions[i%int64(len(memorytest.CompanionQuestions))])
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
		}
		return nil
	}
	// A turn at once per connection the run will use, untimed, so that
	// what each new connection does once (PostgreSQL's prepared
	// statements, SQLite's) is not counted against a short run's turns.
	if err := inParallel(warm, warm, func(int) error { return turn() }); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(conc)
	b.ReportAllocs()
	b.ResetTimer()
	// The process's CPU time per turn is steadier than the wall time on a
	// shared machine: compare it before and after a change.
	defer testkit.CPUPerOp(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := turn(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// inParallel calls f(0) to f(n-1), at most limit at once, and returns
// their errors.
func inParallel(n, limit int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// The database of benchTurns: benchPool's resources, each seeded with a
// history of 1,000 messages (seedMemory), each taking benchTurnsEach turns
// at most.
const (
	benchTurnsEach    = 50
	benchMinResources = 64
)

// benchPool is how many resources n turns are spread over: never a
// multiple of the questions' number, so that each resource is asked them
// all in turn.
func benchPool(n int) int {
	p := max(benchMinResources, (n+benchTurnsEach-1)/benchTurnsEach)
	if p%len(memorytest.CompanionQuestions) == 0 {
		p++
	}
	return p
}

// benchResource is the id of resource r of the pool.
func benchResource(r int) string { return fmt.Sprint("u", r) }

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

// seedPool seeds the resources of a pool of n, a few at once: one at a
// time, seeding 64 took about 15 seconds of waiting for commits.
func seedPool(b *testing.B, svc *apptest.Service, n int) {
	b.Helper()
	if err := inParallel(n, 8, func(r int) error { return seedMemory(svc, benchResource(r)) }); err != nil {
		b.Fatal(err)
	}
}

// seedMemory gives resource the history of a user of some months
// (memorytest.CompanionHistory: a thousand messages in a hundred threads,
// an hour apart from a hundred days ago), imported, so that recall
// searches a resource as such a user has one. Every resource's history
// holds the same messages at the same times.
func seedMemory(svc *apptest.Service, resource string) error {
	var msgs []api.SavedMessage
	for _, th := range memorytest.CompanionHistory(resource, time.Now().Add(-100*24*time.Hour)) {
		for _, m := range th.Messages {
			content, _ := json.Marshal(m.Text)
			msgs = append(msgs, api.SavedMessage{ID: m.ID, ThreadID: th.Thread.ID, ResourceID: resource,
				Role: m.Role, Content: content, CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339)})
		}
	}
	body, _ := json.Marshal(api.SaveMessages{Messages: msgs})
	res, err := http.Post(svc.URL+"/api/memory/save-messages", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("seeding %s: %w", resource, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return fmt.Errorf("seeding %s: %d %.300s %v", resource, res.StatusCode, out, err)
	}
	return nil
}

// settle leaves the seeded database as a deployment's would be some time
// after the histories were imported, so that what is measured is the turns
// and not the load's aftermath: on SQLite, the recall index's segments
// merged (FTS5 merges a bulk load's a few pages per later commit) and the
// write-ahead log copied into the database; on PostgreSQL, the tables
// vacuumed and analysed, as autovacuum does after a load (the recall
// index's GIN pending list merged, which every search would read
// otherwise, and the planner's statistics up to date).
func settle(b *testing.B, databaseURL string) {
	b.Helper()
	ctx := context.Background()
	if path, ok := strings.CutPrefix(databaseURL, "sqlite://"); ok {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for _, q := range []string{`INSERT INTO messages_fts (messages_fts) VALUES ('optimize')`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				b.Fatalf("settling the database: %s: %v", q, err)
			}
		}
		return
	}
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE threads, messages, message_search`); err != nil {
		b.Fatalf("settling the database: %v", err)
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
