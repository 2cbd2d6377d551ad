package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/memorytest"
	"github.com/companionhq/companion/internal/memory/postgres"
	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	"github.com/companionhq/companion/internal/testkit"
)

// BenchmarkRecallCPU measures what a recall costs this process, not the
// database: the CPU time (user and system) of a turn's recall as
// internal/turn asks it of the store (Search for 12 with Context 1: the
// default top 4, three times over to spread them) and of a search with
// its context (Search for 5 with Context 1, as the search benchmark
// asks), on a history of CompanionHistory (1,000 messages: ranked whole)
// and of three of them (3,000: the bounded share). PostgreSQL's own time
// is in the wall time only; but the process spends CPU while it waits
// too (a statement that sleeps 3 ms costs it several times a SELECT 1),
// so a slower statement costs more here as well.
func BenchmarkRecallCPU(b *testing.B) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	seed := func(resource string, histories int) {
		for h := range histories {
			threads := memorytest.CompanionHistory(fmt.Sprint(resource, "-", h), start.Add(time.Duration(h)*1000*time.Hour))
			for i := range threads {
				threads[i].Thread.ResourceID = resource
			}
			if _, err := s.Import(ctx, threads, func(memory.Thread, []memory.Message) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	}
	seed("short", 1)
	seed("long", 3)
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE threads, messages, message_search`); err != nil {
		b.Fatal(err)
	}
	for _, resource := range []string{"short", "long"} {
		for _, kind := range []string{"turn", "context"} {
			b.Run(resource+"/"+kind, func(b *testing.B) {
				found := 0
				b.ReportAllocs()
				reportCPU := testkit.CPUPerOp(b)
				for i := 0; b.Loop(); i++ {
					text := memorytest.CompanionQuestions[i%len(memorytest.CompanionQuestions)]
					if kind == "context" {
						rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: resource, Text: text, ExcludeThreadID: "new", Limit: 5, Context: 1})
						if err != nil {
							b.Fatal(err)
						}
						found += len(rs)
						continue
					}
					rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: resource, Text: text, ExcludeThreadID: "new", Limit: 12, Context: 1})
					if err != nil {
						b.Fatal(err)
					}
					found += len(rs)
				}
				reportCPU()
				if found == 0 {
					b.Fatal("the questions found nothing")
				}
			})
		}
	}
}

// TestLongSearchWeighsNeighbours: in a history past
// memory.SearchExactMessages (the bounded share), a message found through
// its neighbours' words scores for them (memory.NearWeight of a match in
// its own text), not nothing.
func TestLongSearchWeighsNeighbours(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := func(id, role, text string, i int) memory.Message {
		return memory.Message{ID: id, Role: role, Text: text, Model: []byte(`[]`), CreatedAt: at.Add(time.Duration(i) * time.Minute)}
	}
	th := memory.ImportThread{Thread: memory.Thread{ID: "t", ResourceID: "r", CreatedAt: at, UpdatedAt: at}}
	for i := range memory.SearchExactMessages + 10 {
		th.Messages = append(th.Messages, msg(fmt.Sprint("m", i), "user", fmt.Sprintf("Nothing new on day %d.", i), i))
	}
	th.Messages = append(th.Messages, msg("zanzibar", "user", "Zanzibar", len(th.Messages)), msg("after", "assistant", "Noted", len(th.Messages)+1))
	if _, err := s.Import(ctx, []memory.ImportThread{th}, func(memory.Thread, []memory.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "r", Text: "zanzibar", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Message.ID != "zanzibar" {
		t.Fatalf("found %+v", rs)
	}
	for _, r := range rs[1:] {
		if r.Score <= 0 || r.Score >= rs[0].Score {
			t.Errorf("%s, a neighbour of the match, scores %v beside its %v", r.Message.ID, r.Score, rs[0].Score)
		}
	}
}

// TestAroundReadsByKey: Around, and a vector search's read of its
// nearest messages, read the messages (and titles) of their results by
// their keys, not whole threads or every thread, in the plan for the
// call's values and in the generic plan PostgreSQL keeps after a few
// calls.
func TestAroundReadsByKey(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	conn := acquire(t, s)
	execAll(t, conn,
		`INSERT INTO threads (id, resource_id, created_at, updated_at, last_seq)
			SELECT 't' || i, 'r', now(), now(), CASE WHEN i < 2 THEN 1500 ELSE 10 END FROM generate_series(0, 2000) i`,
		`INSERT INTO messages (thread_id, seq, id, role, text, model, created_at)
			SELECT 't' || i, s, 'm' || s, 'user', 'hello', '[]', now()
			FROM generate_series(0, 2000) i, generate_series(1, CASE WHEN i < 2 THEN 1500 ELSE 10 END) s`,
		`ANALYZE`,
	)
	threads, seqs := []string{"t0", "t0", "t1", "t7"}, []int64{1, 700, 1500, 5}
	for _, mode := range []string{"auto", "force_generic_plan"} {
		execAll(t, conn, `SET plan_cache_mode = `+mode)
		for _, c := range []struct {
			name, sql string
			args      []any
			most      int
		}{
			// Each result's message and the one before and after it, at most.
			{"Around", postgres.AroundSQL, []any{threads, seqs, 1}, 4 * 3},
			{"the nearest messages", postgres.NearestSQL, []any{threads, seqs}, 4},
		} {
			var plan []struct{ Plan explainNode }
			if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+c.sql, c.args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(plan, "", " ")
			if read := plan[0].Plan.rowsRead("messages"); read > c.most {
				t.Errorf("%s, %s: reads %d rows of messages, want %d at most:\n%s", mode, c.name, read, c.most, b)
			}
			if read := plan[0].Plan.rowsRead("threads"); read > 4 {
				t.Errorf("%s, %s: reads %d rows of threads, want 4 at most:\n%s", mode, c.name, read, b)
			}
		}
	}
}

// TestContextIsEachResultsOwn: the messages around results, which Search
// and Around read into one array, are each result's own: appending to a
// result's Before or After changes no other slice.
func TestContextIsEachResultsOwn(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "")
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var threads []memory.ImportThread
	for _, id := range []string{"a", "b"} {
		th := memory.ImportThread{Thread: memory.Thread{ID: id, ResourceID: "r", CreatedAt: at, UpdatedAt: at}}
		for i, text := range []string{"one", "two", "the kite", "four", "five"} {
			th.Messages = append(th.Messages, memory.Message{ID: fmt.Sprint(id, i+1), Role: "user", Text: text, Model: []byte(`[]`), CreatedAt: at})
		}
		threads = append(threads, th)
	}
	if _, err := s.Import(ctx, threads, func(memory.Thread, []memory.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	check := func(how string, rs []memory.SearchResult) {
		t.Helper()
		if len(rs) != 2 {
			t.Fatalf("%s: %d results", how, len(rs))
		}
		for _, r := range rs {
			th := r.ThreadID
			if got, want := fmt.Sprint(ids(r.Before), r.Message.ID, ids(r.After)), fmt.Sprint([]string{th + "1", th + "2"}, th+"3", []string{th + "4", th + "5"}); got != want {
				t.Fatalf("%s: %s, want %s", how, got, want)
			}
		}
		want := fmt.Sprint(ids(rs[0].Before), ids(rs[0].After), ids(rs[1].Before), ids(rs[1].After))
		rs[0].Before = append(rs[0].Before, memory.Message{ID: "x"})
		rs[0].After = append(rs[0].After, memory.Message{ID: "y"})
		rs[1].Before = append(rs[1].Before, memory.Message{ID: "z"})
		if got := fmt.Sprint(ids(rs[0].Before[:2]), ids(rs[0].After[:2]), ids(rs[1].Before[:2]), ids(rs[1].After)); got != want {
			t.Errorf("%s: after appending, %s, want %s", how, got, want)
		}
	}
	rs, err := s.Search(ctx, memory.SearchQuery{ResourceID: "r", Text: "kite", Limit: 2, Context: 2})
	if err != nil {
		t.Fatal(err)
	}
	check("Search", rs)
	if err := s.Around(ctx, rs, 2); err != nil {
		t.Fatal(err)
	}
	check("Around", rs)
	// No context: none, whatever the results held.
	if err := s.Around(ctx, rs, 0); err != nil || rs[0].Before != nil || rs[0].After != nil || rs[1].Before != nil {
		t.Errorf("Around with n 0: %v %v %v (%v)", ids(rs[0].Before), ids(rs[0].After), ids(rs[1].Before), err)
	}
}

func ids(ms []memory.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// BenchmarkWaitCPU is what waiting for PostgreSQL costs this process: the
// CPU time of a statement that returns at once, of one that sleeps 2.5 ms,
// and of one that keeps the server busy some milliseconds. The process
// spends CPU while it waits (its threads park and wake, it polls the
// network; on a small machine it shares the cores with the database), so
// a slower statement costs the service more CPU though it does no more
// work: what bounds the PostgreSQL turn's figure in docs/performance.md.
func BenchmarkWaitCPU(b *testing.B) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	for _, q := range []struct{ name, sql string }{
		{"select-1", "SELECT 1"},
		{"sleep-2.5ms", "SELECT pg_sleep(0.0025)"},
		{"busy", "SELECT count(*) FROM generate_series(1, 150000)"},
	} {
		b.Run(q.name, func(b *testing.B) {
			report := testkit.CPUPerOp(b)
			for b.Loop() {
				if _, err := s.Pool().Exec(ctx, q.sql); err != nil {
					b.Fatal(err)
				}
			}
			report()
		})
	}
}
