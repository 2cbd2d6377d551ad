package provider_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	fakecohere "github.com/companionhq/companion/fakes/cohere"
	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/modeltest"
	"github.com/companionhq/companion/internal/model/provider"
	_ "github.com/companionhq/companion/internal/testkit"
)

// key is the fake providers' API key.
const key = "sk-test-0123456789abcdef"

// withPolicy is cfg with a resilience policy.
func withPolicy(cfg provider.Config) provider.Config {
	cfg.Timeout, cfg.FirstTokenTimeout = 90*time.Second, 20*time.Second
	cfg.MaxRetries, cfg.RetryDelay, cfg.RetryBudget = 2, 250*time.Millisecond, 30*time.Second
	return cfg
}

// open opens cfg with a resilience policy and returns the model, the log
// and the error.
func open(t *testing.T, cfg provider.Config) (model.Model, string, error) {
	t.Helper()
	var logs bytes.Buffer
	m, err := provider.Open(withPolicy(cfg), slog.New(slog.NewJSONHandler(&logs, nil)))
	if strings.Contains(logs.String(), key) || strings.Contains(logs.String(), ":pw@") {
		t.Errorf("the log shows a secret:\n%s", logs.String())
	}
	return m, logs.String(), err
}

// TestOpen: each model setting opens its provider and logs who answers,
// from where, with which key and policy; a setting that cannot work says
// what to set.
func TestOpen(t *testing.T) {
	policy := []string{`"timeout":"1m30s"`, `"first_token_timeout":"20s"`, `"max_retries":2`, `"retry_delay":"250ms"`, `"retry_budget":"30s"`}
	for _, tc := range []struct {
		name               string
		cfg                provider.Config
		wantErr            string
		provider, id       string
		wantLog, unwantLog []string
	}{
		{name: "no setting is the fake", provider: "fake", id: "fake",
			wantLog: []string{`no model configured: answering with the deterministic fake model`}, unwantLog: []string{`"msg":"model"`}},
		{name: "the fake by name", cfg: provider.Config{Model: "fake"}, provider: "fake", id: "fake", unwantLog: []string{`no model configured`}},
		{name: "the fake with a base URL", cfg: provider.Config{Model: "fake", BaseURL: "http://127.0.0.1:8000"}, wantErr: "the fake model takes no base URL"},
		{name: "cohere without its key", cfg: provider.Config{Model: "cohere/command-a-03-2025"}, wantErr: `model "cohere/command-a-03-2025" needs a Cohere API key: set CO_API_KEY`},
		{name: "openai without its key", cfg: provider.Config{Model: "openai/gpt-4o-mini", CohereAPIKey: "x"}, wantErr: `model "openai/gpt-4o-mini" needs an OpenAI API key: set OPENAI_API_KEY`},
		{name: "cohere", cfg: provider.Config{Model: "cohere/command-a-03-2025", CohereAPIKey: key}, provider: "cohere", id: "command-a-03-2025",
			wantLog: append([]string{`"provider":"cohere"`, `"model":"command-a-03-2025"`, `"base_url":"https://api.cohere.com"`, `"api_key":"set from CO_API_KEY"`}, policy...)},
		{name: "openai", cfg: provider.Config{Model: " openai/gpt-4o-mini ", OpenAIAPIKey: key}, provider: "openai", id: "gpt-4o-mini",
			wantLog: []string{`"provider":"openai"`, `"base_url":"https://api.openai.com/v1"`, `"api_key":"set from OPENAI_API_KEY"`}},
		{name: "ollama needs no key", cfg: provider.Config{Model: "ollama/llama3.2", OpenAIAPIKey: key}, provider: "ollama", id: "llama3.2",
			wantLog: []string{`"provider":"ollama"`, `"model":"llama3.2"`, `"base_url":"http://localhost:11434/v1"`, `"api_key":"none"`}},
		{name: "any OpenAI-compatible URL", cfg: provider.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", BaseURL: "http://user:pw@127.0.0.1:8000/v1"},
			provider: "openai-compatible", id: "meta-llama/Llama-3.1-8B-Instruct",
			wantLog: []string{`"provider":"openai-compatible"`, `"model":"meta-llama/Llama-3.1-8B-Instruct"`, `"base_url":"http://user:xxxxx@127.0.0.1:8000/v1"`, `"api_key":"none"`}},
		{name: "an OpenAI-compatible URL with the OpenAI key", cfg: provider.Config{Model: "m", BaseURL: "https://llm.example/v1", OpenAIAPIKey: key},
			provider: "openai-compatible", id: "m", wantLog: []string{`"api_key":"set from OPENAI_API_KEY"`}},
		{name: "a base URL needs a model", cfg: provider.Config{BaseURL: "http://127.0.0.1:8000/v1"}, wantErr: "a model base URL needs a model name"},
		{name: "unknown model", cfg: provider.Config{Model: "gpt-4o"}, wantErr: `model "gpt-4o" is not known`},
		{name: "a provider without a model", cfg: provider.Config{Model: "cohere/", CohereAPIKey: key}, wantErr: `model "cohere/" is not known`},
		{name: "bad base URL", cfg: provider.Config{Model: "ollama/x", BaseURL: "localhost:11434"}, wantErr: `model base URL "localhost:11434" must start with http:// or https://`},
		{name: "replay with a base URL", cfg: provider.Config{Model: "replay", ReplayDir: "cassettes", BaseURL: "http://127.0.0.1:8000"},
			wantErr: `the model "replay" takes no base URL: it answers from its cassettes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, logs, err := open(t, tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Provider() != tc.provider || m.ID() != tc.id {
				t.Errorf("model %s/%s, want %s/%s", m.Provider(), m.ID(), tc.provider, tc.id)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(logs, w) {
					t.Errorf("the log lacks %s:\n%s", w, logs)
				}
			}
			for _, w := range tc.unwantLog {
				if strings.Contains(logs, w) {
					t.Errorf("the log has %s:\n%s", w, logs)
				}
			}
		})
	}
}

// fakes are the real providers, each on its fake: configure names the
// model on the fake at url.
var fakes = []struct {
	name      string
	fake      func(upstream.Options) http.Handler
	configure func(cfg *provider.Config, url string)
}{
	{name: "cohere", fake: func(o upstream.Options) http.Handler { return fakecohere.New(o) },
		configure: func(cfg *provider.Config, url string) {
			cfg.Model, cfg.BaseURL, cfg.CohereAPIKey = "cohere/command-a-03-2025", url, key
		}},
	{name: "openai", fake: func(o upstream.Options) http.Handler { return fakeopenai.New(o) },
		configure: func(cfg *provider.Config, url string) {
			cfg.Model, cfg.BaseURL, cfg.OpenAIAPIKey = "openai/gpt-4o-mini", url+"/v1", key
		}},
}

func ask(text string) model.Request {
	return model.Request{System: modeltest.System, Messages: []model.Message{{Role: model.RoleUser, Content: text}},
		Tools: []model.ToolSpec{modeltest.WeatherTool()}}
}

// record asks text of the model that configure names on its fake, recording
// the exchange in dir, and returns the answer.
func record(t *testing.T, configure func(*provider.Config, string), fake http.Handler, dir, text string) modeltest.Result {
	t.Helper()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := provider.Config{RecordDir: dir}
	configure(&cfg, srv.URL)
	m, logs, err := open(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, `"msg":"recording model exchanges","record_dir":"`+dir+`"`) {
		t.Errorf("the log does not say it records:\n%s", logs)
	}
	r := modeltest.Collect(context.Background(), m, ask(text))
	if r.Err != nil {
		t.Fatalf("recording: %v", r.Err)
	}
	return r
}

// TestRecordThenReplay: a model that recorded to a directory is the model
// "replay" of that directory: the same provider and model, answering the
// same, without a network.
func TestRecordThenReplay(t *testing.T) {
	for _, p := range fakes {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			recorded := record(t, p.configure, p.fake(upstream.Options{}), dir, "What's the weather in Berlin?")
			m, logs, err := open(t, provider.Config{Model: "replay", ReplayDir: dir, ReplayFast: true})
			if err != nil {
				t.Fatal(err)
			}
			want := provider.Config{}
			p.configure(&want, "")
			if got := m.Provider() + "/" + m.ID(); want.Model != got {
				t.Errorf("replaying %s, recorded %s", got, want.Model)
			}
			for _, w := range []string{`"base_url":"replay"`, `"api_key":"none"`, `"replay_dir":"` + dir + `"`, `"cassettes":1`, `"replay_fast":true`} {
				if !strings.Contains(logs, w) {
					t.Errorf("the log lacks %s:\n%s", w, logs)
				}
			}
			replayed := modeltest.Collect(context.Background(), m, ask("What's the weather in Berlin?"))
			if replayed.Err != nil || len(replayed.Calls()) != 1 || !reflect.DeepEqual(replayed.Parts, recorded.Parts) {
				t.Errorf("replayed %+v (%v), recorded %+v", replayed.Parts, replayed.Err, recorded.Parts)
			}
		})
	}
}

// TestModelSettingsOfCassettes: the settings of recording and replaying
// that cannot work open no model, with a message that says what to do (the
// service stops with it).
func TestModelSettingsOfCassettes(t *testing.T) {
	empty := t.TempDir()
	two := t.TempDir()
	for _, p := range fakes {
		record(t, p.configure, p.fake(upstream.Options{}), two, "Hi")
	}
	for _, tc := range []struct {
		name      string
		configure func(*provider.Config)
		want      string
	}{
		{"replay without a directory", func(c *provider.Config) { c.Model = "replay" }, `model "replay" needs the directory of its cassettes`},
		{"a directory without replay", func(c *provider.Config) {
			c.Model, c.ReplayDir, c.CohereAPIKey = "cohere/command-a-03-2025", empty, "k"
		}, `a replay directory is read by the model "replay"`},
		{"recording the fake", func(c *provider.Config) { c.RecordDir = empty }, "a record directory records the exchanges of a real model provider"},
		{"recording a replay", func(c *provider.Config) { c.Model, c.ReplayDir, c.RecordDir = "replay", empty, empty }, "a record directory records"},
		{"no cassettes", func(c *provider.Config) { c.Model, c.ReplayDir = "replay", empty }, "holds no cassettes: record some with -record-dir"},
		{"no such directory", func(c *provider.Config) { c.Model, c.ReplayDir = "replay", filepath.Join(empty, "nope") }, "the replay directory"},
		{"several providers", func(c *provider.Config) { c.Model, c.ReplayDir = "replay", two }, "several providers (cohere/command-a-03-2025, openai/gpt-4o-mini): keep one model's cassettes per directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg provider.Config
			tc.configure(&cfg)
			m, _, err := open(t, cfg)
			if err == nil {
				t.Fatalf("opened %s/%s", m.Provider(), m.ID())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}
