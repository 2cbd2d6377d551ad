package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/nodetest"
)

var mcpSuite = nodetest.Suite{What: "the MCP tool tests against the reference server", Setup: ".ci/node"}

// mcpServersFile writes an mcpServers file with the reference server over
// stdio as "everything" (allowed: echo and get-sum) and "down", an HTTP
// server nothing listens on, allowed its echo.
func mcpServersFile(t *testing.T) string {
	t.Helper()
	mcpSuite.RequireNode(t)
	dir, err := filepath.Abs(filepath.Join("..", "tool", "mcp", "testdata", "everything"))
	if err != nil {
		t.Fatal(err)
	}
	mcpSuite.InstallModules(t, dir)
	index := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	file, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{index, "stdio"}, "tools": []string{"echo", "get-sum"}},
		"down":       map[string]any{"url": "http://" + testkit.FreeAddr(t) + "/mcp", "tools": []string{"echo"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sseEvent is the part of a stream event these tests read.
type sseEvent struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Payload struct {
		ToolName string          `json:"toolName"`
		Args     json.RawMessage `json:"args"`
		Result   json.RawMessage `json:"result"`
		IsError  bool            `json:"isError"`
	} `json:"payload"`
	Error struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

func streamEvents(t *testing.T, svc *apptest.Service, thread, content string) []sseEvent {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"threadId": thread, "resourceId": "mcp-user",
		"messages": []map[string]string{{"role": "user", "content": content}},
	})
	res, raw := svc.Post(t, "/api/agents/companionAgent/stream", string(body))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, raw)
	}
	var events []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e sseEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		events = append(events, e)
	}
	return events
}

