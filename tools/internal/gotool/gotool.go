// Package gotool holds what the measurement tools share to build and run
// the service from this module: the go command, the module's root, the
// end of a log, and a main that runs a tool's run function.
package gotool

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Command is the go command: $GO as make passes it, else go.
func Command() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// ModuleRoot returns the directory of the main module's go.mod.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, Command(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run from inside the companion module")
	}
	return filepath.Dir(mod), nil
}

// Tail returns the last lines of a log, for errors.
func Tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// Main runs a tool: run with the command line until it returns or the
// process is interrupted, then exits 2 for a bad command line, 1 with the
// error for a failure.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
