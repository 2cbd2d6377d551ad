package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/testkit"
)

// started runs `companion serve` in-process with args and env, and returns
// its base URL once it listens, and a channel with run's result.
func started(t *testing.T, ctx context.Context, env map[string]string, args ...string) (string, <-chan error, *logLines) {
	t.Helper()
	pr, pw := io.Pipe()
	logs := &logLines{}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.add(sc.Text())
			if a, ok := testkit.LoggedAddr(sc.Bytes(), "listening"); ok {
				addr <- a
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		db := "sqlite://" + filepath.Join(t.TempDir(), "companion.db")
		err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-database-url", db}, args...), func(k string) string { return env[k] }, io.Discard, pw)
		pw.Close()
		done <- err
	}()
	select {
	case a := <-addr:
		return "http://" + a, done, logs
	case err := <-done:
		t.Fatalf("run ended before listening: %v\n%s", err, logs)
	case <-time.After(10 * time.Second):
		t.Fatal("the service did not start listening")
	}
	return "", nil, nil
}

// logLines keeps the service's log lines for failure messages.
type logLines struct {
	mu  sync.Mutex
	all []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s)
}

// addr is the address logged with message msg, once it is: it waits up to
// 10 seconds for the line.
func (l *logLines) addr(t *testing.T, msg string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		for _, line := range l.all {
			if a, ok := testkit.LoggedAddr([]byte(line), msg); ok {
				l.mu.Unlock()
				return a
			}
		}
		l.mu.Unlock()
	}
	t.Fatalf("no %q line with an address:\n%s", msg, l)
	return ""
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

const streamBody = `{"threadId":"t","messages":[{"role":"user","content":"Tell me something nice."}]}`

func TestServeAndHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, done, _ := started(t, ctx, nil)
	res, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("health: %d", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// TestGracefulShutdown: a run in flight when the signal comes finishes
// within the grace period; the service then exits cleanly.
func TestGracefulShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, done, _ := started(t, ctx, map[string]string{"COMPANION_FAKE_TOKEN_DELAY": "5ms", "COMPANION_SHUTDOWN_GRACE": "10s"})
	res, err := http.Post(url+"/api/agents/companionAgent/stream", "application/json", strings.NewReader(streamBody))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel() // SIGTERM
	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), `"type":"run-finish"`) || strings.Contains(string(rest), `"type":"error"`) {
		t.Fatalf("the run did not finish normally:\n%s", rest)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	// New connections are refused once it stopped.
	if _, err := http.Get(url + "/health"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

// TestShutdownGraceExpires: a run that outlasts the grace period is
// cancelled and its stream ends with an error event and run-finish.
func TestShutdownGraceExpires(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, done, _ := started(t, ctx, nil, "-fake-token-delay", "200ms", "-shutdown-grace", "100ms")
	res, err := http.Post(url+"/api/agents/companionAgent/stream", "application/json", strings.NewReader(streamBody))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel()
	all, _ := io.ReadAll(rd)
	events, err := apitest.ReadSSE(strings.NewReader("data: {\"type\":\"start\",\"runId\":\"x\"}\n\n" + string(all)))
	if err != nil {
		t.Fatal(err)
	}
	n := len(events)
	if n < 2 || events[n-2].Type != "error" || events[n-2].Error.Code != "CANCELLED" || events[n-1].Type != "run-finish" {
		t.Fatalf("stream did not end with CANCELLED and run-finish:\n%s", all)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    []string // in the config's %+v
		wantErr string
	}{
		{name: "defaults", want: []string{"Addr:127.0.0.1:4111", "MaxSteps:5", "ShutdownGrace:10s", "Weather:{GeocodingURL:https://geocoding-api.open-meteo.com", "ForecastURL:https://api.open-meteo.com Timeout:10s", "StreamRetention:5m0s", "StreamRetainedBytes:67108864"}},
		{name: "env", env: map[string]string{"COMPANION_ADDR": "0.0.0.0:9000", "COMPANION_MAX_STEPS": "3", "COMPANION_WEATHER_TIMEOUT": "2s"}, want: []string{"Addr:0.0.0.0:9000", "MaxSteps:3", "ForecastURL:https://api.open-meteo.com Timeout:2s"}},
		{name: "flag beats env", args: []string{"-max-steps", "7"}, env: map[string]string{"COMPANION_MAX_STEPS": "3"}, want: []string{"MaxSteps:7"}},
		{name: "tracing", env: map[string]string{"COMPANION_TRACE_CONTENT": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: []string{"TraceContent:true", "OTLPProtocol:grpc"}},
		{name: "memory defaults", want: []string{"DatabaseURL:sqlite://data/companion.db", "HistoryWindow:20", "LockWait:30s"}},
		{name: "no tracing by default", want: []string{"TraceContent:false", "OTLPProtocol: "}},
		{name: "memory settings", env: map[string]string{"COMPANION_DATABASE_URL": "postgres://db/x", "COMPANION_HISTORY_WINDOW": "8"}, args: []string{"-lock-wait", "0"}, want: []string{"DatabaseURL:postgres://db/x", "HistoryWindow:8", "LockWait:0s"}},
		{name: "trace content flag", args: []string{"-trace-content"}, want: []string{"TraceContent:true"}},
		{name: "bad env bool", env: map[string]string{"COMPANION_TRACE_CONTENT": "sometimes"}, wantErr: `$COMPANION_TRACE_CONTENT: "sometimes" is not true or false`},
		{name: "bad OTLP protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTLP protocol "http/json" is not supported`},
		{name: "bad database url", args: []string{"-database-url", "mysql://x"}, wantErr: "database URL must start with sqlite:// or postgres://"},
		{name: "sqlite url without a file", args: []string{"-database-url", "sqlite://"}, wantErr: "names no file"},
		{name: "stream stall timeout", env: map[string]string{"COMPANION_STREAM_STALL_TIMEOUT": "5s"}, want: []string{"StreamStallTimeout:5s"}},
		{name: "zero stream stall timeout", args: []string{"-stream-stall-timeout", "0s"}, wantErr: "max run duration, body read timeout and stream stall timeout must be positive"},
		{name: "stream retention", env: map[string]string{"COMPANION_STREAM_RETAINED_BYTES": "1048576"}, args: []string{"-stream-retention", "1m"}, want: []string{"StreamRetention:1m0s", "StreamRetainedBytes:1048576"}},
		{name: "no stream retained bytes", args: []string{"-stream-retained-bytes", "0"}, wantErr: "stream retained bytes must be at least 1"},
		{name: "negative history window", args: []string{"-history-window", "-1"}, wantErr: "history window must not be negative"},
		{name: "bad env number", env: map[string]string{"COMPANION_MAX_STEPS": "many"}, wantErr: `$COMPANION_MAX_STEPS: "many" is not a whole number`},
		{name: "bad env duration", env: map[string]string{"COMPANION_SHUTDOWN_GRACE": "soon"}, wantErr: `$COMPANION_SHUTDOWN_GRACE: "soon" is not a duration`},
		{name: "zero steps", args: []string{"-max-steps", "0"}, wantErr: "max steps must be at least 1"},
		{name: "bad log level", args: []string{"-log-level", "loud"}, wantErr: `log level "loud" is not one of`},
		{name: "bad weather url", args: []string{"-weather-forecast-url", "ftp://x"}, wantErr: `weather URL "ftp://x" must start with http://`},
		{name: "cost settings", args: []string{"-prices", "prices.json"}, env: map[string]string{"COMPANION_COST_QUOTA": "2.5"}, want: []string{"Quota:{Tokens:0 Cost:2.5}", "PricesFile:prices.json"}},
		{name: "negative cost quota", args: []string{"-cost-quota", "-1"}, wantErr: "cost quota must not be negative"},
		{name: "cost quota not a number", args: []string{"-cost-quota", "NaN"}, wantErr: "cost quota must not be negative"},
		{name: "bad env cost quota", env: map[string]string{"COMPANION_COST_QUOTA": "a dollar"}, wantErr: `$COMPANION_COST_QUOTA: "a dollar" is not a number of US dollars`},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: "usage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := fmt.Sprintf("%+v", cfg)
			for _, want := range tc.want {
				if !strings.Contains(c, want) {
					t.Errorf("config %s lacks %s", c, want)
				}
			}
		})
	}
}

func TestUnknownModelFailsAtStart(t *testing.T) {
	err := run(context.Background(), []string{"serve", "-model", "nonsense"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `model "nonsense" is not known`) {
		t.Fatalf("got %v", err)
	}
}

func TestBadPricesFileFailsAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(file, []byte(`{"models":{"fake/fake":{"input":-1,"output":1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := "sqlite://" + filepath.Join(t.TempDir(), "c.db")
	err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-database-url", db, "-prices", file}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `model "fake/fake": prices must be numbers, not negative`) {
		t.Fatalf("got %v", err)
	}
}

func TestBadMCPServersFileFailsAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers":{"files":{"command":"x","url":"http://h"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := "sqlite://" + filepath.Join(t.TempDir(), "c.db")
	env := map[string]string{"COMPANION_MCP_SERVERS": file}
	err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-database-url", db}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `server "files": "command" and "url" both set`) {
		t.Fatalf("got %v", err)
	}
}

func TestCommands(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "companion ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
	if err := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, io.Discard, io.Discard); exitCode(err) != 2 {
		t.Fatalf("unknown command: %v", err)
	}
	if err := run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, io.Discard, io.Discard); exitCode(err) != 0 {
		t.Fatalf("help: %v", err)
	}
}

// TestSIGTERM builds the real binary, starts it, sends SIGTERM, and expects
// a clean exit with status 0.
func TestSIGTERM(t *testing.T) {
	bin := buildCompanion(t)
	cmd := exec.Command(bin, "serve", "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "COMPANION_LOG_LEVEL=info", "COMPANION_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "companion.db"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	listening := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"msg":"listening"`) {
			listening = true
			break
		}
	}
	if !listening {
		t.Fatal("the binary never listened")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the binary did not exit after SIGTERM")
	}
}

// TestConfigReportsEveryProblem: a command line with several broken
// settings hears about all of them at once.
func TestConfigReportsEveryProblem(t *testing.T) {
	_, _, err := parseConfig([]string{"-max-steps", "0", "-history-window", "-1"}, func(k string) string {
		return map[string]string{"COMPANION_WEATHER_TIMEOUT": "soon"}[k]
	}, io.Discard, io.Discard)
	for _, want := range []string{"max steps must be at least 1", "history window must not be negative", `$COMPANION_WEATHER_TIMEOUT: "soon" is not a duration`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to include %q", err, want)
		}
	}
}
