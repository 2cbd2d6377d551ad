package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/nodetest"
	"github.com/companionhq/companion/internal/tool/mcp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, file, wantErr string
	}{
		{"not JSON", `{`, "not JSON"},
		{"no mcpServers", `{"servers": {}}`, `no "mcpServers"`},
		{"neither", `{"mcpServers": {"a": {"args": ["x"]}}}`, `server "a": neither "command"`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, `server "a": "command" and "url" both set`},
		{"empty command", `{"mcpServers": {"a": {"command": ""}}}`, `server "a": "command" is empty`},
		{"bad url", `{"mcpServers": {"b": {"url": "ftp://h"}}}`, `server "b": "url" "ftp://h"`},
		{"headers on stdio", `{"mcpServers": {"a": {"command": "x", "headers": {}}}}`, `server "a": "headers"`},
		{"env on http", `{"mcpServers": {"a": {"url": "http://h", "env": {}}}}`, `server "a": "args" and "env"`},
		{"args not strings", `{"mcpServers": {"a": {"command": "x", "args": [1]}}}`, `server "a": not an object`},
		{"empty allow-list", `{"mcpServers": {"a": {"command": "x", "tools": []}}}`, `server "a": "tools" is empty`},
		{"name with space", `{"mcpServers": {"a b": {"command": "x"}}}`, `server "a b": the name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mcp.Parse([]byte(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}

	got, err := mcp.Parse([]byte(`{"mcpServers": {
		"web": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer k"}, "type": "http"},
		"everything": {"command": "node", "args": ["i.js", "stdio"], "env": {"A": "1"}, "tools": ["echo"]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "everything" || got[0].Command != "node" || got[0].Args[1] != "stdio" ||
		got[0].Env["A"] != "1" || len(got[0].Tools) != 1 || got[1].Name != "web" || got[1].URL != "https://h/mcp" ||
		got[1].Headers["Authorization"] != "Bearer k" || got[1].Tools != nil {
		t.Errorf("Parse = %+v", got)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"x": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := mcp.Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `server "x"`) {
		t.Fatalf("Load = %v, want the file and the server named", err)
	}
}

var suite = nodetest.Suite{What: "the MCP tool tests against the reference server", Setup: ".ci/node"}

// everything is the reference MCP server as a stdio Server named
// "everything", installed from testdata/everything's lockfile.
func everything(t *testing.T) mcp.Server {
	t.Helper()
	suite.RequireNode(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "everything"))
	if err != nil {
		t.Fatal(err)
	}
	suite.InstallModules(t, dir)
	return mcp.Server{
		Name:    "everything",
		Command: "node",
		Args:    []string{filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"},
	}
}

func tool(t *testing.T, set *mcp.Set, name string) *mcp.Tool {
	t.Helper()
	for _, tl := range set.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func TestEverythingOverStdio(t *testing.T) {
	srv := everything(t)
	ctx := t.Context()
	set := mcp.Open(ctx, []mcp.Server{srv}, mcp.Options{})
	t.Cleanup(func() { set.Close() })

	echo := tool(t, set, "everything_echo")
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(echo.Parameters(), &schema); err != nil || schema.Properties["message"] == nil {
		t.Errorf("everything_echo's schema = %s (%v), want a message property", echo.Parameters(), err)
	}
	out, err := echo.Run(ctx, json.RawMessage(`{"message":"hi"}`))
	if err != nil || out != "Echo: hi" {
		t.Fatalf("everything_echo = %#v, %v; want \"Echo: hi\"", out, err)
	}

	// A call the server refuses is the tool's error.
	if _, err := echo.Run(ctx, json.RawMessage(`{"message":1}`)); err == nil || !strings.Contains(err.Error(), "MCP server everything") {
		t.Errorf("everything_echo with a number = %v, want the server's error", err)
	}
	// The session survives a refused call.
	if out, err := echo.Run(ctx, json.RawMessage(`{"message":"again"}`)); err != nil || out != "Echo: again" {
		t.Errorf("everything_echo after an error = %#v, %v", out, err)
	}

	// A call slower than its deadline fails in time, and the next call
	// gets an answer.
	slow := tool(t, set, "everything_trigger-long-running-operation")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := slow.Run(short, json.RawMessage(`{"duration":30,"steps":1}`)); err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("a slow call = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a slow call took %s", d)
	}
	if out, err := echo.Run(ctx, json.RawMessage(`{"message":"later"}`)); err != nil || out != "Echo: later" {
		t.Errorf("everything_echo after a timeout = %#v, %v", out, err)
	}
}

func TestAllowList(t *testing.T) {
	srv := everything(t)
	srv.Tools = []string{"echo", "not-there"}
	set := mcp.Open(t.Context(), []mcp.Server{srv}, mcp.Options{})
	t.Cleanup(func() { set.Close() })
	var names []string
	for _, tl := range set.Tools() {
		names = append(names, tl.Name())
	}
	if strings.Join(names, " ") != "everything_echo everything_not-there" {
		t.Fatalf("tools = %v, want only the allowed ones", names)
	}
	if _, err := tool(t, set, "everything_not-there").Run(t.Context(), nil); err == nil {
		t.Error("a tool the server does not have ran")
	}
}

func TestServerDown(t *testing.T) {
	servers := []mcp.Server{
		{Name: "gone", Command: filepath.Join(t.TempDir(), "no-such-server"), Tools: []string{"echo"}},
		{Name: "closed", URL: "http://" + testkit.FreeAddr(t) + "/mcp", Tools: []string{"echo"}},
		{Name: "hidden", URL: "http://" + testkit.FreeAddr(t) + "/mcp"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	set := mcp.Open(ctx, servers, mcp.Options{ConnectTimeout: 2 * time.Second})
	t.Cleanup(func() { set.Close() })
	// Without an allow-list an unreachable server offers nothing; with one,
	// its tools are offered and fail.
	if n := len(set.Tools()); n != 2 {
		t.Fatalf("%d tools, want 2", n)
	}
	for _, tl := range set.Tools() {
		if string(tl.Parameters()) != `{"type":"object"}` {
			t.Errorf("%s's schema = %s", tl.Name(), tl.Parameters())
		}
		_, err := tl.Run(ctx, json.RawMessage(`{"message":"hi"}`))
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("%s = %v, want unreachable", tl.Name(), err)
		}
	}
}

// startHTTP runs the reference server over streamable HTTP on addr until
// the test ends or the returned stop is called.
func startHTTP(t *testing.T, srv mcp.Server, addr string) (stop func()) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(srv.Command, srv.Args[0], "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	var logs testkit.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-done
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return stop
		}
		select {
		case <-done:
			t.Fatalf("the server exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not listen on %s: %s", addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEverythingOverHTTPReconnects(t *testing.T) {
	node := everything(t)
	addr := testkit.FreeAddr(t)
	stop := startHTTP(t, node, addr)
	// A proxy in front records the headers the client sends.
	target, _ := url.Parse("http://" + addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the refused calls are the point
	var auth atomic.Value
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	srv := mcp.Server{Name: "web", URL: front.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer k"}}
	set := mcp.Open(t.Context(), []mcp.Server{srv}, mcp.Options{})
	t.Cleanup(func() { set.Close() })
	sum := tool(t, set, "web_get-sum")
	call := func() (any, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return sum.Run(ctx, json.RawMessage(`{"a":2,"b":3}`))
	}
	const want = "The sum of 2 and 3 is 5."
	if out, err := call(); err != nil || out != want {
		t.Fatalf("web_get-sum = %#v, %v; want %q", out, err, want)
	}
	if got := auth.Load(); got != "Bearer k" {
		t.Errorf("Authorization = %v, want the configured header", got)
	}

	stop()
	if _, err := call(); err == nil {
		t.Fatal("a call to a stopped server succeeded")
	}
	startHTTP(t, node, addr)
	if out, err := call(); err != nil || out != want {
		t.Fatalf("after a restart web_get-sum = %#v, %v; want %q", out, err, want)
	}
}
