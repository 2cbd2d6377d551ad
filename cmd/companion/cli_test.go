package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app"
)

// runCLI runs the command in-process with no environment.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errw strings.Builder
	err = run(context.Background(), args, func(string) string { return "" }, &out, &errw)
	return out.String(), errw.String(), err
}

// TestCommandList: alone the command lists its commands, on stderr with
// status 2, and starts no server; asked for help, the same on stdout with
// status 0.
func TestCommandList(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		stdout, errs string
		exit         int
	}{
		{nil, "", usage, 2},
		{[]string{"-h"}, usage, "", 0},
		{[]string{"-help"}, usage, "", 0},
		{[]string{"--help"}, usage, "", 0},
		{[]string{"help"}, usage, "", 0},
		{[]string{"frobnicate"}, "", "companion: unknown command \"frobnicate\"\nrun 'companion -h' for the commands\n", 2},
		{[]string{"-addr", ":4112"}, "", "companion: flag -addr before a command: flags follow it, as in companion serve -addr\nrun 'companion -h' for the commands\n", 2},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if stdout != tc.stdout || stderr != tc.errs || exitCode(err) != tc.exit {
			t.Errorf("companion %q: status %d (%v), stdout %q, stderr %q; want %d, %q, %q", tc.args, exitCode(err), err, stdout, stderr, tc.exit, tc.stdout, tc.errs)
		}
	}
	for _, cmd := range []string{"serve", "chat", "ask", "referrals", "minor", "version", "help"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + ` +\S.*$`).MatchString(usage) {
			t.Errorf("the command list has no line for %s:\n%s", cmd, usage)
		}
	}
	if !strings.Contains(usage, "companion <command> -h") {
		t.Errorf("the command list does not say how to get a command's flags:\n%s", usage)
	}
}

// TestServeHelp: `companion serve -h` is the flags, each in one section
// and with its variable, then the variables read without a flag.
func TestServeHelp(t *testing.T) {
	stdout, stderr, err := runCLI(t, "serve", "-h")
	if exitCode(err) != 0 || stderr != "" {
		t.Fatalf("status %d (%v), stderr %q", exitCode(err), err, stderr)
	}
	if !strings.HasPrefix(stdout, "Usage: companion serve [flags]\n") || strings.Contains(stdout, "Usage of") {
		t.Fatalf("the help begins:\n%s", stdout[:min(len(stdout), 200)])
	}
	for _, want := range []string{"CO_API_KEY", "OPENAI_API_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"} {
		if !regexp.MustCompile(`\b` + want + `\b`).MatchString(stdout) {
			t.Errorf("the help does not name $%s", want)
		}
	}

	// Each flag under its section's title, with its variable.
	section := map[string]string{}
	var cur string
	flagLine := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			cur, _, _ = strings.Cut(strings.TrimSuffix(line, ":"), ":")
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil {
			if s, ok := section[m[1]]; ok {
				t.Errorf("-%s is listed in %s and in %s", m[1], s, cur)
			}
			section[m[1]] = cur
		}
	}
	for name, want := range map[string]string{"log-level": "Logging", "addr": "Server", "shutdown-grace": "Server", "api-keys-file": "Authentication",
		"rate-limit": "Limits", "database-url": "Storage", "recall": "Memory", "model": "Model", "weather-timeout": "Tools", "trace-content": "Telemetry"} {
		if section[name] != want {
			t.Errorf("-%s is in section %q, want %q", name, section[name], want)
		}
	}
	var cfg app.Config
	var level slog.Level
	f := serveFlags(func(string) string { return "" }, &cfg, &level)
	f.fs.VisitAll(func(fl *flag.Flag) {
		if section[fl.Name] == "" {
			t.Errorf("-%s is in no section of the help", fl.Name)
		}
		if !regexp.MustCompile(`\(\$COMPANION_[A-Z0-9_]+\)`).MatchString(fl.Usage) {
			t.Errorf("-%s names no variable: %q", fl.Name, fl.Usage)
		}
	})
	if len(section) == 0 {
		t.Fatalf("no flags in the help:\n%s", stdout)
	}
}

