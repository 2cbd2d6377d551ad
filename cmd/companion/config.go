package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/redact"
	"github.com/companionhq/companion/internal/telemetry"
)

// errUsage is a command line that could not be parsed, and errHelp a
// request for help; the flag package has already printed what to say.
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

func exitCode(err error) int {
	switch err {
	case errHelp:
		return 0
	case errUsage:
		return 2
	}
	return 1
}

// setting is one configuration entry: a flag and its environment variable.
type setting struct {
	flag, env, usage string
}

// help is the flag's usage line, naming its variable.
func (s setting) help() string { return s.usage + " ($" + s.env + ")" }

// fromEnv is the value of variable env parsed, or def when it is unset. A
// value that does not parse is reported in errs as not being want.
func fromEnv[T any](getenv func(string) string, env string, def T, parse func(string) (T, error), want string, errs *[]error) T {
	v := getenv(env)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("$%s: %q is not %s", env, v, want))
		return def
	}
	return x
}

// parseConfig reads flags over environment over defaults.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (app.Config, slog.Level, error) {
	fs := flag.NewFlagSet("companion serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg app.Config
	def := app.Defaults()
	var logLevel slog.Level
	var errs []error
	// Each setting's default is its environment variable when set, so that a
	// flag given on the command line still wins.
	str := func(p *string, s setting, def string) {
		fs.StringVar(p, s.flag, fromEnv(getenv, s.env, def, func(v string) (string, error) { return v, nil }, "", &errs), s.help())
	}
	num := func(p *int, s setting, def int) {
		fs.IntVar(p, s.flag, fromEnv(getenv, s.env, def, strconv.Atoi, "a whole number", &errs), s.help())
	}
	boolean := func(p *bool, s setting, def bool) {
		fs.BoolVar(p, s.flag, fromEnv(getenv, s.env, def, strconv.ParseBool, "true or false", &errs), s.help())
	}
	i64 := func(p *int64, s setting, def int64) {
		fs.Int64Var(p, s.flag, fromEnv(getenv, s.env, def, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }, "a whole number", &errs), s.help())
	}
	dur := func(p *time.Duration, s setting, def time.Duration) {
		fs.DurationVar(p, s.flag, fromEnv(getenv, s.env, def, time.ParseDuration, "a duration such as 10s or 1m30s", &errs), s.help())
	}

	str(&cfg.Server.Addr, setting{"addr", "COMPANION_ADDR", "listen address"}, def.Server.Addr)
	str(&cfg.Model.Model, setting{"model", "COMPANION_MODEL", `model to answer with: "fake", "cohere/<model>", "openai/<model>", "ollama/<model>", "replay" (answer from -replay-dir), or a model name with -model-base-url`}, "")
	str(&cfg.Model.BaseURL, setting{"model-base-url", "COMPANION_MODEL_BASE_URL", "the model provider's base URL; with a bare model name, any OpenAI-compatible server"}, "")
	str(&cfg.Model.RecordDir, setting{"record-dir", "COMPANION_RECORD_DIR", "record every exchange with the model provider to a cassette in this directory (keys scrubbed)"}, "")
	str(&cfg.Model.ReplayDir, setting{"replay-dir", "COMPANION_REPLAY_DIR", `directory of the cassettes the model "replay" answers from`}, "")
	boolean(&cfg.Model.ReplayFast, setting{"replay-fast", "COMPANION_REPLAY_FAST", "replay cassettes without their recorded delays"}, false)
	dur(&cfg.Model.Timeout, setting{"model-timeout", "COMPANION_MODEL_TIMEOUT", "longest a model call may take, retries and streaming included"}, def.Model.Timeout)
	dur(&cfg.Model.FirstTokenTimeout, setting{"model-first-token-timeout", "COMPANION_MODEL_FIRST_TOKEN_TIMEOUT", "longest wait for the first token of an answer"}, def.Model.FirstTokenTimeout)
	num(&cfg.Model.MaxRetries, setting{"model-max-retries", "COMPANION_MODEL_MAX_RETRIES", "retries of a model call that failed before its first token (429, 5xx, connection errors)"}, def.Model.MaxRetries)
	dur(&cfg.Model.RetryDelay, setting{"model-retry-delay", "COMPANION_MODEL_RETRY_DELAY", "wait before the first retry; doubles with each retry, jittered, up to 16 times this"}, def.Model.RetryDelay)
	dur(&cfg.Model.RetryBudget, setting{"model-retry-budget", "COMPANION_MODEL_RETRY_BUDGET", "no retry begins later than this after the call started"}, def.Model.RetryBudget)
	num(&cfg.Model.MaxSteps, setting{"max-steps", "COMPANION_MAX_STEPS", "most model calls in one run"}, def.Model.MaxSteps)
	num(&cfg.Model.MaxOutputTokens, setting{"max-output-tokens", "COMPANION_MAX_OUTPUT_TOKENS", "cap on tokens per model call, 0 for the model's own"}, 0)
	var maxBody int
	num(&maxBody, setting{"max-body-bytes", "COMPANION_MAX_BODY_BYTES", "largest request body accepted"}, int(def.Limits.MaxBodyBytes))
	dur(&cfg.Server.ShutdownGrace, setting{"shutdown-grace", "COMPANION_SHUTDOWN_GRACE", "how long in-flight runs may finish after SIGINT or SIGTERM"}, def.Server.ShutdownGrace)
	var level string
	str(&level, setting{"log-level", "COMPANION_LOG_LEVEL", "debug, info, warn or error"}, "info")
	str(&cfg.Tools.Weather.GeocodingURL, setting{"weather-geocoding-url", "COMPANION_WEATHER_GEOCODING_URL", "Open-Meteo geocoding API base URL"}, def.Tools.Weather.GeocodingURL)
	str(&cfg.Tools.Weather.ForecastURL, setting{"weather-forecast-url", "COMPANION_WEATHER_FORECAST_URL", "Open-Meteo forecast API base URL"}, def.Tools.Weather.ForecastURL)
	dur(&cfg.Tools.Weather.Timeout, setting{"weather-timeout", "COMPANION_WEATHER_TIMEOUT", "timeout of each Open-Meteo request"}, def.Tools.Weather.Timeout)
	dur(&cfg.Model.FakeFirstTokenDelay, setting{"fake-first-token-delay", "COMPANION_FAKE_FIRST_TOKEN_DELAY", "fake model: delay before its first token"}, 0)
	dur(&cfg.Model.FakeTokenDelay, setting{"fake-token-delay", "COMPANION_FAKE_TOKEN_DELAY", "fake model: delay before each later token"}, 0)
	boolean(&cfg.Telemetry.TraceContent, setting{"trace-content", "COMPANION_TRACE_CONTENT", "record message contents, tool arguments and results in spans (they may hold personal data)"}, false)
	// Span export follows the standard OpenTelemetry variables, read here
	// for the decision and by the exporter for the rest.
	otlp, err := telemetry.OTLPProtocol(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Telemetry.OTLPProtocol = otlp
	str(&cfg.Storage.DatabaseURL, setting{"database-url", "COMPANION_DATABASE_URL", "conversation store: sqlite://PATH or postgres://USER@HOST/DB"}, def.Storage.DatabaseURL)
	num(&cfg.Storage.HistoryWindow, setting{"history-window", "COMPANION_HISTORY_WINDOW", "how many stored messages of a thread each run sees"}, def.Storage.HistoryWindow)
	dur(&cfg.Storage.LockWait, setting{"lock-wait", "COMPANION_LOCK_WAIT", "how long a turn waits for the thread's previous turn before it is refused with 409"}, def.Storage.LockWait)
	num(&cfg.Storage.HistoryBytes, setting{"history-max-bytes", "COMPANION_HISTORY_MAX_BYTES", "most bytes of message content a run sees of its thread's history"}, def.Storage.HistoryBytes)
	i64((*int64)(&cfg.Limits.MaxThreadBytes), setting{"max-thread-bytes", "COMPANION_MAX_THREAD_BYTES", "most bytes one thread may store, 0 for no limit"}, int64(def.Limits.MaxThreadBytes))

	// Limits on one request.
	num(&cfg.Limits.MaxMessages, setting{"max-messages", "COMPANION_MAX_MESSAGES", "most messages in one run request"}, def.Limits.MaxMessages)
	num(&cfg.Limits.MaxMessageBytes, setting{"max-message-bytes", "COMPANION_MAX_MESSAGE_BYTES", "most bytes in one message's content"}, def.Limits.MaxMessageBytes)
	num(&cfg.Limits.MaxIDBytes, setting{"max-id-bytes", "COMPANION_MAX_ID_BYTES", "most bytes in a threadId, resourceId or message id"}, def.Limits.MaxIDBytes)
	num(&cfg.Limits.MaxStreams, setting{"max-streams", "COMPANION_MAX_STREAMS", "most streams open at once; beyond it 503 with Retry-After"}, def.Limits.MaxStreams)
	dur(&cfg.Limits.MaxRunDuration, setting{"max-run-duration", "COMPANION_MAX_RUN_DURATION", "longest a run may take; a stream then ends with an error event (RUN_TIMEOUT)"}, def.Limits.MaxRunDuration)
	dur(&cfg.Limits.BodyReadTimeout, setting{"body-read-timeout", "COMPANION_BODY_READ_TIMEOUT", "longest a client may take to send a request body"}, def.Limits.BodyReadTimeout)
	num(&cfg.Limits.MaxHeaderBytes, setting{"max-header-bytes", "COMPANION_MAX_HEADER_BYTES", "most bytes of request headers"}, def.Limits.MaxHeaderBytes)
	num(&cfg.Limits.RateLimit, setting{"rate-limit", "COMPANION_RATE_LIMIT", "requests per minute one resource, and one client address, may make; 0 for no limit"}, 0)
	i64(&cfg.Limits.Quota.Tokens, setting{"token-quota", "COMPANION_TOKEN_QUOTA", "tokens one resource may use per UTC day; 0 for no quota"}, 0)
	fs.Float64Var(&cfg.Limits.Quota.Cost, "cost-quota", fromEnv(getenv, "COMPANION_COST_QUOTA", 0.0, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number of US dollars", &errs),
		setting{"cost-quota", "COMPANION_COST_QUOTA", "US dollars one resource's runs may cost per UTC day; 0 for no quota"}.help())
	str(&cfg.Model.PricesFile, setting{"prices", "COMPANION_PRICES", "prices table (JSON: per model, US dollars per million input, output and cached input tokens) over the shipped one"}, "")
	var redisURL string
	str(&redisURL, setting{"redis-url", "COMPANION_REDIS_URL", "Redis shared by every instance for the rate limits, e.g. redis://127.0.0.1:6379/0"}, "")
	var cors, proxies string
	str(&cors, setting{"cors-origins", "COMPANION_CORS_ORIGINS", "browser origins allowed to call the API, comma-separated (none by default)"}, "")
	str(&proxies, setting{"trusted-proxies", "COMPANION_TRUSTED_PROXIES", "networks of proxies whose X-Forwarded-For names the client, comma-separated CIDRs"}, "")

	// Authentication: off unless one of these is set.
	str(&cfg.Auth.APIKeysFile, setting{"api-keys-file", "COMPANION_API_KEYS_FILE", `file of API keys, one "KEY RESOURCE[,RESOURCE...]" (or "KEY *") a line; re-read on SIGHUP`}, "")
	str(&cfg.Auth.JWKSURL, setting{"jwt-jwks-url", "COMPANION_JWT_JWKS_URL", "JWKS URL of the identity provider whose bearer tokens are accepted"}, "")
	str(&cfg.Auth.Issuer, setting{"jwt-issuer", "COMPANION_JWT_ISSUER", "required iss of bearer tokens"}, "")
	str(&cfg.Auth.Audience, setting{"jwt-audience", "COMPANION_JWT_AUDIENCE", "required aud of bearer tokens"}, "")
	str(&cfg.Auth.ResourceClaim, setting{"jwt-resource-claim", "COMPANION_JWT_RESOURCE_CLAIM", "claim of a bearer token that names its resources"}, "sub")
	str(&cfg.Auth.JWTSecretFile, setting{"jwt-secret-file", "COMPANION_JWT_SECRET_FILE", "file holding an HS256 secret for bearer tokens (development)"}, "")
	str(&cfg.Server.MetricsAddr, setting{"metrics-addr", "COMPANION_METRICS_ADDR", "serve /metrics on this address alone, not on the API's"}, "")
	str(&cfg.Server.StreamFormat, setting{"stream-format", "COMPANION_STREAM_FORMAT", "stream dialect of requests that name none (X-Stream-Format): seed, mastra or ai-sdk"}, "seed")
	dur(&cfg.Server.StreamRetention, setting{"stream-retention", "COMPANION_STREAM_RETENTION", "how long a streamed run's events stay to be resumed after it ended"}, def.Server.StreamRetention)
	num(&cfg.Server.StreamRetainedBytes, setting{"stream-retained-bytes", "COMPANION_STREAM_RETAINED_BYTES", "most bytes of ended runs' events this instance keeps to be resumed, all runs together; the oldest go first"}, def.Server.StreamRetainedBytes)
	dur(&cfg.Server.ResumeGrace, setting{"resume-grace", "COMPANION_RESUME_GRACE", "how long a run goes on after its stream broke, waiting to be resumed (0: cancel it at once)"}, def.Server.ResumeGrace)
	boolean(&cfg.Server.WebUI, setting{"web-ui", "COMPANION_WEB_UI", "serve the web chat page at /"}, def.Server.WebUI)
	dur(&cfg.Server.ShutdownDelay, setting{"shutdown-delay", "COMPANION_SHUTDOWN_DELAY", "how long /ready answers 503 after SIGTERM before the listener closes"}, 0)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, logLevel, errHelp
		}
		return cfg, logLevel, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "companion serve: unexpected argument %q\n", fs.Arg(0))
		return cfg, logLevel, errUsage
	}
	cfg.Limits.MaxBodyBytes = int64(maxBody)
	cfg.Storage.RedisURL = redact.Secret(redisURL)
	cfg.Server.CORSOrigins = splitList(cors)
	for _, p := range splitList(proxies) {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			if addr, aerr := netip.ParseAddr(p); aerr == nil {
				prefix, err = addr.Prefix(addr.BitLen())
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("trusted proxy %q is not a CIDR such as 10.0.0.0/8 or an address", p))
			continue
		}
		cfg.Server.TrustedProxies = append(cfg.Server.TrustedProxies, prefix)
	}
	for _, o := range cfg.Server.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			errs = append(errs, err)
		}
	}
	// Keys come from the providers' usual variables, never from flags: a
	// flag would show in the process list.
	cfg.Model.CohereAPIKey = redact.Secret(getenv("CO_API_KEY"))
	cfg.Model.OpenAIAPIKey = redact.Secret(getenv("OPENAI_API_KEY"))
	if err := logLevel.UnmarshalText([]byte(level)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q is not one of debug, info, warn, error", level))
	}
	// Every broken setting is reported, not only the first.
	for _, c := range []struct {
		bad bool
		msg string
	}{
		{cfg.Model.MaxSteps < 1, "max steps must be at least 1"},
		{cfg.Model.MaxOutputTokens < 0, "max output tokens must not be negative"},
		{cfg.Limits.MaxBodyBytes < 1024, "max body bytes must be at least 1024"},
		{cfg.Server.ShutdownGrace < 0 || cfg.Tools.Weather.Timeout <= 0, "shutdown grace must not be negative and the weather timeout must be positive"},
		{cfg.Model.Timeout <= 0 || cfg.Model.FirstTokenTimeout <= 0 || cfg.Model.RetryDelay <= 0 || cfg.Model.RetryBudget < 0, "the model timeouts and retry delay must be positive, the retry budget not negative"},
		{cfg.Model.MaxRetries < 0 || cfg.Model.MaxRetries > 10, "model max retries must be from 0 to 10"},
		{cfg.Storage.HistoryWindow < 0, "history window must not be negative"},
		{cfg.Storage.LockWait < 0, "lock wait must not be negative"},
		{cfg.Storage.HistoryBytes < 1, "history max bytes must be at least 1"},
		{cfg.Limits.MaxThreadBytes < 0, "max thread bytes must not be negative"},
		{cfg.Limits.MaxMessages < 1 || cfg.Limits.MaxMessageBytes < 1 || cfg.Limits.MaxIDBytes < 1 || cfg.Limits.MaxStreams < 1,
			"max messages, max message bytes, max id bytes and max streams must be at least 1"},
		{cfg.Limits.MaxRunDuration <= 0 || cfg.Limits.BodyReadTimeout <= 0, "max run duration and body read timeout must be positive"},
		{cfg.Limits.MaxHeaderBytes < 4096, "max header bytes must be at least 4096"},
		{cfg.Limits.RateLimit < 0 || cfg.Limits.Quota.Tokens < 0 || !(cfg.Limits.Quota.Cost >= 0), "rate limit, token quota and cost quota must not be negative"},
		{cfg.Server.ShutdownDelay < 0, "shutdown delay must not be negative"},
		{cfg.Server.StreamRetention <= 0 || cfg.Server.ResumeGrace < 0, "stream retention must be positive and resume grace not negative"},
		{cfg.Server.StreamRetainedBytes < 1, "stream retained bytes must be at least 1"},
		{cfg.Server.StreamFormat != "seed" && cfg.Server.StreamFormat != "mastra" && cfg.Server.StreamFormat != "ai-sdk", "stream format must be seed, mastra or ai-sdk"},
		{strings.TrimSpace(cfg.Auth.ResourceClaim) == "", "the JWT resource claim must not be empty"},
	} {
		if c.bad {
			errs = append(errs, errors.New(c.msg))
		}
	}
	if u := cfg.Storage.DatabaseURL; !strings.HasPrefix(u, "sqlite://") && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		errs = append(errs, errors.New("database URL must start with sqlite:// or postgres://"))
	} else if u == "sqlite://" {
		errs = append(errs, errors.New("database URL sqlite:// names no file: use e.g. sqlite://data/companion.db"))
	}
	for _, u := range []string{cfg.Tools.Weather.GeocodingURL, cfg.Tools.Weather.ForecastURL} {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("weather URL %q must start with http:// or https://", u))
		}
	}
	if u := redisURL; u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		errs = append(errs, errors.New("redis URL must start with redis:// or rediss://"))
	}
	if cfg.Auth.JWKSURL != "" && !strings.HasPrefix(cfg.Auth.JWKSURL, "https://") && !strings.HasPrefix(cfg.Auth.JWKSURL, "http://") {
		errs = append(errs, fmt.Errorf("JWKS URL %q must start with https:// or http://", cfg.Auth.JWKSURL))
	}
	return cfg, logLevel, errors.Join(errs...)
}

// splitList splits a comma-separated setting, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// checkOrigin accepts a browser origin: scheme and host, no path. A
// wildcard is refused: the allowed origins are listed one by one.
func checkOrigin(o string) error {
	if o == "*" {
		return errors.New(`CORS origin "*" is not accepted: list each origin, such as https://chat.example.com`)
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("CORS origin %q must be a scheme and host, such as https://chat.example.com", o)
	}
	return nil
}
