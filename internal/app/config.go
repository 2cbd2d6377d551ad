package app

import (
	"net/netip"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/auth"
	"github.com/companionhq/companion/internal/embed"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/provider"
	"github.com/companionhq/companion/internal/redact"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/telemetry"
	"github.com/companionhq/companion/internal/tool/weather"
	"github.com/companionhq/companion/internal/turn"
)

// Config is everything the service needs to know, by section. Defaults()
// fills the documented defaults.
type Config struct {
	Server ServerConfig
	// Auth takes API keys (a file of "KEY RESOURCE[,RESOURCE...]" lines)
	// and JWT bearer tokens (a JWKS URL, or an HS256 secret file for
	// development). With none set, authentication is off. Its Logger is
	// the service's.
	Auth      auth.Config
	Limits    LimitsConfig
	Storage   StorageConfig
	Memory    MemoryConfig
	Safety    SafetyConfig
	Model     ModelConfig
	Tools     ToolsConfig
	Telemetry TelemetryConfig
}

// ServerConfig is how the service listens, serves its streams and shuts
// down.
type ServerConfig struct {
	Addr          string
	ShutdownGrace time.Duration
	// ShutdownDelay is how long /ready answers 503 at the start of a
	// shutdown while the listener still serves, so that a load balancer
	// stops sending requests before it closes.
	ShutdownDelay time.Duration
	// MetricsAddr, when set, serves /metrics on a listener of its own and
	// not on the API's (cmd/companion opens it).
	MetricsAddr string
	// WebUI serves the web chat page at / and /assets/ beside the API.
	WebUI bool
	// CORSOrigins are the browser origins allowed to call the API; none by
	// default.
	CORSOrigins []string
	// TrustedProxies are the networks of the proxies in front of the
	// service: from them, X-Forwarded-For names the client address.
	TrustedProxies []netip.Prefix
	// StreamFormat is the stream dialect of requests that name none:
	// "seed" (or ""), "mastra" or "ai-sdk".
	StreamFormat string
	// StreamRetention is how long a streamed run's events stay to be
	// resumed after it ended; ResumeGrace how long a run goes on after its
	// last stream broke (0: cancel it at once).
	StreamRetention time.Duration
	ResumeGrace     time.Duration
	// StreamRetainedBytes bounds the events of ended runs this instance
	// keeps for resuming, all runs together: past it, the runs that ended
	// first are forgotten before their retention is over.
	StreamRetainedBytes int
}

// LimitsConfig is what callers may ask and use: the limits on one request
// (body, messages, ids, streams, run duration, body read time, headers),
// and those on a resource and a thread.
type LimitsConfig struct {
	httpapi.Limits
	// RateLimit is the requests per minute one resource, and one client
	// address, may make (0: no limit).
	RateLimit int
	// Quota is the tokens and the cost in US dollars one resource may use
	// per UTC day (0: none).
	Quota limits.Quota
	// MaxThreadBytes is what one thread may store (0: no limit).
	MaxThreadBytes limits.ThreadBytes
}

// StorageConfig is where threads are kept and what a run sees of them.
type StorageConfig struct {
	// DatabaseURL chooses the conversation store: sqlite://PATH (a file,
	// created with its directory) or postgres://... (postgresql:// too).
	DatabaseURL string
	// RedisURL, when set, shares the rate limits and the streamed runs of
	// every instance through Redis.
	RedisURL redact.Secret
	// HistoryWindow is how many stored messages of a thread each run sees.
	HistoryWindow int
	// LockWait is how long a turn waits for the thread's previous turn
	// before it is refused with 409.
	LockWait time.Duration
	// HistoryBytes bounds the message content a run sees of its thread.
	HistoryBytes int
}

// SafetyConfig is how the service guards its users (docs/safety.md).
type SafetyConfig struct {
	// Crisis turns the crisis protocol on (the default); ReferralsFile,
	// when set, replaces the referral texts (safety.LoadReferrals).
	Crisis        bool
	ReferralsFile string
	// CrisisReply is what answers a crisis: "referral" (the default: the
	// referral's texts alone, the run tripped) or "model" (the referral,
	// then the model, told to answer with care).
	CrisisReply string
	// Disclosure and BreakReminder are the notices' texts ("" turns one
	// off), told every DisclosureInterval and BreakReminderInterval of
	// continuing interaction (turn.SafetyConfig).
	Disclosure            string
	DisclosureInterval    time.Duration
	BreakReminder         string
	BreakReminderInterval time.Duration
	// RedactPII redacts e-mail addresses, phone numbers and card numbers
	// from the user's messages before they are stored or logged.
	RedactPII bool
	// ModerationURL or ModerationModel, when set, check each user message
	// through an OpenAI-compatible /v1/moderations (model ModerationModel)
	// at ModerationURL, else the model provider's address, else OpenAI's;
	// with ModerationGuard, the model there is a guard model asked through
	// /v1/chat/completions instead.
	ModerationURL   string
	ModerationModel string
	ModerationGuard bool
	ModerationKey   redact.Secret
}

