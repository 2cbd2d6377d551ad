package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	fakecohere "github.com/companionhq/companion/fakes/cohere"
	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	_ "github.com/companionhq/companion/internal/testkit"
)

// key is the fake providers' API key (generatePath and streamPath are in
// trace_test.go).
const key = "sk-test-0123456789abcdef"

// provider is one real provider run against its fake.
type provider struct {
	name, modelID string
	fake          func(upstream.Options) (http.Handler, *upstream.Core)
	configure     func(cfg *app.Config, url string)
}

var providers = []provider{
	{name: "cohere", modelID: "command-a-03-2025",
		fake: func(o upstream.Options) (http.Handler, *upstream.Core) { s := fakecohere.New(o); return s, s.Core },
		configure: func(cfg *app.Config, url string) {
			cfg.Model.Model, cfg.Model.BaseURL, cfg.Model.CohereAPIKey = "cohere/command-a-03-2025", url, key
		}},
	{name: "openai", modelID: "gpt-4o-mini",
		fake: func(o upstream.Options) (http.Handler, *upstream.Core) { s := fakeopenai.New(o); return s, s.Core },
		configure: func(cfg *app.Config, url string) {
			cfg.Model.Model, cfg.Model.BaseURL, cfg.Model.OpenAIAPIKey = "openai/gpt-4o-mini", url+"/v1", key
		}},
}

// start runs the service on p's fake with opts and short retry delays.
func (p provider) start(t *testing.T, opts upstream.Options, configure ...func(*app.Config)) (*apptest.Service, *upstream.Core) {
	t.Helper()
	h, core := p.fake(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	svc := apptest.Start(t, func(cfg *app.Config) {
		p.configure(cfg, srv.URL)
		cfg.Model.RetryDelay, cfg.Model.RetryBudget, cfg.Model.FirstTokenTimeout = 5*time.Millisecond, 2*time.Second, 500*time.Millisecond
		for _, c := range configure {
			c(cfg)
		}
	})
	return svc, core
}

// request asks text on a thread of its own: with memory, a second request
// on one thread would see the first.
func request(thread, text string) string {
	b, _ := json.Marshal(map[string]any{"threadId": thread, "messages": []map[string]string{{"role": "user", "content": text}},
		"runtimeContext": map[string]any{"metadata": map[string]string{"personality": "guru"}}})
	return string(b)
}

// TestProvidersEndToEnd: with a real provider the stream and the generate
// body have the same shapes as with the fake model and obey the rules;
// modelId and providerMetadata tell who answered.
func TestProvidersEndToEnd(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			svc, _ := p.start(t, upstream.Options{})
			for _, q := range []string{"How do I start my day well?", "What's the weather in Berlin?", "What's the weather in Paris and Tokyo?"} {
				res, body := svc.Post(t, streamPath, request("stream-"+q, q))
				if res.StatusCode != 200 {
					t.Fatalf("stream %q: %d %s", q, res.StatusCode, body)
				}
				events, err := apitest.ReadSSE(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if err := apitest.Check(events); err != nil {
					t.Fatalf("stream %q breaks the rules: %v\n%s", q, err, body)
				}
				res, gbody := svc.Post(t, generatePath, request("generate-"+q, q))
				if res.StatusCode != 200 {
					t.Fatalf("generate %q: %d %s", q, res.StatusCode, gbody)
				}
				var gen api.GenerateResponse
				if err := json.Unmarshal(gbody, &gen); err != nil {
					t.Fatal(err)
				}
				if err := apitest.CheckAgainst(events, gen); err != nil {
					t.Errorf("%q: stream and generate disagree: %v", q, err)
				}
				if gen.Response.ModelID != p.modelID || gen.ProviderMetadata[p.name] == nil || gen.Text == "" || gen.FinishReason != api.FinishStop {
					t.Errorf("%q: modelId %q, providerMetadata %v, finish %q, text %q", q, gen.Response.ModelID, gen.ProviderMetadata, gen.FinishReason, gen.Text)
				}
				if strings.Contains(q, "weather") && len(gen.ToolResults) == 0 {
					t.Errorf("%q: no tool results", q)
				}
				if gen.Usage.InputTokens == 0 || gen.Usage.TotalTokens != gen.Usage.InputTokens+gen.Usage.OutputTokens {
					t.Errorf("%q: usage %+v", q, gen.Usage)
				}
			}
		})
	}
}

