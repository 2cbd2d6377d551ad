// Package provider opens the model a configuration names: the deterministic
// fake, a real provider (Cohere, OpenAI, Ollama, any OpenAI-compatible
// server), or a provider replayed from its cassettes, each real one under
// the resilience policy and, when asked, recording its exchanges.
package provider

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/cohere"
	"github.com/companionhq/companion/internal/model/fake"
	"github.com/companionhq/companion/internal/model/openai"
	"github.com/companionhq/companion/internal/model/replay"
	"github.com/companionhq/companion/internal/redact"
)

// Config is the model section of the service's configuration.
type Config struct {
	// Model names the model: "fake" (or "", the default),
	// "cohere/<model>", "openai/<model>", "ollama/<model>", any model name
	// with BaseURL for an OpenAI-compatible server, or "replay".
	Model string
	// BaseURL replaces the provider's address; with a model name that
	// names no provider it selects an OpenAI-compatible server.
	BaseURL string
	// CohereAPIKey and OpenAIAPIKey are the providers' keys (CO_API_KEY,
	// OPENAI_API_KEY).
	CohereAPIKey redact.Secret
	OpenAIAPIKey redact.Secret
	// The resilience policy of real providers (see model.Policy):
	// MaxRetries is the attempts after the first, and the longest wait
	// between two is 16 RetryDelay.
	Timeout           time.Duration
	FirstTokenTimeout time.Duration
	MaxRetries        int
	RetryDelay        time.Duration
	RetryBudget       time.Duration
	// FakeFirstTokenDelay and FakeTokenDelay pace the fake model.
	FakeFirstTokenDelay time.Duration
	FakeTokenDelay      time.Duration
	// RecordDir, when set, records every exchange with the model provider
	// to a cassette in this directory (see package replay).
	RecordDir string
	// ReplayDir holds the cassettes the model "replay" answers from;
	// ReplayFast replays them without their recorded delays.
	ReplayDir  string
	ReplayFast bool
}

// replayModel is the model setting that answers from cassettes.
const replayModel = "replay"

// Open builds the model cfg names, and logs which it is. Real providers,
// replayed ones included, run under cfg's resilience policy; with RecordDir
// their exchanges are recorded. A configuration that cannot work is an
// error that says which setting to change.
func Open(cfg Config, log *slog.Logger) (model.Model, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spec := strings.TrimSpace(cfg.Model)
	prefix, name, _ := strings.Cut(spec, "/")
	base := strings.TrimSpace(cfg.BaseURL)
	if base != "" && !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("model base URL %q must start with http:// or https://", base)
	}
	switch {
	case spec == replayModel && cfg.ReplayDir == "":
		return nil, errors.New(`model "replay" needs the directory of its cassettes: set COMPANION_REPLAY_DIR (-replay-dir)`)
	case spec != replayModel && cfg.ReplayDir != "":
		return nil, errors.New(`a replay directory is read by the model "replay": set COMPANION_MODEL=replay (-model replay), or unset COMPANION_REPLAY_DIR (-replay-dir)`)
	case cfg.RecordDir != "" && (spec == "" || spec == "fake" || spec == replayModel):
		return nil, errors.New("a record directory records the exchanges of a real model provider: name one with COMPANION_MODEL (-model), or unset COMPANION_RECORD_DIR (-record-dir)")
	}
	var (
		m        model.Model
		err      error
		keyVar   string
		client   = &http.Client{Transport: transport()}
		replayer *replay.Replayer
	)
	switch {
	case spec == "" && base == "", spec == "fake":
		if base != "" {
			return nil, errors.New(`the fake model takes no base URL: unset the model base URL, or name a model`)
		}
		if spec == "" {
			log.Info("no model configured: answering with the deterministic fake model (set COMPANION_MODEL to use a real one)")
		}
		return fake.New(fake.Options{FirstTokenDelay: cfg.FakeFirstTokenDelay, TokenDelay: cfg.FakeTokenDelay}), nil
	case spec == "":
		return nil, errors.New("a model base URL needs a model name: set COMPANION_MODEL (-model) too, e.g. llama3.2")
	case spec == replayModel:
		if base != "" {
			return nil, errors.New(`the model "replay" takes no base URL: it answers from its cassettes`)
		}
		m, replayer, err = replayed(cfg)
		base = "replay"
	case prefix == "cohere" && name != "":
		if cfg.CohereAPIKey == "" {
			return nil, fmt.Errorf("model %q needs a Cohere API key: set CO_API_KEY", spec)
		}
		if base == "" {
			base = cohere.DefaultBaseURL
		}
		keyVar = "CO_API_KEY"
		m, err = cohere.New(cohere.Config{Model: name, APIKey: string(cfg.CohereAPIKey), BaseURL: base, HTTPClient: client})
	case prefix == "openai" && name != "":
		if cfg.OpenAIAPIKey == "" {
			return nil, fmt.Errorf("model %q needs an OpenAI API key: set OPENAI_API_KEY", spec)
		}
		if base == "" {
			base = openai.DefaultBaseURL
		}
		keyVar = "OPENAI_API_KEY"
		m, err = openai.New(openai.Config{Provider: openai.ProviderOpenAI, Model: name, APIKey: string(cfg.OpenAIAPIKey), BaseURL: base, HTTPClient: client})
	case prefix == "ollama" && name != "":
		if base == "" {
			base = openai.OllamaBaseURL
		}
		// Ollama wants no key; its OpenAI-compatible API expects one set to
		// anything, and never the user's OpenAI key.
		m, err = openai.New(openai.Config{Provider: openai.ProviderOllama, Model: name, APIKey: "ollama", BaseURL: base, HTTPClient: client})
	case base != "":
		if cfg.OpenAIAPIKey != "" {
			keyVar = "OPENAI_API_KEY"
		}
		m, err = openai.New(openai.Config{Provider: openai.ProviderCompatible, Model: spec, APIKey: string(cfg.OpenAIAPIKey), BaseURL: base, HTTPClient: client})
	default:
		return nil, fmt.Errorf(`model %q is not known: use "fake", "cohere/<model>", "openai/<model>", "ollama/<model>", "replay", or a model name with a model base URL (-model-base-url) for any OpenAI-compatible server`, spec)
	}
	if err != nil {
		return nil, err
	}
	if cfg.RecordDir != "" {
		// The client is the provider's own: every exchange goes through
		// the recorder from the first on.
		rec, err := replay.NewRecorder(cfg.RecordDir, replay.Source{Provider: m.Provider(), Model: m.ID(), BaseURL: base},
			client.Transport, string(cfg.CohereAPIKey), string(cfg.OpenAIAPIKey))
		if err != nil {
			return nil, err
		}
		rec.OnError = func(err error) { log.Error("a model exchange was not recorded", slog.String("error", err.Error())) }
		client.Transport = rec
		log.Info("recording model exchanges", slog.String("record_dir", cfg.RecordDir))
	}
	p := model.Policy{
		MaxAttempts: cfg.MaxRetries + 1, RetryBudget: cfg.RetryBudget,
		BaseDelay: cfg.RetryDelay, MaxDelay: 16 * cfg.RetryDelay,
		CallTimeout: cfg.Timeout, FirstTokenTimeout: cfg.FirstTokenTimeout,
		OnRetry: func(r model.Retry) {
			log.Warn("model call failed, retrying", slog.String("provider", r.Provider), slog.Int("attempt", r.Attempt),
				slog.String("wait", r.Wait.String()), slog.String("error", r.Err.Error()))
		},
	}
	key := "none"
	if keyVar != "" {
		key = "set from " + keyVar
	}
	attrs := []any{slog.String("provider", m.Provider()), slog.String("model", m.ID()), slog.String("base_url", redact.URL(base)),
		slog.String("api_key", key), slog.String("timeout", p.CallTimeout.String()), slog.String("first_token_timeout", p.FirstTokenTimeout.String()),
		slog.Int("max_retries", cfg.MaxRetries), slog.String("retry_delay", p.BaseDelay.String()), slog.String("retry_budget", p.RetryBudget.String())}
	if replayer != nil {
		attrs = append(attrs, slog.String("replay_dir", cfg.ReplayDir), slog.Int("cassettes", replayer.Cassettes()), slog.Bool("replay_fast", cfg.ReplayFast))
	}
	log.Info("model", attrs...)
	return model.Resilient(m, p), nil
}

