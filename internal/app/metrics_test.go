package app_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/testkit"
)

// TestMetricsAfterRuns scrapes /metrics after a weather run, a tool error
// and a stream, as Prometheus would.
func TestMetricsAfterRuns(t *testing.T) {
	svc := apptest.Start(t, nil)
	svc.Post(t, generatePath, ask("What's the weather in Berlin?"))
	svc.Post(t, generatePath, ask("What's the weather in Atlantis?"))
	svc.Post(t, streamPath, ask("How do I start my day well?"))
	svc.Post(t, generatePath, `{"messages":[]}`)

	res, body := svc.Do(t, http.MethodGet, "/metrics", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	text := string(body)
	for _, want := range []string{
		`companion_runs_total{finish_reason="stop",model="fake",personality="guru",provider="fake"} 3`,
		`companion_tool_calls_total{outcome="ok",tool="weatherTool"} 1`,
		`companion_tool_calls_total{outcome="error",tool="weatherTool"} 1`,
		`companion_model_calls_total{model="fake",outcome="ok",provider="fake"} 5`,
		`companion_model_calls_total{model="fake",outcome="error",provider="fake"} 0`,
		`companion_tokens_total{model="fake",personality="guru",provider="fake",type="input"} `,
		`companion_tokens_total{model="fake",personality="guru",provider="fake",type="cached"} `,
		`companion_http_requests_total{code="200",method="POST",route="/api/agents/{agentId}/generate"} 2`,
		`companion_http_requests_total{code="200",method="POST",route="/api/agents/{agentId}/stream"} 1`,
		`companion_http_requests_total{code="400",method="POST",route="/api/agents/{agentId}/generate"} 1`,
		`companion_http_request_duration_seconds_bucket{code="200",method="POST",route="/api/agents/{agentId}/stream",le="+Inf"} 1`,
		`companion_run_steps_bucket{model="fake",provider="fake",le="2"} 3`,
		`companion_stream_time_to_first_event_seconds_count 1`,
		`companion_stream_time_to_first_text_seconds_count 1`,
		`companion_streams_open 0`,
		`companion_runs_in_flight 0`,
		`go_goroutines `,
		`process_cpu_seconds_total `,
		`go_build_info{`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, never := range []string{"thread-7", "user-7", "Berlin", "Atlantis"} {
		if strings.Contains(text, never) {
			t.Errorf("/metrics holds %q: labels must not carry ids or contents", never)
		}
	}
}

// logLines decodes the JSON log lines written to b.
func logLines(t *testing.T, b *testkit.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestLogLines: one request line and one run line, both naming the trace;
// neither holds what the user said.
func TestLogLines(t *testing.T) {
	var logs testkit.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc := apptest.StartLogged(t, log, nil)
	_, body := svc.Post(t, generatePath, ask("What's the weather in Berlin?"))
	traceID := decode(t, body).TraceID

	var request, run map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for request == nil && time.Now().Before(deadline) {
		// The request line is written once the handler has returned.
		for _, l := range logLines(t, &logs) {
			switch l["msg"] {
			case "request":
				request = l
			case "run":
				run = l
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if request == nil || run == nil {
		t.Fatalf("request line %v, run line %v", request, run)
	}
	if request["trace_id"] != traceID || request["span_id"] == "" || request["route"] != "/api/agents/{agentId}/generate" || request["status"] != 200.0 {
		t.Errorf("request line %v", request)
	}
	for k, want := range map[string]any{"trace_id": traceID, "thread_id": "thread-7", "finish_reason": "stop", "personality": "guru", "steps": 2.0} {
		if run[k] != want {
			t.Errorf("run line %s = %v, want %v", k, run[k], want)
		}
	}
	for _, k := range []string{"run_id", "span_id", "input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"} {
		if _, ok := run[k]; !ok {
			t.Errorf("run line lacks %s: %v", k, run)
		}
	}
	if run["span_id"] == request["span_id"] {
		t.Errorf("the run line names the server span, not the run's")
	}
	all := logs.String()
	if strings.Contains(all, "weather in Berlin") || strings.Contains(all, "temperature") {
		t.Errorf("the log holds message contents:\n%s", all)
	}
}

// TestStreamRetainedBytes: an ended run is kept to be resumed and shows in
// the run log's gauges; with -stream-retained-bytes below its size it is
// forgotten at its end.
func TestStreamRetainedBytes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		retained int
		resume   int
		kept     string
	}{
		{"default", 0, http.StatusOK, `companion_stream_runs_kept{state="ended"} 1`},
		{"one byte", 1, http.StatusNotFound, `companion_stream_runs_kept{state="ended"} 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := apptest.Start(t, func(c *app.Config) {
				if tc.retained > 0 {
					c.Server.StreamRetainedBytes = tc.retained
				}
			})
			res, body := svc.Post(t, streamPath, ask("How do I start my day well?"))
			runID := res.Header.Get("X-Run-Id")
			if res.StatusCode != http.StatusOK || runID == "" || !strings.Contains(string(body), "run-finish") {
				t.Fatalf("stream: %d, run %q: %s", res.StatusCode, runID, body)
			}
			// The stream ends with the run's last event; the run's end in
			// the log (which applies the byte cap) follows on the run's own
			// goroutine, a moment later.
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, metrics := svc.Do(t, http.MethodGet, "/metrics", "")
				if strings.Contains(string(metrics), `companion_stream_runs_kept{state="running"} 0`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the run never ended in the log")
				}
				time.Sleep(10 * time.Millisecond)
			}
			res, body = svc.Do(t, http.MethodGet, "/api/agents/companionAgent/runs/"+runID+"/stream?resourceId=user-7", "")
			if res.StatusCode != tc.resume {
				t.Fatalf("resume: %d %s, want %d", res.StatusCode, body, tc.resume)
			}
			_, metrics := svc.Do(t, http.MethodGet, "/metrics", "")
			text := string(metrics)
			for _, want := range []string{tc.kept, `companion_stream_runs_kept{state="running"} 0`} {
				if !strings.Contains(text, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			retained := regexp.MustCompile(`(?m)^companion_stream_retained_bytes (\d+)$`).FindStringSubmatch(text)
			if retained == nil || (retained[1] == "0") != (tc.resume == http.StatusNotFound) {
				t.Errorf("/metrics: retained bytes %q", retained)
			}
		})
	}
}
