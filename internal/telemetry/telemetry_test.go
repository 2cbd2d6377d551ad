package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/telemetry"
	_ "github.com/companionhq/companion/internal/testkit"
)

func newMetrics(t *testing.T) (*telemetry.Metrics, func(names ...string) string) {
	t.Helper()
	reg, err := telemetry.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// exposition renders the named families in the text format.
	return m, func(names ...string) string {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, mf := range mfs {
			for _, n := range names {
				if mf.GetName() == n {
					for _, m := range mf.GetMetric() {
						b.WriteString(n + "{")
						for i, l := range m.GetLabel() {
							if i > 0 {
								b.WriteString(",")
							}
							b.WriteString(l.GetName() + "=" + l.GetValue())
						}
						b.WriteString("} ")
						switch {
						case m.Counter != nil:
							b.WriteString(trimFloat(m.GetCounter().GetValue()))
						case m.Gauge != nil:
							b.WriteString(trimFloat(m.GetGauge().GetValue()))
						case m.Histogram != nil:
							b.WriteString("count=" + trimFloat(float64(m.GetHistogram().GetSampleCount())))
						}
						b.WriteString("\n")
					}
				}
			}
		}
		return b.String()
	}
}

// wantSeries fails the test for each series line of want that got lacks.
func wantSeries(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("missing %s in\n%s", w, got)
		}
	}
}

func trimFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestMetricsOfRuns(t *testing.T) {
	m, show := newMetrics(t)
	ctx := context.Background()
	m.Known("fake", "fake", "weatherTool")
	run := agent.RunInfo{RunID: "r1", Provider: "fake", Model: "fake", Personality: "guru"}
	m.RunStarted(ctx, run)
	if got := show("companion_runs_in_flight"); got != "companion_runs_in_flight{} 1\n" {
		t.Fatalf("in flight: %s", got)
	}
	usage := model.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, CachedInputTokens: 40}
	m.ModelCalled(ctx, agent.ModelCallStats{RunInfo: run, Duration: 30 * time.Millisecond, Finish: &model.Finish{Reason: "tool_calls", Usage: usage}})
	m.ToolCalled(ctx, agent.ToolCallStats{RunInfo: run, Tool: "weatherTool", Duration: time.Millisecond})
	m.ToolCalled(ctx, agent.ToolCallStats{RunInfo: run, Tool: "weatherTool", Duration: time.Millisecond, Err: errors.New("no such place")})
	m.ModelCalled(ctx, agent.ModelCallStats{RunInfo: run, Duration: time.Second, Err: errors.New("overloaded")})
	m.RunFinished(ctx, run, agent.RunStats{FinishReason: "error", Steps: 2, Usage: usage, Duration: 2 * time.Second})
	// A provider's own reason stays out of the label set.
	m.RunStarted(ctx, run)
	m.RunFinished(ctx, run, agent.RunStats{FinishReason: "MAX_TOKENS_REACHED", Steps: 1})

	got := show("companion_runs_total", "companion_tokens_total", "companion_model_calls_total", "companion_tool_calls_total",
		"companion_run_steps", "companion_model_call_duration_seconds", "companion_tool_call_duration_seconds")
	wantSeries(t, got,
		"companion_runs_total{finish_reason=error,model=fake,personality=guru,provider=fake} 1",
		"companion_runs_total{finish_reason=other,model=fake,personality=guru,provider=fake} 1",
		"companion_tokens_total{model=fake,personality=guru,provider=fake,type=input} 100",
		"companion_tokens_total{model=fake,personality=guru,provider=fake,type=output} 20",
		"companion_tokens_total{model=fake,personality=guru,provider=fake,type=cached} 40",
		"companion_tokens_total{model=fake,personality=guru,provider=fake,type=reasoning} 0",
		"companion_model_calls_total{model=fake,outcome=ok,provider=fake} 1",
		"companion_model_calls_total{model=fake,outcome=error,provider=fake} 1",
		"companion_tool_calls_total{outcome=ok,tool=weatherTool} 1",
		"companion_tool_calls_total{outcome=error,tool=weatherTool} 1",
		"companion_run_steps{model=fake,provider=fake} count=2",
		"companion_model_call_duration_seconds{model=fake,provider=fake} count=2",
		"companion_tool_call_duration_seconds{outcome=error,tool=weatherTool} count=1",
	)
	if got := show("companion_runs_in_flight"); got != "companion_runs_in_flight{} 0\n" {
		t.Fatalf("in flight: %s", got)
	}
}

