package agent_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/telemetry/telemetrytest"
)

// TestCost: each step's cost is its usage at the prices table, the run's
// is their sum, and the run span records it; a model the table lacks
// costs nothing.
func TestCost(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	// $1 per million input tokens, $3 per million output, $0.25 per
	// million cached.
	if err := os.WriteFile(file, []byte(`{"models":{"script/script-1":{"input":1,"output":3,"cachedInput":0.25}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	table, err := pricing.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		prices *pricing.Table
		want   []float64
	}{
		// Step 1: 5 in, 3 out. Step 2: 9 in, 1 out.
		{"priced", table, []float64{5e-6 + 9e-6, 9e-6 + 3e-6}},
		{"not in the table", pricing.Default(), []float64{0, 0}},
		{"no table", nil, []float64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &script{turns: []turn{
				{parts: parts(toolCall("c1", "echo", `{"x":1}`), finish(model.FinishToolCalls, 5, 3))},
				{parts: parts(text("done"), finish(model.FinishStop, 9, 1))},
			}}
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			a, err := agent.New(agent.Config{Model: m, Tools: []agent.Tool{&echoTool{name: "echo"}}, MaxSteps: 3, Tracer: tp.Tracer("test"), Prices: tc.prices})
			if err != nil {
				t.Fatal(err)
			}
			var steps []float64
			res, err := a.Run(context.Background(), input("go"), func(ev agent.Event) error {
				if sf, ok := ev.(agent.StepFinished); ok {
					steps = append(steps, sf.Cost.Total())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
			if len(steps) != 2 || !near(steps[0], tc.want[0]) || !near(steps[1], tc.want[1]) {
				t.Fatalf("step costs %v, want %v", steps, tc.want)
			}
			sum := tc.want[0] + tc.want[1]
			if !near(res.Cost.Total(), sum) || !near(res.Steps[0].Cost.Total(), tc.want[0]) || !near(res.Steps[1].Cost.Total(), tc.want[1]) {
				t.Fatalf("the run cost %+v, its steps %+v and %+v; want %v", res.Cost, res.Steps[0].Cost, res.Steps[1].Cost, sum)
			}
			ra := telemetrytest.Attrs(byName(t, exp.GetSpans(), "invoke_agent companionAgent"))
			if got := ra["companion.cost.usd"].AsFloat64(); !near(got, sum) {
				t.Fatalf("the run span's companion.cost.usd %v, want %v", got, sum)
			}
		})
	}
}
