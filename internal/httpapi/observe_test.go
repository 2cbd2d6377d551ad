package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/turn"
)

// recObserver records what the server tells its Observer, in order.
type recObserver struct {
	mu    sync.Mutex
	calls []string
}

func (o *recObserver) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, s)
}

func (o *recObserver) RequestServed(method, route string, status int, _ time.Duration) {
	o.add(fmt.Sprintf("served %s %s %d", method, route, status))
}
func (o *recObserver) RequestLimited(scope string)      { o.add("limited " + scope) }
func (o *recObserver) StreamOpened()                    { o.add("opened") }
func (o *recObserver) StreamClosed()                    { o.add("closed") }
func (o *recObserver) StreamFirstEvent(d time.Duration) { o.add("first event") }
func (o *recObserver) StreamFirstText(d time.Duration)  { o.add("first text") }

// waitCalls returns the calls once there are n: the request is reported
// after its response has been sent.
func (o *recObserver) waitCalls(t *testing.T, n int) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		o.mu.Lock()
		got := strings.Join(o.calls, "; ")
		have := len(o.calls)
		o.mu.Unlock()
		if have >= n || time.Now().After(deadline) {
			return got
		}
	}
}

func TestObserverSeesRequestsAndStreams(t *testing.T) {
	// A run that holds its opening events back, calls a tool, then writes text.
	run := stubRunner(func(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
		for _, ev := range []agent.Event{
			agent.RunStarted{}, agent.StepStarted{},
			agent.ToolInputStarted{CallID: "c", Tool: "t"},
			agent.TextDelta{Text: "hi"}, agent.TextDelta{Text: " there"},
			agent.StepFinished{},
		} {
			if err := emit(ev); err != nil {
				return nil, err
			}
		}
		return &turn.Outcome{Result: &agent.Result{FinishReason: "stop"}}, nil
	})
	for _, tc := range []struct {
		method, path, body string
		n                  int
		want               string
	}{
		{"POST", streamPath, body(""), 5, "opened; first event; first text; closed; served POST /api/agents/{agentId}/stream 200"},
		{"POST", streamPath, `{"messages":[]}`, 1, "served POST /api/agents/{agentId}/stream 400"},
		{"GET", "/nowhere/42", "", 1, "served GET unmatched 404"},
		{"GET", "/health", "", 1, "served GET /health 200"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			obs := &recObserver{}
			srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Runner: run, Observer: obs}))
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if got := obs.waitCalls(t, tc.n); got != tc.want {
				t.Fatalf("observer saw\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

func TestServerSpansAndMetricsRoute(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "# metrics") })
	run := stubRunner(func(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
		return &turn.Outcome{Result: &agent.Result{TraceID: trace.SpanContextFromContext(ctx).TraceID().String()}}, nil
	})
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Runner: run, TracerProvider: tp, Metrics: metrics}))
	defer srv.Close()

	res, b := post(t, srv.URL+"/metrics", "")
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /metrics: %d %s", res.StatusCode, b)
	}
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", res.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+generatePath, strings.NewReader(body("")))
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res, err = http.Get(srv.URL + "/nowhere"); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	var names []string
	for deadline := time.Now().Add(5 * time.Second); len(names) < 2 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		names = names[:0]
		for _, s := range exp.GetSpans() {
			names = append(names, s.Name)
			if strings.HasSuffix(s.Name, "/generate") && (s.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || !s.Parent.IsRemote()) {
				t.Fatalf("the generate span does not continue the caller's trace: %v", s.SpanContext)
			}
		}
	}
	// Requests to /metrics make none; an unmatched route is named by its
	// method alone.
	if got := strings.Join(names, ", "); got != "POST /api/agents/{agentId}/generate, GET" {
		t.Fatalf("server spans: %s", got)
	}
}