func TestMCPToolsInAStream(t *testing.T) {
	file := mcpServersFile(t)
	svc := apptest.Start(t, func(c *app.Config) { c.Tools.MCPServers = file })

	tests := []struct {
		name, thread, message string
		// wantTool is the tool called, "" for none; wantResult its result
		// (JSON) and wantError its failure.
		wantTool, wantResult, wantError string
		wantText                        string
	}{
		{
			name: "echo over stdio", thread: "mcp-echo", message: `/tool everything_echo {"message":"hi"}`,
			wantTool: "everything_echo", wantResult: `"Echo: hi"`, wantText: "Echo: hi",
		},
		{
			name: "a tool's refusal", thread: "mcp-refused", message: `/tool everything_echo {"message":1}`,
			wantTool: "everything_echo", wantError: "everything_echo failed: MCP server everything:",
		},
		{
			name: "server down", thread: "mcp-down", message: `/tool down_echo {"message":"hi"}`,
			wantTool: "down_echo", wantError: "down_echo failed: MCP server down is unreachable",
		},
		{
			// get-env is the server's, but not on its allow-list: not
			// offered, so the fake answers in words.
			name: "hidden by the allow-list", thread: "mcp-hidden", message: `/tool everything_get-env {}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := streamEvents(t, svc, tt.thread, tt.message)
			var called, failed string
			var result json.RawMessage
			var text strings.Builder
			for _, e := range events {
				switch e.Type {
				case "tool-call":
					called = e.Payload.ToolName + " " + string(e.Payload.Args)
				case "tool-result":
					result = e.Payload.Result
				case "error":
					if e.Error.Code != "TOOL_ERROR" {
						t.Errorf("error event %+v, want a TOOL_ERROR", e.Error)
					}
					failed = e.Error.Message
				case "text":
					text.WriteString(e.Text)
				}
			}
			if last := events[len(events)-1].Type; last != "run-finish" {
				t.Fatalf("the stream ends with %s, want run-finish", last)
			}
			if tt.wantTool == "" {
				if called != "" || text.Len() == 0 {
					t.Fatalf("called %q, answered %q; want words and no call", called, text.String())
				}
				return
			}
			if !strings.HasPrefix(called, tt.wantTool+" ") {
				t.Fatalf("called %q, want %s", called, tt.wantTool)
			}
			if tt.wantError != "" {
				if !strings.HasPrefix(failed, tt.wantError) || !strings.Contains(text.String(), failed) {
					t.Fatalf("failure %q and answer %q, want %q answered", failed, text.String(), tt.wantError)
				}
				return
			}
			if failed != "" || string(result) != tt.wantResult || text.String() != tt.wantText {
				t.Fatalf("result %s, failure %q, answer %q; want %s and %q", result, failed, text.String(), tt.wantResult, tt.wantText)
			}
		})
	}

	// The agent's description lists the allowed MCP tools with their schemas.
	res, body := svc.Do(t, "GET", "/api/agents/companionAgent", "")
	var agent struct {
		Tools map[string]struct {
			InputSchema string `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &agent); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("agent details = %d %s (%v)", res.StatusCode, body, err)
	}
	for _, name := range []string{"everything_echo", "everything_get-sum", "down_echo"} {
		if _, ok := agent.Tools[name]; !ok {
			t.Errorf("agent details have no %s: %s", name, body)
		}
	}
	if _, ok := agent.Tools["everything_get-env"]; ok {
		t.Error("agent details list a tool the allow-list hides")
	}
	if !strings.Contains(agent.Tools["everything_echo"].InputSchema, "message") {
		t.Errorf("everything_echo's schema = %s", agent.Tools["everything_echo"].InputSchema)
	}

	// Its calls are counted like weatherTool's, by tool and outcome.
	_, metrics := svc.Do(t, "GET", "/metrics", "")
	for _, want := range []string{
		`companion_tool_calls_total{outcome="ok",tool="everything_echo"} 1`,
		`companion_tool_calls_total{outcome="error",tool="everything_echo"} 1`,
		`companion_tool_calls_total{outcome="error",tool="down_echo"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// /ready does not wait for the server that is down.
	if res, body := svc.Do(t, "GET", "/ready", ""); res.StatusCode != http.StatusOK {
		t.Errorf("/ready = %d %s", res.StatusCode, body)
	}
}

// dialectFrame is the part of a frame, in any dialect, that
// TestMCPToolsInEveryDialect reads.
type dialectFrame struct {
	Type         string          `json:"type"`
	ToolName     string          `json:"toolName"`
	Input        json.RawMessage `json:"input"`
	Output       json.RawMessage `json:"output"`
	FinishReason string          `json:"finishReason"`
	Payload      struct {
		ToolName     string          `json:"toolName"`
		Args         json.RawMessage `json:"args"`
		Result       json.RawMessage `json:"result"`
		FinishReason string          `json:"finishReason"`
		StepResult   struct {
			Reason string `json:"reason"`
		} `json:"stepResult"`
	} `json:"payload"`
}

// mcpRun is what a dialect tells of a run: its tool call (name and args),
// the call's result, how the run finished, and whether the answer ended as
// the dialect ends it.
type mcpRun struct {
	call, result, finish string
	ended                bool
}

// frames reads an SSE body's data frames; done is whether it ends with
// "data: [DONE]".
func frames(t *testing.T, raw []byte) (fs []dialectFrame, done bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if done {
			t.Fatalf("a frame after [DONE]: %s", data)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var f dialectFrame
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		t.Fatalf("no frames in %s", raw)
	}
	return fs, done
}

// TestMCPToolsInEveryDialect: an MCP tool's call and result reach the
// client in each stream dialect, on the chat route and in the generate
// body, in that answer's own shapes, and the run finishes normally.
func TestMCPToolsInEveryDialect(t *testing.T) {
	file := mcpServersFile(t)
	svc := apptest.Start(t, func(c *app.Config) { c.Tools.MCPServers = file })
	const message = `/tool everything_echo {"message":"hi"}`
	runBody := func(thread string) string {
		b, _ := json.Marshal(map[string]any{
			"threadId": thread, "resourceId": "mcp-user",
			"messages": []map[string]string{{"role": "user", "content": message}},
		})
		return string(b)
	}
	seed := func(t *testing.T, raw []byte) (r mcpRun) {
		fs, done := frames(t, raw)
		for _, f := range fs {
			switch f.Type {
			case "tool-call":
				r.call = f.Payload.ToolName + " " + string(f.Payload.Args)
			case "tool-result":
				r.result = string(f.Payload.Result)
			case "run-finish":
				r.finish = f.Payload.FinishReason
			}
		}
		// The seed dialect ends with run-finish, and no [DONE].
		r.ended = fs[len(fs)-1].Type == "run-finish" && !done
		return r
	}
	mastra := func(t *testing.T, raw []byte) (r mcpRun) {
		fs, done := frames(t, raw)
		for _, f := range fs {
			switch f.Type {
			case "tool-call":
				r.call = f.Payload.ToolName + " " + string(f.Payload.Args)
			case "tool-result":
				r.result = string(f.Payload.Result)
			case "finish":
				r.finish = f.Payload.StepResult.Reason
			}
		}
		r.ended = fs[len(fs)-1].Type == "finish" && done
		return r
	}
	aisdk := func(t *testing.T, raw []byte) (r mcpRun) {
		fs, done := frames(t, raw)
		for _, f := range fs {
			switch f.Type {
			case "tool-input-available":
				r.call = f.ToolName + " " + string(f.Input)
			case "tool-output-available":
				r.result = string(f.Output)
			case "finish":
				r.finish = f.FinishReason
			}
		}
		r.ended = fs[len(fs)-1].Type == "finish" && done
		return r
	}

	tests := []struct {
		name, path string
		header     http.Header
		body       func(thread string) string
		read       func(t *testing.T, raw []byte) mcpRun
	}{
		{name: "seed", path: "/api/agents/companionAgent/stream", header: http.Header{"X-Stream-Format": {"seed"}}, body: runBody, read: seed},
		{name: "mastra", path: "/api/agents/companionAgent/stream", header: http.Header{"X-Stream-Format": {"mastra"}}, body: runBody, read: mastra},
		{name: "ai-sdk", path: "/api/agents/companionAgent/stream", header: http.Header{"X-Stream-Format": {"ai-sdk"}}, body: runBody, read: aisdk},
		{
			name: "chat", path: "/api/agents/companionAgent/chat", read: aisdk,
			body: func(thread string) string {
				b, _ := json.Marshal(map[string]any{
					"id": thread, "resourceId": "mcp-user", "trigger": "submit-message",
					"messages": []map[string]any{{"id": "m-1", "role": "user", "parts": []map[string]string{{"type": "text", "text": message}}}},
				})
				return string(b)
			},
		},
		{
			name: "generate", path: "/api/agents/companionAgent/generate", body: runBody,
			read: func(t *testing.T, raw []byte) (r mcpRun) {
				var g struct {
					FinishReason string `json:"finishReason"`
					ToolCalls    []struct {
						ToolName string          `json:"toolName"`
						Args     json.RawMessage `json:"args"`
					} `json:"toolCalls"`
					ToolResults []struct {
						ToolName string          `json:"toolName"`
						Result   json.RawMessage `json:"result"`
						IsError  bool            `json:"isError"`
					} `json:"toolResults"`
				}
				if err := json.Unmarshal(raw, &g); err != nil {
					t.Fatalf("generate body %s: %v", raw, err)
				}
				if len(g.ToolCalls) != 1 || len(g.ToolResults) != 1 || g.ToolResults[0].IsError || g.ToolResults[0].ToolName != g.ToolCalls[0].ToolName {
					t.Fatalf("toolCalls and toolResults in %s, want one successful call", raw)
				}
				return mcpRun{
					call:   g.ToolCalls[0].ToolName + " " + string(g.ToolCalls[0].Args),
					result: string(g.ToolResults[0].Result), finish: g.FinishReason, ended: true,
				}
			},
		},
	}
	want := mcpRun{call: `everything_echo {"message":"hi"}`, result: `"Echo: hi"`, finish: "stop", ended: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, raw := svc.DoHeader(t, http.MethodPost, tt.path, tt.body("mcp-dialect-"+tt.name), tt.header)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, raw)
			}
			if got := tt.read(t, raw); got != want {
				t.Fatalf("the run told %+v, want %+v:\n%s", got, want, raw)
			}
		})
	}
}
