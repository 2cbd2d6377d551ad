// Package telemetry holds the service's observability: the OpenTelemetry
// tracer provider and its OTLP export, the Prometheus metrics (every
// definition in metrics.go) and the log handler that ties log lines to
// traces. internal/app builds them and hands them to the agent and the HTTP
// server; nothing here is global.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// OTLP protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME
// says otherwise.
const ServiceName = "companion"

// OTLPProtocol reads the standard OpenTelemetry variables through getenv and
// tells whether spans are to be exported over OTLP, and how. It returns ""
// (no export) unless OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and also when OTEL_SDK_DISABLED
// is true or OTEL_TRACES_EXPORTER is none. The protocol comes from
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf, the specification's default. The exporter itself reads the
// endpoint, headers, TLS and timeout variables.
func OTLPProtocol(getenv func(string) string) (string, error) {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return "", nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return "", nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "", "otlp":
	case "none":
		return "", nil
	default:
		return "", fmt.Errorf("$OTEL_TRACES_EXPORTER: %q is not supported: use otlp or none", e)
	}
	p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if p == "" {
		p = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("OTLP protocol %q is not supported: use grpc or http/protobuf", p)
}

// TracingConfig says where spans go.
type TracingConfig struct {
	// ServiceVersion is the service.version of the spans.
	ServiceVersion string
	// OTLPProtocol exports spans over OTLP with this protocol (see
	// OTLPProtocol); "" exports none.
	OTLPProtocol string
	// Exporter, when set, receives every span as it ends, synchronously;
	// tests give an in-memory one.
	Exporter sdktrace.SpanExporter
}

// NewTracerProvider returns the service's tracer provider. With an exporter,
// spans are recorded and sampled as OTEL_TRACES_SAMPLER says (by default
// all, following the caller's decision). Without one, no span is recorded,
// but every span still gets real trace and span ids, so that a run's
// traceId and the log lines' trace_id are real W3C ids and a caller's
// traceparent is kept: the cost is an id per span and nothing more.
// Shut it down to flush what is buffered.
func NewTracerProvider(ctx context.Context, cfg TracingConfig) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	switch cfg.OTLPProtocol {
	case "":
	case ProtocolGRPC:
		e, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		exp = e
	case ProtocolHTTP:
		e, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		exp = e
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported: use grpc or http/protobuf", cfg.OTLPProtocol)
	}
	if exp == nil && cfg.Exporter == nil {
		return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())), nil
	}
	res, err := newResource(ctx, cfg.ServiceVersion)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.Exporter != nil {
		opts = append(opts, sdktrace.WithSyncer(cfg.Exporter))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// newResource describes the service: its name and version, then whatever
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES add or override.
func newResource(ctx context.Context, version string) (*resource.Resource, error) {
	attrs := resource.WithAttributes(semconv.ServiceName(ServiceName))
	if version != "" {
		attrs = resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(version))
	}
	res, err := resource.New(ctx, attrs, resource.WithTelemetrySDK(), resource.WithFromEnv())
	if errors.Is(err, resource.ErrPartialResource) || errors.Is(err, resource.ErrSchemaURLConflict) {
		// What could be read is still a usable description.
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describing the service for traces: %w", err)
	}
	return res, nil
}
