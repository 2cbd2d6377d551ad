// Command companion runs the companion agent service.
//
//	companion serve     run the HTTP API (the default)
//	companion version   print the version and commit (also --version)
//
// Configuration comes from flags and COMPANION_* environment variables; a
// flag wins over its variable. `companion serve -h` lists them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errUsage && err != errHelp {
			fmt.Fprintln(os.Stderr, "companion:", err)
		}
		os.Exit(exitCode(err))
	}
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version" || len(args[0]) > 0 && args[0][0] != '-') {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		cfg, level, err := parseConfig(args, getenv, stderr)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, level, stderr)
	case "chat":
		return chatCommand(ctx, args, getenv, stdout, stderr)
	case "ask":
		return askCommand(ctx, args, getenv, stdout, stderr)
	case "version", "-version", "--version":
		v, c := buildInfo()
		fmt.Fprintf(stdout, "companion %s (commit %s)\n", v, c)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "companion: unknown command %q\n\n%s", cmd, usage)
	return errUsage
}

const usage = `Usage: companion <command> [flags]

Commands:
  serve     run the HTTP API (default); see companion serve -h
  chat      talk with a running service in the terminal; see companion chat -h
  ask       send one message to a running service and print the reply; see companion ask -h
  version   print the version and commit (also --version)
`

// version and commit are stamped at build time, as `make build` and the
// container image do:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)"
//
// The linker can only set package-level variables; nothing else writes them.
var version, commit string

// buildInfo is the stamped version and commit. Unstamped, they come from
// what the Go toolchain recorded: the module version (a tag or pseudo-version
// with `go install`, "(devel)" otherwise) and the VCS revision, "-dirty"
// when the tree had changes.
func buildInfo() (ver, rev string) {
	ver, rev = version, commit
	bi, ok := debug.ReadBuildInfo()
	if ver == "" {
		ver = "(devel)"
		if ok && bi.Main.Version != "" {
			ver = bi.Main.Version
		}
	}
	if rev == "" {
		rev = "unknown"
		if ok {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if modified && rev != "unknown" {
				rev += "-dirty"
			}
		}
	}
	return ver, rev
}
