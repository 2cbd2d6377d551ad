package app_test

import (
	"bytes"
	"encoding/json"
	"testing"

	fakecohere "github.com/companionhq/companion/fakes/cohere"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
)

// TestCohereUsageIsBilled: with Cohere, the usage of the generate body and
// of the stream counts what is billed; the token counts, which add what the
// API adds under the hood, and the cached tokens are in providerMetadata.
func TestCohereUsageIsBilled(t *testing.T) {
	svc, _ := providers[0].start(t, upstream.Options{})
	q := "What's the weather in Berlin?"
	res, body := svc.Post(t, generatePath, request("usage-generate", q))
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	var gen api.GenerateResponse
	if err := json.Unmarshal(body, &gen); err != nil {
		t.Fatal(err)
	}
	if len(gen.Steps) != 2 {
		t.Fatalf("%d steps, want the tool call and the answer", len(gen.Steps))
	}
	var sum api.Usage
	for i, st := range gen.Steps {
		meta, _ := st.ProviderMetadata["cohere"].(map[string]any)
		var billed, tokens struct{ InputTokens, OutputTokens int }
		remarshal(t, meta["billedUnits"], &billed)
		remarshal(t, meta["tokens"], &tokens)
		u := st.Usage
		if u.InputTokens != billed.InputTokens || u.OutputTokens != billed.OutputTokens || u.TotalTokens != u.InputTokens+u.OutputTokens || u.CachedInputTokens != 0 {
			t.Errorf("step %d: usage %+v, billed units %+v", i, u, billed)
		}
		// The service offers the weather tool: the prompt carries the tool
		// template; the first step's one call adds its special tokens.
		wantOut := billed.OutputTokens
		if i == 0 {
			wantOut += fakecohere.CallTokens
		}
		if tokens.InputTokens != billed.InputTokens+fakecohere.TemplateTokens+fakecohere.ToolTemplateTokens || tokens.OutputTokens != wantOut {
			t.Errorf("step %d: tokens %+v, billed %+v", i, tokens, billed)
		}
		// The second step is a later message of the conversation: its
		// template and instructions hit the prompt cache.
		if cached, ok := meta["cachedTokens"].(float64); (i == 1) != ok || (ok && cached <= fakecohere.TemplateTokens) {
			t.Errorf("step %d: cached tokens %v", i, meta["cachedTokens"])
		}
		sum = sum.Add(u)
	}
	if gen.Usage != sum || gen.TotalUsage != sum {
		t.Errorf("usage %+v, total %+v, want the steps' sum %+v", gen.Usage, gen.TotalUsage, sum)
	}

	// The stream reports the same numbers, step by step and for the run.
	res, body = svc.Post(t, streamPath, request("usage-stream", q))
	events, err := apitest.ReadSSE(bytes.NewReader(body))
	if res.StatusCode != 200 || err != nil {
		t.Fatalf("%d %v %s", res.StatusCode, err, body)
	}
	step := 0
	for _, e := range events {
		var p struct{ Usage api.Usage }
		switch e.Type {
		case api.EventStepFinish:
			remarshal(t, e.Payload, &p)
			if p.Usage != gen.Steps[step].Usage {
				t.Errorf("step-finish %d: usage %+v, generate's %+v", step, p.Usage, gen.Steps[step].Usage)
			}
			step++
		case api.EventRunFinish:
			remarshal(t, e.Payload, &p)
			if p.Usage != sum {
				t.Errorf("run-finish: usage %+v, want %+v", p.Usage, sum)
			}
		}
	}
	if step != 2 {
		t.Errorf("%d step-finish events", step)
	}
}

// remarshal decodes v, JSON or decoded JSON, into out.
func remarshal(t *testing.T, v, out any) {
	t.Helper()
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}