func TestKnownSeriesStartAtZero(t *testing.T) {
	m, show := newMetrics(t)
	m.Known("cohere", "command-r", "weatherTool", "clockTool")
	got := show("companion_model_calls_total", "companion_tool_calls_total")
	wantSeries(t, got,
		"companion_model_calls_total{model=command-r,outcome=error,provider=cohere} 0",
		"companion_model_calls_total{model=command-r,outcome=ok,provider=cohere} 0",
		"companion_tool_calls_total{outcome=error,tool=clockTool} 0",
		"companion_tool_calls_total{outcome=ok,tool=weatherTool} 0",
	)
}

func TestHTTPMetrics(t *testing.T) {
	m, show := newMetrics(t)
	m.RequestServed("POST", "/api/agents/{agentId}/generate", 200, 40*time.Millisecond)
	m.RequestServed("POST", "/api/agents/{agentId}/generate", 400, time.Millisecond)
	m.RequestServed("BREW", "unmatched", 405, time.Millisecond)
	m.StreamOpened()
	m.StreamOpened()
	m.StreamClosed()
	m.StreamFirstEvent(5 * time.Millisecond)
	m.StreamFirstText(6 * time.Millisecond)
	got := show("companion_http_requests_total", "companion_http_request_duration_seconds", "companion_streams_open",
		"companion_stream_time_to_first_event_seconds", "companion_stream_time_to_first_text_seconds")
	wantSeries(t, got,
		"companion_http_requests_total{code=200,method=POST,route=/api/agents/{agentId}/generate} 1",
		"companion_http_requests_total{code=400,method=POST,route=/api/agents/{agentId}/generate} 1",
		"companion_http_requests_total{code=405,method=_OTHER,route=unmatched} 1",
		"companion_http_request_duration_seconds{code=200,method=POST,route=/api/agents/{agentId}/generate} count=1",
		"companion_streams_open{} 1",
		"companion_stream_time_to_first_event_seconds{} count=1",
		"companion_stream_time_to_first_text_seconds{} count=1",
	)
}

// TestRunLogMetrics: the run log's gauges are read from it at each scrape.
func TestRunLogMetrics(t *testing.T) {
	reg, err := telemetry.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	stats := runlog.Stats{Running: 3}
	if err := telemetry.WatchRunLog(reg, func() runlog.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"companion_stream_retained_bytes 0\ncompanion_stream_runs_kept{state=\"ended\"} 0\ncompanion_stream_runs_kept{state=\"running\"} 3\n",
		"companion_stream_retained_bytes 4096\ncompanion_stream_runs_kept{state=\"ended\"} 2\ncompanion_stream_runs_kept{state=\"running\"} 1\n",
	} {
		if err := testutil.GatherAndCompare(reg, strings.NewReader(runLogHelp+want), "companion_stream_runs_kept", "companion_stream_retained_bytes"); err != nil {
			t.Error(err)
		}
		stats = runlog.Stats{Running: 1, Ended: 2, EndedBytes: 4096}
	}
}

const runLogHelp = `# HELP companion_stream_retained_bytes Bytes of the events of ended runs this instance keeps to be resumed; -stream-retained-bytes bounds them.
# TYPE companion_stream_retained_bytes gauge
# HELP companion_stream_runs_kept Streamed runs whose events this instance keeps: in progress (state running), and ended ones kept to be resumed (state ended).
# TYPE companion_stream_runs_kept gauge
`

