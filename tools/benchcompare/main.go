//go:build linux

// Command benchcompare measures the service against the fake model provider
// it fronts, and on its in-process fake model, and prints one table.
//
//	go run ./tools/benchcompare [-duration 10s] [-conns 1,16]
//	go run ./tools/benchcompare -streams 10000
//
// It builds ./cmd/companion and ./fakes/cmd/fakes into a temporary
// directory, starts the fake OpenAI-compatible upstream (no delay) on a free
// loopback port and measures it alone with streamed chat completions; then
// the service in front of it (SQLite), generate and stream; then the service
// on its fake model, on SQLite and, when reachable, PostgreSQL. Every
// answer is 64 tokens long. For each it reports throughput, p50 and p99
// latency, time to the first event of a stream, the resident memory of the
// process under test idle and at its peak, and the CPU the processes used;
// with the ratios of the service to the upstream alone and the latency it
// adds.
//
// With -streams N it instead opens N streams at once against the service on
// its fake model with a slow token pace, and reports the errors and the
// resident memory each open stream costs.
//
// The load generator is in this program: closed-loop connections, each a
// goroutine with its own keep-alive connection, sending the next request
// as soon as the last answer ended. It shares the machine with what it
// measures; its CPU is reported so that a figure bound by it can be told.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/companionhq/companion/tools/internal/gotool"
)

func main() { gotool.Main("benchcompare", run) }

// config is the command line.
type config struct {
	duration, warmup time.Duration
	conns            []int
	postgres         string
	serviceArgs      []string
	serviceEnv       []string
	// systems is what -systems selects of allSystems.
	systems map[string]bool
	keep    bool

	streams          int
	streamTokenDelay time.Duration
	openConcurrency  int
	maxErrors        int
	hold             time.Duration
}

// allSystems are the names -systems takes: the upstream alone, the service
// in front of it (on SQLite), and the service on its fake model on SQLite
// and on PostgreSQL. With -streams, sqlite and postgres choose the stores.
var allSystems = []string{"upstream", "via", "sqlite", "postgres"}

// defaultPostgres is the machine's PostgreSQL as `make services` runs it
// (the tests start a private one of their own unless
// COMPANION_TEST_POSTGRES_URL names a server, which the harness uses too).
const defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each measurement")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "load sent before each measurement and not counted")
	conns := fs.String("conns", "1,16", "connection counts to measure at, comma-separated")
	pg := os.Getenv("COMPANION_TEST_POSTGRES_URL")
	if pg == "" {
		pg = defaultPostgres
	}
	fs.StringVar(&c.postgres, "postgres", pg, `PostgreSQL server to measure on, in a fresh schema ("" to skip; skipped too when unreachable)`)
	serviceArgs := fs.String("service-args", "", `more flags for "companion serve", space-separated (e.g. "-history-window 50")`)
	serviceEnv := fs.String("service-env", "", `more environment for the service alone, space-separated NAME=value (e.g. "GOGC=200")`)
	systems := fs.String("systems", strings.Join(allSystems, ","), "systems to measure, comma-separated, of "+strings.Join(allSystems, ", ")+
		" (a ratio needs the row it is over: upstream for via, sqlite for postgres)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (binaries, logs, databases)")
	fs.IntVar(&c.streams, "streams", 0, "instead of the comparison, open this many streams at once and report memory per stream")
	fs.DurationVar(&c.streamTokenDelay, "stream-token-delay", time.Second, "with -streams: the fake model's delay before each token")
	fs.IntVar(&c.openConcurrency, "open-concurrency", 256, "with -streams: streams being opened at once (waiting for their first event)")
	fs.IntVar(&c.maxErrors, "max-errors", 100, "with -streams: stop opening streams once more than this many failed")
	fs.DurationVar(&c.hold, "hold", 3*time.Second, "with -streams: how long all streams are held open before memory is read")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: benchcompare [flags]\n\nMeasures the service against the fake upstream and on its fake model; prints one table.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return c, fmt.Errorf("-conns: %q is not a positive number", s)
		}
		c.conns = append(c.conns, n)
	}
	c.systems = map[string]bool{}
	for _, s := range strings.Split(*systems, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allSystems, s) {
			return c, fmt.Errorf("-systems: %q is not one of %s", s, strings.Join(allSystems, ", "))
		}
		c.systems[s] = true
	}
	if c.streams > 0 && !c.systems["sqlite"] && !c.systems["postgres"] {
		return c, errors.New("-streams measures the stores -systems names: sqlite, postgres or both")
	}
	c.serviceArgs = strings.Fields(*serviceArgs)
	c.serviceEnv = strings.Fields(*serviceEnv)
	for _, kv := range c.serviceEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return c, fmt.Errorf("-service-env: %q is not NAME=value", kv)
		}
	}
	if err := quietService(c.serviceArgs, c.serviceEnv); err != nil {
		return c, err
	}
	if c.duration <= 0 || c.warmup < 0 || c.streams < 0 || c.openConcurrency < 1 {
		return c, errors.New("-duration, -warmup, -streams and -open-concurrency must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	root, err := gotool.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchcompare-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintln(stderr, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintln(stderr, "building the service and the fakes")
	if err := build(ctx, root, dir, stderr); err != nil {
		return err
	}
	h := &harness{cfg: cfg, dir: dir, stderr: stderr, tag: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if cfg.streams > 0 {
		return h.streams(ctx, stdout)
	}
	return h.compare(ctx, stdout)
}

// quietService refuses a log level above info in the service's flags or
// environment: the harness learns where the service listens from its
// "listening" line, logged at info, and would wait for it in vain.
func quietService(args, env []string) error {
	level := func(v string) bool {
		var l slog.Level
		// A level the service cannot read, it refuses itself, saying why.
		return l.UnmarshalText([]byte(v)) == nil && l > slog.LevelInfo
	}
	refuse := func(where, v string) error {
		return fmt.Errorf(`%s: log level %q hides the service's "listening" line (info), which tells the harness where it listens; use info or debug`, where, v)
	}
	flagged := false // the flag, when given, wins over the environment
	for i, a := range args {
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "log-level" {
			continue
		}
		flagged = true
		if !hasValue {
			if i+1 >= len(args) {
				continue // companion serve will say the flag needs a value
			}
			v = args[i+1]
		}
		if level(v) {
			return refuse("-service-args", v)
		}
	}
	for _, kv := range env {
		if name, v, _ := strings.Cut(kv, "="); name == "COMPANION_LOG_LEVEL" && !flagged && level(v) {
			return refuse("-service-env", v)
		}
	}
	return nil
}