// TestProviderFailures: upstream failures become 502, 503 or 504 with a
// clear message and no secret before anything was streamed, and an error
// event with MODEL_ERROR and run-finish after.
func TestProviderFailures(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			many := func(f upstream.Fault) []upstream.Fault { return []upstream.Fault{f, f, f, f, f, f} } // 3 attempts for each endpoint
			for _, tc := range []struct {
				name       string
				faults     []upstream.Fault
				status     int
				message    string
				retryAfter string
			}{
				{"rate limited", many(upstream.Fault{Kind: upstream.FaultStatus, Status: 429, RetryAfter: "0"}), 503, p.name + " model failed: the provider is rate limiting requests (HTTP 429); gave up after 3 attempts", ""},
				{"overloaded, asks to wait", []upstream.Fault{{Kind: upstream.FaultStatus, Status: 503, RetryAfter: "30"}, {Kind: upstream.FaultStatus, Status: 503, RetryAfter: "30"}}, 503, p.name + " model failed: the provider is overloaded or unavailable (HTTP 503)", "30"},
				{"server error", many(upstream.Fault{Kind: upstream.FaultStatus, Status: 500}), 502, p.name + " model failed: the provider failed (HTTP 500); gave up after 3 attempts", ""},
				{"no first token", []upstream.Fault{{Kind: upstream.FaultHang}, {Kind: upstream.FaultHang}}, 504, p.name + " model failed: the model sent nothing within 500ms (first-token timeout)", ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					svc, _ := p.start(t, upstream.Options{Faults: tc.faults})
					for _, path := range []string{generatePath, streamPath} {
						res, body := svc.Post(t, path, request("t-"+path, "Hello"))
						var e api.ErrorBody
						_ = json.Unmarshal(body, &e)
						if res.StatusCode != tc.status || !strings.HasPrefix(e.Error, tc.message) || res.Header.Get("Retry-After") != tc.retryAfter {
							t.Errorf("%s: %d %s (Retry-After %q), want %d %q", path, res.StatusCode, body, res.Header.Get("Retry-After"), tc.status, tc.message)
						}
						if strings.Contains(string(body), key) || strings.Contains(string(body), "http://") {
							t.Errorf("%s: the body shows a secret or an address: %s", path, body)
						}
					}
				})
			}
			t.Run("cut mid-stream", func(t *testing.T) {
				svc, _ := p.start(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultCut, After: 3}}})
				res, body := svc.Post(t, streamPath, request("t1", "How do I start my day well?"))
				events, err := apitest.ReadSSE(bytes.NewReader(body))
				if res.StatusCode != 200 || err != nil {
					t.Fatalf("%d %v %s", res.StatusCode, err, body)
				}
				if err := apitest.Check(events); err != nil {
					t.Fatalf("%v\n%s", err, body)
				}
				n := len(events)
				if events[n-2].Type != api.EventError || events[n-2].Error.Code != api.CodeModelError ||
					events[n-2].Error.Message != p.name+" model failed: the connection to the provider broke off in the middle of the answer" ||
					!strings.Contains(events[n-1].Raw, `"finishReason":"error"`) || apitest.Text(events) == "" {
					t.Errorf("the stream does not end with MODEL_ERROR and run-finish:\n%s", body)
				}
			})
		})
	}
}

// TestClientDisconnectCancelsUpstream: a client that leaves the stream
// cancels the provider's request at once.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			// The fake stalls after a few tokens, still answering when the
			// client goes.
			// Without a grace period to resume in, a broken stream cancels its run.
			svc, core := p.start(t, upstream.Options{TokenDelay: 5 * time.Millisecond, Faults: []upstream.Fault{{Kind: upstream.FaultHang, After: 4}}},
				func(cfg *app.Config) { cfg.Server.ResumeGrace = 0 })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, svc.URL+streamPath, strings.NewReader(request("t1", "How do I start my day well?")))
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			rd := bufio.NewReader(res.Body)
			for texts := 0; texts < 2; {
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(line, `"type":"text"`) {
					texts++
				}
			}
			left := time.Now()
			cancel()
			res.Body.Close()
			wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer wcancel()
			at, ok := core.WaitCancelled(wctx, 0)
			if !ok {
				t.Fatal("the provider's request was never cancelled")
			}
			if d := at.Sub(left); d > 100*time.Millisecond {
				t.Errorf("the upstream saw the cancellation %v after the client left, want within 100ms", d)
			}
		})
	}
}

// TestModerationThroughTheProvider: -moderation-model alone checks each
// message at the model provider's address, with the provider's key.
func TestModerationThroughTheProvider(t *testing.T) {
	p := providers[1] // the OpenAI-compatible one
	svc, _ := p.start(t, upstream.Options{}, func(cfg *app.Config) {
		cfg.Safety.Crisis = false
		cfg.Safety.ModerationModel = "omni-moderation-latest"
		cfg.Safety.ModerationKey = cfg.Model.OpenAIAPIKey
	})
	res, body := svc.Post(t, generatePath, request("moderated", "I am going to stab him tomorrow."))
	if res.StatusCode != 200 || !strings.Contains(string(body), `"tripwireReason":"moderation: violence"`) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
