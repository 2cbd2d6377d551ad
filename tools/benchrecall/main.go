// Command benchrecall measures how well the service's memory search finds
// what a user said sessions ago, and prints one table.
//
//	go run ./tools/benchrecall [-systems sqlite,postgres] [-out set.json]
//
// It generates a recall set (fixed seed; no network, no model): personas
// who talk with the assistant over a year, in dozens of sessions each, with
// facts about themselves and the people around them among filler, facts
// that change, dated events, preferences and the assistant's own advice;
// and a few hundred questions about them, in other words than the
// messages', each with the ids of the messages that hold its answer. It
// scores a plain BM25 over single messages on the set (the baseline), then
// builds ./cmd/companion, serves it on its fake model on a fresh SQLite
// database and a fresh PostgreSQL schema, imports every persona's sessions
// (POST /api/memory/save-messages), asks every question of the search
// (GET /api/memory/search), and reports for each the share of questions
// whose evidence is all in the top 10 results, and all in the results with
// their context, overall and per kind of question, with the search's
// latency as the client sees it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/companionhq/companion/tools/internal/gotool"
)

func main() { gotool.Main("benchrecall", run) }

// config is the command line.
type config struct {
	seed        uint64
	shape       Shape
	out, misses string
	stores      []string
	postgres    string
	serviceArgs []string
	limit       int
	batch       int
	keep        bool
}

// allStores are the stores -systems takes.
var allStores = []string{"sqlite", "postgres"}

// defaultPostgres is the machine's PostgreSQL as `make services` runs it.
const defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{shape: defaultShape}
	fs := flag.NewFlagSet("benchrecall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the generated set")
	fs.IntVar(&c.shape.Personas, "personas", defaultShape.Personas, "personas in the set")
	fs.StringVar(&c.out, "out", "", "write the generated set to this JSON file")
	fs.StringVar(&c.misses, "misses", "", "write every question with each system's outcome to this JSON file")
	systems := fs.String("systems", strings.Join(allStores, ","), `stores to serve the set from, comma-separated, of `+strings.Join(allStores, ", ")+` ("none": the baseline alone)`)
	pg := os.Getenv("COMPANION_TEST_POSTGRES_URL")
	if pg == "" {
		pg = defaultPostgres
	}
	fs.StringVar(&c.postgres, "postgres", pg, "PostgreSQL server to serve from, in a fresh schema (skipped with a note when unreachable)")
	serviceArgs := fs.String("service-args", "", `more flags for "companion serve", space-separated`)
	fs.IntVar(&c.limit, "limit", 10, "results asked of each search")
	fs.IntVar(&c.batch, "batch", 300, "messages per import request")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (binary, logs, databases)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: benchrecall [flags]\n\nMeasures the service's memory search on a generated recall set; prints one table.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *systems != "none" {
		for _, s := range strings.Split(*systems, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(allStores, s) {
				return c, fmt.Errorf(`-systems: %q is not one of %s, or "none"`, s, strings.Join(allStores, ", "))
			}
			c.stores = append(c.stores, s)
		}
	}
	c.serviceArgs = strings.Fields(*serviceArgs)
	if c.shape.Personas < 1 || c.limit < 1 || c.batch < 1 {
		return c, errors.New("-personas, -limit and -batch must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	set := Generate(cfg.seed, cfg.shape)
	if cfg.out != "" {
		if err := writeJSON(cfg.out, set); err != nil {
			return err
		}
	}
	systems := []*system{baseline(set, cfg.limit)}
	if len(cfg.stores) > 0 {
		served, err := serve(ctx, cfg, set, stderr)
		if err != nil {
			return err
		}
		systems = append(systems, served...)
	}
	report(stdout, set, cfg.limit, systems)
	if cfg.misses != "" {
		return writeMisses(cfg.misses, set, systems)
	}
	return nil
}

// baseline scores plain BM25 on the set.
func baseline(set *Set, limit int) *system {
	s := &system{name: "BM25"}
	index := map[string]*bm25{}
	for _, p := range set.Personas {
		index[p.ID] = newBM25(p)
	}
	for _, q := range set.Questions {
		s.outcomes = append(s.outcomes, judge(q.Evidence, index[q.PersonaID].search(q.Text, limit)))
	}
	return s
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeMisses writes every question with what each system found of it.
func writeMisses(path string, set *Set, systems []*system) error {
	type found struct {
		Top10       bool `json:"top"`
		WithContext bool `json:"withContext"`
	}
	type row struct {
		Question
		Found map[string]found `json:"found"`
	}
	var rows []row
	for i, q := range set.Questions {
		r := row{Question: q, Found: map[string]found{}}
		for _, s := range systems {
			if s.note == "" {
				r.Found[s.name] = found{s.outcomes[i].top, s.outcomes[i].withContext}
			}
		}
		rows = append(rows, r)
	}
	return writeJSON(path, rows)
}
