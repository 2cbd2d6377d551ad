package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE  = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	traceRE = regexp.MustCompile(`"traceId":"[0-9a-f]{32}"`)
)

// normalized replaces what differs between two runs of the service: ids
// (numbered by first appearance) and times.
func normalized(b []byte) string {
	seen := map[string]string{}
	b = uuidRE.ReplaceAllFunc(b, func(m []byte) []byte {
		if r, ok := seen[string(m)]; ok {
			return []byte(r)
		}
		r := fmt.Sprintf("<id-%d>", len(seen)+1)
		seen[string(m)] = r
		return []byte(r)
	})
	b = traceRE.ReplaceAll(b, []byte(`"traceId":"<trace>"`))
	return string(timeRE.ReplaceAll(b, []byte("<time>")))
}

// conversation is what the recording and the replays ask, in order.
var conversation = []struct{ path, body string }{
	{streamPath, request("weather", "What's the weather in Berlin?")},
	{generatePath, request("weather-gen", "What's the weather in Paris and Tokyo?")},
	{streamPath, request("chat", "How do I start my day well?")},
	// The same thread again: the model sees the first turn.
	{generatePath, request("chat", "And what about the evening?")},
}

// talk runs the conversation on svc and returns each answer's body.
func talk(t *testing.T, svc *apptest.Service) []string {
	t.Helper()
	var out []string
	for _, c := range conversation {
		res, body := svc.Post(t, c.path, c.body)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.path, res.StatusCode, body)
		}
		out = append(out, string(body))
	}
	return out
}

// TestRecordThenReplay: a conversation recorded through the service from a
// provider's fake replays, with the fake stopped, as the same stream events
// and generate bodies; no key is left in the cassettes.
func TestRecordThenReplay(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			h, core := p.fake(upstream.Options{TokenDelay: 2 * time.Millisecond})
			srv := httptest.NewServer(h)
			recorded := talk(t, apptest.Start(t, func(cfg *app.Config) {
				p.configure(cfg, srv.URL)
				cfg.Model.RecordDir = dir
			}))
			srv.Close()
			calls := len(core.Exchanges())
			files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if len(files) != calls {
				t.Fatalf("%d cassettes for %d model calls", len(files), calls)
			}
			for _, f := range files {
				b, _ := os.ReadFile(f)
				if bytes.Contains(b, []byte(key)) {
					t.Fatalf("%s holds the key", f)
				}
			}

			for _, fast := range []bool{true, false} {
				replayed := talk(t, apptest.Start(t, func(cfg *app.Config) {
					cfg.Model.Model, cfg.Model.ReplayDir, cfg.Model.ReplayFast = "replay", dir, fast
				}))
				for i := range recorded {
					if normalized([]byte(recorded[i])) != normalized([]byte(replayed[i])) {
						t.Errorf("fast %v, answer %d differs:\nrecorded %s\nreplayed %s", fast, i, recorded[i], replayed[i])
					}
				}
			}
			var gen api.GenerateResponse
			if err := json.Unmarshal([]byte(recorded[1]), &gen); err != nil {
				t.Fatal(err)
			}
			if gen.Response.ModelID != p.modelID || gen.ProviderMetadata[p.name] == nil || len(gen.ToolResults) != 2 {
				t.Errorf("modelId %q, providerMetadata %v, %d tool results", gen.Response.ModelID, gen.ProviderMetadata, len(gen.ToolResults))
			}
			events, err := apitest.ReadSSE(strings.NewReader(recorded[0]))
			if err != nil || apitest.Check(events) != nil || !strings.Contains(apitest.Text(events), "Berlin") {
				t.Errorf("the recorded stream: %v\n%s", err, recorded[0])
			}
		})
	}
}

// TestReplayKeepsTiming: a replay takes as long as the recording did,
// unless told to be fast.
func TestReplayKeepsTiming(t *testing.T) {
	p := providers[0]
	dir := t.TempDir()
	h, _ := p.fake(upstream.Options{FirstTokenDelay: 100 * time.Millisecond, TokenDelay: 10 * time.Millisecond})
	srv := httptest.NewServer(h)
	svc := apptest.Start(t, func(cfg *app.Config) { p.configure(cfg, srv.URL); cfg.Model.RecordDir = dir })
	body := request("slow", "How do I start my day well?")
	start := time.Now()
	if res, b := svc.Post(t, streamPath, body); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	took := time.Since(start)
	srv.Close()
	for _, fast := range []bool{false, true} {
		svc := apptest.Start(t, func(cfg *app.Config) {
			cfg.Model.Model, cfg.Model.ReplayDir, cfg.Model.ReplayFast = "replay", dir, fast
		})
		start := time.Now()
		if res, b := svc.Post(t, streamPath, body); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		d := time.Since(start)
		if !fast && d < took*8/10 {
			t.Errorf("the replay took %v, the recording %v", d, took)
		}
		if fast && d > took/2 {
			t.Errorf("the fast replay took %v, the recording %v", d, took)
		}
	}
}

// TestReplayUnmatched: a request no cassette holds fails as a model error
// that names the closest cassette and where it differs.
func TestReplayUnmatched(t *testing.T) {
	p := providers[0]
	dir := t.TempDir()
	h, _ := p.fake(upstream.Options{})
	srv := httptest.NewServer(h)
	// No title: its request would be a second cassette.
	svc := apptest.Start(t, func(cfg *app.Config) {
		p.configure(cfg, srv.URL)
		cfg.Model.RecordDir = dir
		cfg.Memory.Titles = false
	})
	if res, b := svc.Post(t, generatePath, request("t", "How do I start my day well?")); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	srv.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) != 1 {
		t.Fatalf("%d cassettes", len(files))
	}
	svc = apptest.Start(t, func(cfg *app.Config) { cfg.Model.Model, cfg.Model.ReplayDir = "replay", dir })
	for _, path := range []string{generatePath, streamPath} {
		res, b := svc.Post(t, path, request("t", "How do I end my day well?"))
		var e api.ErrorBody
		_ = json.Unmarshal(b, &e)
		want := "cohere model failed: no cassette matches the request; the closest, " + filepath.Base(files[0]) + ", differs at messages[1].content"
		if res.StatusCode != 502 || e.Error != want {
			t.Errorf("%s: %d %s, want 502 %q", path, res.StatusCode, b, want)
		}
	}
}