// TestBadFlags: a flag the commands cannot take is one line naming it and
// what it accepts, and where the flags are listed; status 2.
func TestBadFlags(t *testing.T) {
	hint := func(cmd string) string { return "\nrun 'companion " + cmd + " -h' for the flags\n" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-shutdown-grace", "10"}, `companion serve: -shutdown-grace: "10" is not a duration such as 10s or 1m30s` + hint("serve")},
		{[]string{"serve", "-nope"}, "companion serve: unknown flag -nope" + hint("serve")},
		{[]string{"serve", "--nope=1"}, "companion serve: unknown flag -nope" + hint("serve")},
		{[]string{"serve", "-max-steps", "many"}, `companion serve: -max-steps: "many" is not a whole number` + hint("serve")},
		{[]string{"serve", "-max-body-bytes", "1e6"}, `companion serve: -max-body-bytes: "1e6" is not a whole number` + hint("serve")},
		{[]string{"serve", "-cost-quota", "a dollar"}, `companion serve: -cost-quota: "a dollar" is not a number` + hint("serve")},
		{[]string{"serve", "--trace-content=maybe"}, `companion serve: -trace-content: "maybe" is not true or false` + hint("serve")},
		{[]string{"serve", "-shutdown-grace"}, "companion serve: -shutdown-grace needs a value: a duration such as 10s or 1m30s" + hint("serve")},
		{[]string{"serve", "-addr"}, "companion serve: -addr needs a value" + hint("serve")},
		{[]string{"serve", "now"}, `companion serve: unexpected argument "now"` + hint("serve")},
		{[]string{"chat", "--nope"}, "companion chat: unknown flag -nope" + hint("chat")},
		{[]string{"chat", "--personality"}, "companion chat: -personality needs a value" + hint("chat")},
		{[]string{"ask", "--json=sometimes", "Hi"}, `companion ask: -json: "sometimes" is not true or false` + hint("ask")},
		{[]string{"ask", "Hi", "--thread"}, "companion ask: -thread needs a value" + hint("ask")},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if exitCode(err) != 2 || stderr != tc.want || stdout != "" {
			t.Errorf("companion %q: status %d (%v), stderr %q, stdout %q; want 2 and %q", tc.args, exitCode(err), err, stderr, stdout, tc.want)
		}
	}
}

// TestBadSettingsExit2: values that parse but cannot work are a usage
// error too: status 2, one line each.
func TestBadSettingsExit2(t *testing.T) {
	_, stderr, err := runCLI(t, "serve", "-max-steps", "0", "-shutdown-grace", "-1s")
	// Sections in the help's order: the server's before the model's.
	if exitCode(err) != 2 || stderr != "" || err == nil || err.Error() != graceAndTimeout+"\nmax steps must be at least 1" {
		t.Fatalf("status %d, error %v, stderr %q", exitCode(err), err, stderr)
	}
}

// TestCommandLineOfTheBinary: the built command, as a shell runs it: the
// status and the very lines on stderr.
func TestCommandLineOfTheBinary(t *testing.T) {
	bin := buildCompanion(t)
	for _, tc := range []struct {
		args []string
		exit int
		want string // stderr
	}{
		{nil, 2, usage},
		{[]string{"serve", "-shutdown-grace", "10"}, 2, "companion serve: -shutdown-grace: \"10\" is not a duration such as 10s or 1m30s\nrun 'companion serve -h' for the flags\n"},
		{[]string{"serve", "-max-steps", "0"}, 2, "companion: max steps must be at least 1\n"},
		{[]string{"serve", "-h"}, 0, ""},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = clientEnv()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.exit || stderr.String() != tc.want {
			t.Errorf("companion %q: status %d, stderr %q; want %d, %q", tc.args, code, stderr.String(), tc.exit, tc.want)
		}
	}
}

// TestReadmeShowsTheCommandLine: the README's samples of the command line
// are what the command prints.
func TestReadmeShowsTheCommandLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, args := range [][]string{{"-h"}, {"serve", "-shutdown-grace", "10"}} {
		stdout, stderr, _ := runCLI(t, args...)
		sample := "$ companion " + strings.Join(args, " ") + "\n" + stdout + stderr + "```"
		if !strings.Contains(readme, sample) {
			t.Errorf("the README does not show, as it is:\n%s", sample)
		}
	}
	for _, want := range []string{"go install github.com/companionhq/companion/cmd/companion@latest", "make install"} {
		i, first := strings.Index(readme, want), strings.Index(readme, "$ companion ")
		if i < 0 || i > first {
			t.Errorf("the README does not say %q before it first runs companion", want)
		}
	}
}