// transport is the HTTP transport of the model providers: every run calls
// the same host, and Go's default keeps only two idle connections per host,
// so at 16 concurrent runs most calls would open (and close) a connection
// of their own.
func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	return t
}

// replayed is the provider and model recorded in cfg.ReplayDir, their
// requests answered by its cassettes, without a network.
func replayed(cfg Config) (model.Model, *replay.Replayer, error) {
	r, err := replay.Open(cfg.ReplayDir, replay.Options{Fast: cfg.ReplayFast})
	if errors.Is(err, replay.ErrSeveralProviders) {
		return nil, nil, fmt.Errorf("model \"replay\": %w: keep one model's cassettes per directory", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("model \"replay\": %w", err)
	}
	var models []string
	seen := map[string]bool{}
	for _, s := range r.Sources() {
		if !seen[s.String()] {
			seen[s.String()] = true
			models = append(models, s.String())
		}
	}
	switch {
	case len(models) == 0:
		return nil, nil, fmt.Errorf("model \"replay\": %s holds no cassettes: record some with -record-dir", cfg.ReplayDir)
	case len(models) > 1:
		return nil, nil, fmt.Errorf("model \"replay\": %s holds cassettes of several models (%s): keep one model's cassettes per directory", cfg.ReplayDir, strings.Join(models, ", "))
	}
	src := r.Sources()[0]
	client := &http.Client{Transport: r}
	var m model.Model
	switch src.Provider {
	case cohere.Provider:
		m, err = cohere.New(cohere.Config{Model: src.Model, APIKey: "replay", BaseURL: orDefault(src.BaseURL, cohere.DefaultBaseURL), HTTPClient: client})
	case openai.ProviderOpenAI, openai.ProviderOllama, openai.ProviderCompatible:
		m, err = openai.New(openai.Config{Provider: src.Provider, Model: src.Model, APIKey: "replay", BaseURL: orDefault(src.BaseURL, openai.DefaultBaseURL), HTTPClient: client})
	default:
		err = fmt.Errorf("model \"replay\": the cassettes were recorded from provider %q, which this service does not know", src.Provider)
	}
	return m, r, err
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
