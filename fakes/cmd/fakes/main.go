// Command fakes serves the project's fakes of upstream services, for local
// runs and load tests:
//
//	fakes openmeteo [-addr 127.0.0.1:8090]
//	fakes cohere [-addr 127.0.0.1:8091] [provider flags]
//	fakes openai [-addr 127.0.0.1:8092] [provider flags]
//
// The model providers' fakes take -first-token-delay, -token-delay, -api-key
// and -fault (repeatable, applied to the first requests in order: 429,
// 429:retry-after=2, 500, 503, malformed:after=3, cut:after=3, hang).
//
// Each subcommand serves one fake until interrupted, after printing the
// address it listens on as one line:
//
//	openmeteo listening on http://127.0.0.1:8090
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/companionhq/companion/fakes/cohere"
	"github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/openmeteo"
	"github.com/companionhq/companion/fakes/upstream"
)

// errUsage marks a command line that could not be understood; main exits 2.
var errUsage = errors.New("usage")

// shutdownTimeout bounds how long in-flight requests may finish after an
// interrupt.
const shutdownTimeout = 5 * time.Second

// command is one subcommand: a fake and where it listens by default.
type command struct {
	name        string
	summary     string
	defaultAddr string
	// flags registers the fake's own flags on fs and returns what builds
	// the fake once they are parsed; each run gets a fresh one.
	flags func(fs *flag.FlagSet) func() (http.Handler, error)
}

// commands lists the subcommands. A new fake is one more entry here.
func commands() []command {
	return []command{
		{
			name:        "openmeteo",
			summary:     "Open-Meteo geocoding (/v1/search) and forecast (/v1/forecast) APIs",
			defaultAddr: "127.0.0.1:8090",
			flags: func(*flag.FlagSet) func() (http.Handler, error) {
				return func() (http.Handler, error) { return openmeteo.New(), nil }
			},
		},
		{
			name:        "cohere",
			summary:     "Cohere v2 chat (POST /v2/chat, streaming), answering like the fake model",
			defaultAddr: "127.0.0.1:8091",
			flags:       providerFlags(func(o upstream.Options) http.Handler { return cohere.New(o) }),
		},
		{
			name:        "openai",
			summary:     "OpenAI-compatible chat completions (POST /v1/chat/completions, streaming), answering like the fake model, and moderations (POST /v1/moderations, and the model fake-guard)",
			defaultAddr: "127.0.0.1:8092",
			flags:       providerFlags(func(o upstream.Options) http.Handler { return openai.New(o) }),
		},
	}
}

// providerFlags registers the knobs of a model provider's fake.
func providerFlags(build func(upstream.Options) http.Handler) func(fs *flag.FlagSet) func() (http.Handler, error) {
	return func(fs *flag.FlagSet) func() (http.Handler, error) {
		var o upstream.Options
		fs.DurationVar(&o.FirstTokenDelay, "first-token-delay", 0, "delay before the first token of each answer")
		fs.DurationVar(&o.TokenDelay, "token-delay", 0, "delay before each later token")
		fs.StringVar(&o.APIKey, "api-key", "", "the only API key accepted (default: any non-empty key)")
		fs.Func("fault", "inject a fault into the next request, in order (repeatable): 429[:retry-after=N], 500, 503, malformed[:after=N], cut[:after=N], hang[:after=N]", func(v string) error {
			f, err := upstream.ParseFault(v)
			if err != nil {
				return err
			}
			o.Faults = append(o.Faults, f)
			return nil
		})
		return func() (http.Handler, error) { return build(o), nil }
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "fakes:", err)
		os.Exit(1)
	}
}

// run runs the subcommand args[0] until ctx is done. It writes the listening
// address to stdout and usage and diagnostics to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errUsage
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return nil
	}
	fmt.Fprintf(stderr, "fakes: unknown fake %q\n", args[0])
	usage(stderr)
	return errUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: fakes <fake> [-addr host:port] [flags]")
	fmt.Fprintln(w, "\nfakes:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s (default -addr %s)\n", c.name, c.summary, c.defaultAddr)
	}
}

func (c command) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakes "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", c.defaultAddr, "address to listen on (port 0 picks a free one)")
	build := c.flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakes %s: unexpected argument %q\n", c.name, fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	h, err := build()
	if err != nil {
		return err
	}
	return serve(ctx, c.name, *addr, h, stdout)
}

// serve listens on addr, prints the address and serves h until ctx is done,
// then shuts down gracefully.
func serve(ctx context.Context, name, addr string, h http.Handler, stdout io.Writer) error {
	// Listening before printing means the printed address already accepts
	// connections, and port 0 resolves to the real port.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "%s listening on http://%s\n", name, ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down %s: %w", name, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
