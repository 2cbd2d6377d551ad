// Command companion runs the companion agent service.
//
//	companion serve     run the HTTP API
//	companion chat      talk with a running service in the terminal
//	companion ask       send one message to a running service
//	companion referrals print a running service's crisis referrals per day
//	companion minor     read or set whether a resource is marked a minor
//	companion version   print the version and commit (also --version)
//
// Alone, it lists the commands. Configuration comes from flags and
// COMPANION_* environment variables; a flag wins over its variable.
// `companion serve -h` lists them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
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
	if len(args) == 0 {
		// Not a server: one started by a bare command would hold a port
		// nobody asked for.
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "serve":
		cfg, level, err := parseConfig(args, getenv, stdout, stderr)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, level, stderr)
	case "chat":
		return chatCommand(ctx, args, getenv, stdout, stderr)
	case "ask":
		return askCommand(ctx, args, getenv, stdout, stderr)
	case "referrals":
		return referralsCommand(ctx, args, getenv, stdout, stderr)
	case "minor":
		return minorCommand(ctx, args, getenv, stdout, stderr)
	case "version", "-version", "--version":
		v, c := buildInfo()
		fmt.Fprintf(stdout, "companion %s (commit %s)\n", v, c)
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	if strings.HasPrefix(cmd, "-") {
		fmt.Fprintf(stderr, "companion: flag %s before a command: flags follow it, as in companion serve %s\nrun 'companion -h' for the commands\n", cmd, cmd)
	} else {
		fmt.Fprintf(stderr, "companion: unknown command %q\nrun 'companion -h' for the commands\n", cmd)
	}
	return errUsage
}

const usage = `Usage: companion <command> [flags]

Commands:
  serve     run the HTTP API
  chat      talk with a running service in the terminal
  ask       send one message to a running service and print the reply
  referrals print a running service's crisis referrals per day and locale
  minor     read or set whether a running service has a resource marked a minor
  version   print the version and commit (also --version)
  help      print this list

Run 'companion <command> -h' for a command's flags.
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