// TestMetricNamesFollowConventions runs promlint, Prometheus's own checker
// of names, units, suffixes and help texts, over every family.
func TestMetricNamesFollowConventions(t *testing.T) {
	reg, err := telemetry.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Every family needs a series for the linter to see it.
	ctx := context.Background()
	run := agent.RunInfo{Provider: "p", Model: "m", Personality: "friend"}
	m.Known("p", "m", "t")
	m.RunStarted(ctx, run)
	m.RunFinished(ctx, run, agent.RunStats{FinishReason: "stop", Steps: 1})
	m.ModelCalled(ctx, agent.ModelCallStats{RunInfo: run, Finish: &model.Finish{Reason: "stop"}})
	m.ToolCalled(ctx, agent.ToolCallStats{RunInfo: run, Tool: "t"})
	m.RequestServed("GET", "/health", 200, time.Millisecond)
	m.StreamOpened()
	m.StreamFirstEvent(time.Millisecond)
	m.StreamFirstText(time.Millisecond)
	if err := telemetry.WatchRunLog(reg, func() runlog.Stats { return runlog.Stats{} }); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "companion_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n < 30 {
		t.Fatalf("%d series (%v): the Go and process collectors are missing", n, err)
	}
}

func TestOTLPProtocol(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    string
		wantErr string
	}{
		{env: nil, want: ""},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: ""},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, want: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: "grpc"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, want: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "true"}, want: ""},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none"}, want: ""},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `"zipkin" is not supported`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTLP protocol "http/json" is not supported`},
	}
	for _, tc := range tests {
		got, err := telemetry.OTLPProtocol(func(k string) string { return tc.env[k] })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: got %v, want error %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: got %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}

func TestTracerProviderWithoutExporterKeepsIDs(t *testing.T) {
	tp, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "x")
	defer span.End()
	if span.IsRecording() || !span.SpanContext().TraceID().IsValid() || !span.SpanContext().SpanID().IsValid() {
		t.Fatalf("recording %v, ids %v", span.IsRecording(), span.SpanContext())
	}
}

func TestTracerProviderExportsOverOTLP(t *testing.T) {
	// An exporter builds without reaching its endpoint; only export dials.
	for _, p := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTP} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		tp, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{OTLPProtocol: p, ServiceVersion: "v1"})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		// The span is not ended, so that nothing is sent to the endpoint
		// where nothing listens.
		_, span := tp.Tracer("t").Start(context.Background(), "x")
		if !span.IsRecording() {
			t.Fatalf("%s: spans are not recorded", p)
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

func TestTracerProviderResource(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	exp := tracetest.NewInMemoryExporter()
	tp, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{Exporter: exp, ServiceVersion: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "x")
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	res := map[string]string{}
	for _, kv := range spans[0].Resource.Attributes() {
		res[string(kv.Key)] = kv.Value.String()
	}
	if res["service.name"] != "companion" || res["service.version"] != "v1.2.3" || res["deployment.environment.name"] != "test" || res["telemetry.sdk.language"] != "go" {
		t.Fatalf("resource %v", res)
	}
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))

	log.InfoContext(ctx, "request")
	log.InfoContext(ctx, "run", "trace_id", "mine")
	log.InfoContext(context.Background(), "no span")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	var first, second, third map[string]any
	for i, p := range []*map[string]any{&first, &second, &third} {
		if err := json.Unmarshal([]byte(lines[i]), p); err != nil {
			t.Fatal(err)
		}
	}
	if first["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || first["span_id"] != "00f067aa0ba902b7" || first["component"] != "test" {
		t.Fatalf("line %s", lines[0])
	}
	if second["trace_id"] != "mine" || strings.Count(lines[1], "trace_id") != 1 {
		t.Fatalf("line %s", lines[1])
	}
	if _, ok := third["trace_id"]; ok {
		t.Fatalf("line %s", lines[2])
	}
}
