package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/app"
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

// parseConfig reads flags over environment over defaults.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (app.Config, slog.Level, error) {
	fs := flag.NewFlagSet("companion serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg app.Config
	def := app.Defaults()
	var logLevel slog.Level
	var errs []error
	str := func(p *string, s setting, def string) {
		if v := getenv(s.env); v != "" {
			def = v
		}
		fs.StringVar(p, s.flag, def, s.usage+" ($"+s.env+")")
	}
	num := func(p *int, s setting, def int) {
		if v := getenv(s.env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("$%s: %q is not a whole number", s.env, v))
			}
			def = n
		}
		fs.IntVar(p, s.flag, def, s.usage+" ($"+s.env+")")
	}
	boolean := func(p *bool, s setting, def bool) {
		if v := getenv(s.env); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("$%s: %q is not true or false", s.env, v))
			}
			def = b
		}
		fs.BoolVar(p, s.flag, def, s.usage+" ($"+s.env+")")
	}
	dur := func(p *time.Duration, s setting, def time.Duration) {
		if v := getenv(s.env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("$%s: %q is not a duration such as 10s or 1m30s", s.env, v))
			}
			def = d
		}
		fs.DurationVar(p, s.flag, def, s.usage+" ($"+s.env+")")
	}

	str(&cfg.Addr, setting{"addr", "COMPANION_ADDR", "listen address"}, def.Addr)
	str(&cfg.Model, setting{"model", "COMPANION_MODEL", `model to answer with: "fake", "cohere/<model>", "openai/<model>", "ollama/<model>", or a model name with -model-base-url`}, "")
	str(&cfg.ModelBaseURL, setting{"model-base-url", "COMPANION_MODEL_BASE_URL", "the model provider's base URL; with a bare model name, any OpenAI-compatible server"}, "")
	dur(&cfg.ModelTimeout, setting{"model-timeout", "COMPANION_MODEL_TIMEOUT", "longest a model call may take, retries and streaming included"}, def.ModelTimeout)
	dur(&cfg.ModelFirstTokenTimeout, setting{"model-first-token-timeout", "COMPANION_MODEL_FIRST_TOKEN_TIMEOUT", "longest wait for the first token of an answer"}, def.ModelFirstTokenTimeout)
	num(&cfg.ModelMaxRetries, setting{"model-max-retries", "COMPANION_MODEL_MAX_RETRIES", "retries of a model call that failed before its first token (429, 5xx, connection errors)"}, def.ModelMaxRetries)
	dur(&cfg.ModelRetryDelay, setting{"model-retry-delay", "COMPANION_MODEL_RETRY_DELAY", "wait before the first retry; doubles with each retry, jittered, up to 16 times this"}, def.ModelRetryDelay)
	dur(&cfg.ModelRetryBudget, setting{"model-retry-budget", "COMPANION_MODEL_RETRY_BUDGET", "no retry begins later than this after the call started"}, def.ModelRetryBudget)
	num(&cfg.MaxSteps, setting{"max-steps", "COMPANION_MAX_STEPS", "most model calls in one run"}, def.MaxSteps)
	num(&cfg.MaxOutputTokens, setting{"max-output-tokens", "COMPANION_MAX_OUTPUT_TOKENS", "cap on tokens per model call, 0 for the model's own"}, 0)
	var maxBody int
	num(&maxBody, setting{"max-body-bytes", "COMPANION_MAX_BODY_BYTES", "largest request body accepted"}, int(def.MaxBodyBytes))
	dur(&cfg.ShutdownGrace, setting{"shutdown-grace", "COMPANION_SHUTDOWN_GRACE", "how long in-flight runs may finish after SIGINT or SIGTERM"}, def.ShutdownGrace)
	var level string
	str(&level, setting{"log-level", "COMPANION_LOG_LEVEL", "debug, info, warn or error"}, "info")
	str(&cfg.WeatherGeocodingURL, setting{"weather-geocoding-url", "COMPANION_WEATHER_GEOCODING_URL", "Open-Meteo geocoding API base URL"}, def.WeatherGeocodingURL)
	str(&cfg.WeatherForecastURL, setting{"weather-forecast-url", "COMPANION_WEATHER_FORECAST_URL", "Open-Meteo forecast API base URL"}, def.WeatherForecastURL)
	dur(&cfg.WeatherTimeout, setting{"weather-timeout", "COMPANION_WEATHER_TIMEOUT", "timeout of each Open-Meteo request"}, def.WeatherTimeout)
	dur(&cfg.FakeFirstTokenDelay, setting{"fake-first-token-delay", "COMPANION_FAKE_FIRST_TOKEN_DELAY", "fake model: delay before its first token"}, 0)
	dur(&cfg.FakeTokenDelay, setting{"fake-token-delay", "COMPANION_FAKE_TOKEN_DELAY", "fake model: delay before each later token"}, 0)
	boolean(&cfg.TraceContent, setting{"trace-content", "COMPANION_TRACE_CONTENT", "record message contents, tool arguments and results in spans (they may hold personal data)"}, false)
	// Span export follows the standard OpenTelemetry variables, read here
	// for the decision and by the exporter for the rest.
	otlp, err := telemetry.OTLPProtocol(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.OTLPProtocol = otlp
	str(&cfg.DatabaseURL, setting{"database-url", "COMPANION_DATABASE_URL", "conversation store: sqlite://PATH or postgres://USER@HOST/DB"}, def.DatabaseURL)
	num(&cfg.HistoryWindow, setting{"history-window", "COMPANION_HISTORY_WINDOW", "how many stored messages of a thread each run sees"}, def.HistoryWindow)
	dur(&cfg.LockWait, setting{"lock-wait", "COMPANION_LOCK_WAIT", "how long a turn waits for the thread's previous turn before it is refused with 409"}, def.LockWait)

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
	cfg.MaxBodyBytes = int64(maxBody)
	// Keys come from the providers' usual variables, never from flags: a
	// flag would show in the process list.
	cfg.CohereAPIKey = app.Secret(getenv("CO_API_KEY"))
	cfg.OpenAIAPIKey = app.Secret(getenv("OPENAI_API_KEY"))
	if err := logLevel.UnmarshalText([]byte(level)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q is not one of debug, info, warn, error", level))
	}
	switch {
	case cfg.MaxSteps < 1:
		errs = append(errs, errors.New("max steps must be at least 1"))
	case cfg.MaxOutputTokens < 0:
		errs = append(errs, errors.New("max output tokens must not be negative"))
	case cfg.MaxBodyBytes < 1024:
		errs = append(errs, errors.New("max body bytes must be at least 1024"))
	case cfg.ShutdownGrace < 0 || cfg.WeatherTimeout <= 0:
		errs = append(errs, errors.New("shutdown grace must not be negative and the weather timeout must be positive"))
	case cfg.ModelTimeout <= 0 || cfg.ModelFirstTokenTimeout <= 0 || cfg.ModelRetryDelay <= 0 || cfg.ModelRetryBudget < 0:
		errs = append(errs, errors.New("the model timeouts and retry delay must be positive, the retry budget not negative"))
	case cfg.ModelMaxRetries < 0 || cfg.ModelMaxRetries > 10:
		errs = append(errs, errors.New("model max retries must be from 0 to 10"))
	case cfg.HistoryWindow < 0:
		errs = append(errs, errors.New("history window must not be negative"))
	case cfg.LockWait < 0:
		errs = append(errs, errors.New("lock wait must not be negative"))
	}
	if u := cfg.DatabaseURL; !strings.HasPrefix(u, "sqlite://") && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		errs = append(errs, errors.New("database URL must start with sqlite:// or postgres://"))
	} else if u == "sqlite://" {
		errs = append(errs, errors.New("database URL sqlite:// names no file: use e.g. sqlite://data/companion.db"))
	}
	for _, u := range []string{cfg.WeatherGeocodingURL, cfg.WeatherForecastURL} {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("weather URL %q must start with http:// or https://", u))
		}
	}
	return cfg, logLevel, errors.Join(errs...)
}
