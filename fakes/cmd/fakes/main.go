// Command fakes serves the project's fakes of upstream services, for local
// runs and load tests:
//
//	fakes openmeteo [-addr 127.0.0.1:8090]
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

	"github.com/companionhq/companion/fakes/openmeteo"
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
	// handler builds the fake; it is a func so each run gets a fresh one.
	handler func() http.Handler
}

// commands lists the subcommands. A new fake is one more entry here.
func commands() []command {
	return []command{
		{
			name:        "openmeteo",
			summary:     "Open-Meteo geocoding (/v1/search) and forecast (/v1/forecast) APIs",
			defaultAddr: "127.0.0.1:8090",
			handler:     func() http.Handler { return openmeteo.New() },
		},
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
	fmt.Fprintln(w, "usage: fakes <fake> [-addr host:port]")
	fmt.Fprintln(w, "\nfakes:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s (default -addr %s)\n", c.name, c.summary, c.defaultAddr)
	}
}

func (c command) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakes "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", c.defaultAddr, "address to listen on (port 0 picks a free one)")
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
	return serve(ctx, c.name, *addr, c.handler(), stdout)
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
