package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/model/fake"
	"github.com/companionhq/companion/internal/telemetry"
	"github.com/companionhq/companion/internal/turn/turntest"
)

// tracerSetups are the ways tracing can be set up, cheapest first: no
// tracing at all; the service's setup when no exporter is configured (ids
// only, nothing recorded); an SDK provider that records spans but has no
// processor; and recording with a batch processor in front of an exporter
// that drops what it gets (export without the network).
func tracerSetups(b *testing.B) []struct {
	name string
	tp   trace.TracerProvider
} {
	b.Helper()
	unsampled, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{})
	if err != nil {
		b.Fatal(err)
	}
	recording := sdktrace.NewTracerProvider()
	exporting := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() {
		for _, tp := range []*sdktrace.TracerProvider{unsampled, recording, exporting} {
			_ = tp.Shutdown(context.Background())
		}
	})
	return []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"noop", tracenoop.NewTracerProvider()},
		{"ids-only", unsampled},
		{"recording", recording},
		{"exporting", exporting},
	}
}

// BenchmarkRunTracing is the cost of the run, step and model spans of one
// plain reply on the fake model.
func BenchmarkRunTracing(b *testing.B) {
	in := agent.Input{ThreadID: "t", Personality: agent.Friend,
		Messages: []agent.Message{{Role: "user", Content: "How do I start my day well?"}}}
	for _, s := range tracerSetups(b) {
		b.Run(s.name, func(b *testing.B) {
			a, err := agent.New(agent.Config{Model: fake.New(fake.Options{}), Tracer: s.tp.Tracer("bench")})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Run(context.Background(), in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRequestTracing adds the HTTP server span: one generate request
// through the whole handler.
func BenchmarkRequestTracing(b *testing.B) {
	const body = `{"threadId":"t","messages":[{"role":"user","content":"How do I start my day well?"}]}`
	for _, s := range tracerSetups(b) {
		b.Run(s.name, func(b *testing.B) {
			a, err := agent.New(agent.Config{Model: fake.New(fake.Options{}), Tracer: s.tp.Tracer("bench")})
			if err != nil {
				b.Fatal(err)
			}
			srv := httpapi.NewServer(httpapi.Config{Runner: turntest.Unstored{Agent: a}, TracerProvider: s.tp})
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/api/agents/companionAgent/generate", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}
