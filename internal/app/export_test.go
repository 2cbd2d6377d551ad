package app_test

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/telemetry"
)

// collector is a minimal OTLP trace receiver: it keeps the names of the
// spans it gets, by trace id.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string][]string
}

func (c *collector) keep(req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				id := hex.EncodeToString(s.GetTraceId())
				c.spans[id] = append(c.spans[id], s.GetName())
			}
		}
	}
}

// Export implements the OTLP/gRPC trace service.
func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.keep(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP implements OTLP/HTTP with protobuf bodies.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.keep(&req)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestSpansExportOverOTLP: with the standard OTLP variables set, a run's
// spans reach the collector over either protocol, by the time the app is
// closed.
func TestSpansExportOverOTLP(t *testing.T) {
	for _, protocol := range []string{telemetry.ProtocolHTTP, telemetry.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			c := &collector{spans: map[string][]string{}}
			var endpoint string
			if protocol == telemetry.ProtocolGRPC {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv := grpc.NewServer()
				coltracepb.RegisterTraceServiceServer(srv, c)
				go func() { _ = srv.Serve(ln) }()
				t.Cleanup(srv.Stop)
				endpoint = "http://" + ln.Addr().String()
			} else {
				srv := httptest.NewServer(c)
				t.Cleanup(srv.Close)
				endpoint = srv.URL
			}
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
			for k, v := range env {
				t.Setenv(k, v)
			}
			got, err := telemetry.OTLPProtocol(func(k string) string { return env[k] })
			if err != nil || got != protocol {
				t.Fatalf("protocol %q, %v", got, err)
			}
			svc := apptest.Start(t, func(cfg *app.Config) { cfg.Telemetry.OTLPProtocol = got })
			_, body := svc.Post(t, generatePath, ask("What's the weather in Berlin?"))
			id := decode(t, body).TraceID
			if err := svc.App.Close(); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			names := map[string]int{}
			for _, n := range c.spans[id] {
				names[n]++
			}
			if names["invoke_agent companionAgent"] != 1 || names["step"] != 2 || names["chat fake"] != 2 || names["execute_tool weatherTool"] != 1 {
				t.Fatalf("spans of trace %s at the collector: %v", id, names)
			}
		})
	}
}