// MemoryConfig is what the companion keeps of its user across threads
// and shows the model: working memory, recall, and the threads' titles.
type MemoryConfig struct {
	WorkingMemory turn.WorkingMemoryConfig
	// WorkingMemoryTemplateFile, when set, replaces the default template:
	// a Markdown block, or a JSON Schema (a .json file).
	WorkingMemoryTemplateFile string
	Recall                    turn.RecallConfig
	// Titles names a thread after its first exchange.
	Titles bool
	// Embed, when its Provider is set, adds vector ranking to recall and
	// search: messages are embedded off the reply's path by a background
	// indexer (internal/embedindex). Its APIKey is left empty here:
	// EmbedAPIKey holds it, redacted wherever the configuration is shown.
	Embed       embed.Config
	EmbedAPIKey redact.Secret
	// EmbedMinSimilarity and EmbedWeight are turn.Config's.
	EmbedMinSimilarity, EmbedWeight float64
}

// ModelConfig is the model (see provider.Config) and what one run may ask
// of it.
type ModelConfig struct {
	provider.Config
	// MaxSteps is the most model calls in one run.
	MaxSteps int
	// MaxOutputTokens caps the tokens of each model call (0: the model's
	// own).
	MaxOutputTokens int
	// PricesFile is a prices table (JSON) over the shipped one; "" uses
	// the shipped one.
	PricesFile string
}

// ToolsConfig configures the agent's tools.
type ToolsConfig struct {
	Weather weather.Config
	// MCPServers is an mcpServers file (JSON, as Claude Desktop, Cursor and
	// Mastra write it) whose servers' tools the agent offers too; "" is
	// none.
	MCPServers string
}

// TelemetryConfig is what the service's spans say and where they go.
type TelemetryConfig struct {
	// TracingConfig's OTLPProtocol exports spans over OTLP, "grpc" or
	// "http/protobuf"; "" exports none. cmd/companion sets it from the
	// standard OTEL_EXPORTER_OTLP_* variables, which the exporter then
	// reads itself. Its Exporter, when set, receives every span as it
	// ends; tests give an in-memory one.
	telemetry.TracingConfig
	// TraceContent records message contents, tool arguments and results in
	// spans. Off by default: they may hold personal data.
	TraceContent bool
}

// Defaults returns the configuration the service runs with when nothing is
// set.
func Defaults() Config {
	p := model.DefaultPolicy()
	return Config{
		Server: ServerConfig{
			Addr:                "127.0.0.1:4111",
			ShutdownGrace:       10 * time.Second,
			WebUI:               true,
			StreamFormat:        "seed",
			StreamRetention:     httpapi.DefaultStreamRetention,
			ResumeGrace:         httpapi.DefaultResumeGrace,
			StreamRetainedBytes: runlog.DefaultMaxRetained,
		},
		Auth: auth.Config{ResourceClaim: "sub"},
		Limits: LimitsConfig{
			Limits:         httpapi.DefaultLimits(),
			MaxThreadBytes: turn.DefaultMaxThreadBytes,
		},
		Storage: StorageConfig{
			DatabaseURL:   DefaultDatabaseURL,
			HistoryWindow: turn.DefaultWindow,
			LockWait:      turn.DefaultLockWait,
			HistoryBytes:  turn.DefaultHistoryBytes,
		},
		Memory: MemoryConfig{
			WorkingMemory: turn.WorkingMemoryConfig{Scope: memory.ScopeResource, MaxBytes: turn.DefaultWorkingMemoryMaxBytes},
			Recall: turn.RecallConfig{Scope: memory.ScopeResource, TopK: turn.DefaultRecallTopK,
				MessageRange: turn.DefaultRecallMessageRange, MaxBytes: turn.DefaultRecallBytes},
			Titles:             true,
			EmbedMinSimilarity: turn.DefaultEmbedMinSimilarity,
			EmbedWeight:        turn.DefaultEmbedWeight,
		},
		Safety: SafetyConfig{
			Crisis: true, CrisisReply: "referral",
			Disclosure: turn.DefaultDisclosure, DisclosureInterval: turn.DefaultDisclosureInterval,
			BreakReminder: turn.DefaultBreakReminder, BreakReminderInterval: turn.DefaultBreakReminderInterval,
		},
		Model: ModelConfig{
			Config: provider.Config{
				Timeout:           p.CallTimeout,
				FirstTokenTimeout: p.FirstTokenTimeout,
				MaxRetries:        p.MaxAttempts - 1,
				RetryDelay:        p.BaseDelay,
				RetryBudget:       p.RetryBudget,
			},
			MaxSteps: agent.DefaultMaxSteps,
		},
		Tools: ToolsConfig{Weather: weather.Config{
			GeocodingURL: weather.DefaultGeocodingURL,
			ForecastURL:  weather.DefaultForecastURL,
			Timeout:      weather.DefaultTimeout,
		}},
	}
}

// DefaultDatabaseURL is a SQLite file under ./data/, relative to the
// working directory.
const DefaultDatabaseURL = "sqlite://data/companion.db"
