package main

import (
	"cmp"
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
	"github.com/companionhq/companion/internal/auth"
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
	case nil, errHelp:
		return 0
	case errUsage:
		return 2
	}
	if errors.As(err, new(badSettings)) {
		return 2
	}
	return 1
}

// badSettings are settings that parsed but cannot work together or at
// all: a usage error too (exit 2), though what to say is only known once
// every section is checked.
type badSettings struct{ error }

func (b badSettings) Unwrap() error { return b.error }

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

// parseConfig reads flags over environment over defaults, section by
// section. Every broken setting is reported, not only the first. Help
// (-h) is written to help.
func parseConfig(args []string, getenv func(string) string, help, stderr io.Writer) (app.Config, slog.Level, error) {
	var cfg app.Config
	var level slog.Level
	f := serveFlags(getenv, &cfg, &level)
	fs := f.fs
	if err := parseFlags(fs, args, f.usage, help, stderr); err != nil {
		return cfg, level, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "companion serve: unexpected argument %q\nrun 'companion serve -h' for the flags\n", fs.Arg(0))
		return cfg, level, errUsage
	}
	for _, check := range f.checks {
		check()
	}
	if err := errors.Join(f.errs...); err != nil {
		return cfg, level, badSettings{err}
	}
	return cfg, level, nil
}

// serveFlags registers the flags of `companion serve` onto cfg and level,
// set to their defaults, section by section.
func serveFlags(getenv func(string) string, cfg *app.Config, level *slog.Level) *flags {
	f := &flags{fs: flag.NewFlagSet("companion serve", flag.ContinueOnError), getenv: getenv}
	def := app.Defaults()
	*cfg = def
	f.section("Logging")
	logFlags(f, level)
	f.section("Server: how it listens, serves streams and shuts down")
	serverFlags(f, &cfg.Server, def.Server)
	f.section("Authentication: off unless one of these is set")
	authFlags(f, &cfg.Auth, def.Auth)
	f.section("Limits: of a request, a resource and a thread")
	limitsFlags(f, &cfg.Limits, def.Limits)
	f.section("Storage: where threads are kept")
	storageFlags(f, &cfg.Storage, def.Storage)
	f.section("Memory: what the companion keeps of its user across threads")
	memoryFlags(f, &cfg.Memory, def.Memory)
	f.section("Safety: how users are guarded (docs/safety.md)")
	safetyFlags(f, &cfg.Safety, def.Safety)
	f.section("Model: which model answers, and what a run may ask of it")
	modelFlags(f, &cfg.Model, def.Model)
	f.section("Tools")
	toolsFlags(f, &cfg.Tools, def.Tools)
	f.section("Telemetry")
	telemetryFlags(f, &cfg.Telemetry, def.Telemetry)
	return f
}

// serveNotes ends `companion serve -h`: the variables read without a flag.
const serveNotes = `
Environment variables without a flag:
  CO_API_KEY        Cohere's API key, for -model cohere/<model>
  OPENAI_API_KEY    OpenAI's API key, for -model openai/<model> (and a -model-base-url server that wants one)
  COMPANION_EMBED_API_KEY
                    the embedding provider's key (-embed-provider); without it, OPENAI_API_KEY or CO_API_KEY
  COMPANION_MODERATION_API_KEY
                    the moderation endpoint's key (-moderation-url); without it, OPENAI_API_KEY
  OTEL_*            span export, as OpenTelemetry defines it: OTEL_EXPORTER_OTLP_ENDPOINT (or
                    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns it on; OTEL_EXPORTER_OTLP_PROTOCOL
                    (http/protobuf or grpc), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME,
                    OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER (otlp or none)
A flag wins over its variable.
`

// usage is `companion serve -h`: the flags, section by section, each with
// its variable.
func (f *flags) usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: companion serve [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Runs the HTTP API. Every flag has an environment variable, named after it.")
	for _, s := range f.sections {
		fmt.Fprintf(w, "\n%s:\n", s.title)
		s.fs.SetOutput(w)
		s.fs.PrintDefaults()
	}
	fmt.Fprint(w, serveNotes)
}

// flags registers settings on a flag set. Each setting's default is its
// environment variable when set, so that a flag given on the command line
// still wins; a variable that does not parse is reported in errs.
type flags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
	// checks complete and check the sections once the command line is
	// parsed.
	checks []func()
	// sections hold the flags again, section by section, for the help.
	sections []section
}

// section is a titled part of the help: its flags, registered there too.
type section struct {
	title string
	fs    *flag.FlagSet
}

// section starts a section of the help: the flags registered next are in
// it.
func (f *flags) section(title string) {
	f.sections = append(f.sections, section{title, flag.NewFlagSet(title, flag.ContinueOnError)})
}

// sets are the flag sets a setting is registered on: the command's, and
// its section's for the help.
func (f *flags) sets() []*flag.FlagSet {
	if len(f.sections) == 0 {
		return []*flag.FlagSet{f.fs}
	}
	return []*flag.FlagSet{f.fs, f.sections[len(f.sections)-1].fs}
}

// str, num, i64, boolean, dur and dollars register a setting of their
// type.
func (f *flags) str(p *string, s setting, def string) {
	v := fromEnv(f.getenv, s.env, def, func(v string) (string, error) { return v, nil }, "", &f.errs)
	for _, fs := range f.sets() {
		fs.StringVar(p, s.flag, v, s.help())
	}
}

func (f *flags) num(p *int, s setting, def int) {
	v := fromEnv(f.getenv, s.env, def, strconv.Atoi, wantWhole, &f.errs)
	for _, fs := range f.sets() {
		fs.IntVar(p, s.flag, v, s.help())
	}
}

func (f *flags) i64(p *int64, s setting, def int64) {
	v := fromEnv(f.getenv, s.env, def, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }, wantWhole, &f.errs)
	for _, fs := range f.sets() {
		fs.Int64Var(p, s.flag, v, s.help())
	}
}

func (f *flags) boolean(p *bool, s setting, def bool) {
	v := fromEnv(f.getenv, s.env, def, strconv.ParseBool, wantBool, &f.errs)
	for _, fs := range f.sets() {
		fs.BoolVar(p, s.flag, v, s.help())
	}
}

func (f *flags) dur(p *time.Duration, s setting, def time.Duration) {
	v := fromEnv(f.getenv, s.env, def, time.ParseDuration, wantDuration, &f.errs)
	for _, fs := range f.sets() {
		fs.DurationVar(p, s.flag, v, s.help())
	}
}

func (f *flags) float(p *float64, s setting, def float64) {
	v := fromEnv(f.getenv, s.env, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number", &f.errs)
	for _, fs := range f.sets() {
		fs.Float64Var(p, s.flag, v, s.help())
	}
}

func (f *flags) dollars(p *float64, s setting, def float64) {
	v := fromEnv(f.getenv, s.env, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number of US dollars", &f.errs)
	for _, fs := range f.sets() {
		fs.Float64Var(p, s.flag, v, s.help())
	}
}

// then runs check once the command line is parsed.
func (f *flags) then(check func()) { f.checks = append(f.checks, check) }

// fail reports a broken setting, once: two sections may share a message.
func (f *flags) fail(err error) {
	for _, e := range f.errs {
		if e.Error() == err.Error() {
			return
		}
	}
	f.errs = append(f.errs, err)
}

// require reports msg unless ok.
func (f *flags) require(ok bool, msg string) {
	if !ok {
		f.fail(errors.New(msg))
	}
}

// graceAndTimeout is the one message of two settings of different sections.
const graceAndTimeout = "shutdown grace must not be negative and the weather timeout must be positive"

// logFlags registers the log level, which is not the service's to know.
func logFlags(f *flags, level *slog.Level) {
	var name string
	f.str(&name, setting{"log-level", "COMPANION_LOG_LEVEL", "debug, info, warn or error"}, "info")
	f.then(func() {
		if err := level.UnmarshalText([]byte(name)); err != nil {
			f.fail(fmt.Errorf("log level %q is not one of debug, info, warn, error", name))
		}
	})
}

// serverFlags registers how the service listens, serves its streams and
// shuts down.
func serverFlags(f *flags, cfg *app.ServerConfig, def app.ServerConfig) {
	f.str(&cfg.Addr, setting{"addr", "COMPANION_ADDR", "listen address"}, def.Addr)
	f.dur(&cfg.ShutdownGrace, setting{"shutdown-grace", "COMPANION_SHUTDOWN_GRACE", "how long in-flight runs may finish after SIGINT or SIGTERM"}, def.ShutdownGrace)
	f.dur(&cfg.ShutdownDelay, setting{"shutdown-delay", "COMPANION_SHUTDOWN_DELAY", "how long /ready answers 503 after SIGTERM before the listener closes"}, def.ShutdownDelay)
	f.str(&cfg.MetricsAddr, setting{"metrics-addr", "COMPANION_METRICS_ADDR", "serve /metrics on this address alone, not on the API's"}, def.MetricsAddr)
	f.boolean(&cfg.WebUI, setting{"web-ui", "COMPANION_WEB_UI", "serve the web chat page at /"}, def.WebUI)
	// Neither origins nor proxies have defaults.
	var cors, proxies string
	f.str(&cors, setting{"cors-origins", "COMPANION_CORS_ORIGINS", "browser origins allowed to call the API, comma-separated (none by default)"}, "")
	f.str(&proxies, setting{"trusted-proxies", "COMPANION_TRUSTED_PROXIES", "networks of proxies whose X-Forwarded-For names the client, comma-separated CIDRs"}, "")
	f.str(&cfg.StreamFormat, setting{"stream-format", "COMPANION_STREAM_FORMAT", "stream dialect of requests that name none (X-Stream-Format): seed, mastra or ai-sdk"}, def.StreamFormat)
	f.dur(&cfg.StreamRetention, setting{"stream-retention", "COMPANION_STREAM_RETENTION", "how long a streamed run's events stay to be resumed after it ended"}, def.StreamRetention)
	f.num(&cfg.StreamRetainedBytes, setting{"stream-retained-bytes", "COMPANION_STREAM_RETAINED_BYTES", "most bytes of ended runs' events this instance keeps to be resumed, all runs together; the oldest go first"}, def.StreamRetainedBytes)
	f.dur(&cfg.ResumeGrace, setting{"resume-grace", "COMPANION_RESUME_GRACE", "how long a run goes on after its stream broke, waiting to be resumed (0: cancel it at once)"}, def.ResumeGrace)
	f.then(func() {
		cfg.CORSOrigins = splitList(cors)
		for _, o := range cfg.CORSOrigins {
			if err := checkOrigin(o); err != nil {
				f.fail(err)
			}
		}
		for _, p := range splitList(proxies) {
			prefix, err := parseProxy(p)
			if err != nil {
				f.fail(err)
				continue
			}
			cfg.TrustedProxies = append(cfg.TrustedProxies, prefix)
		}
		f.require(cfg.ShutdownGrace >= 0, graceAndTimeout)
		f.require(cfg.ShutdownDelay >= 0, "shutdown delay must not be negative")
		f.require(cfg.StreamRetention > 0 && cfg.ResumeGrace >= 0, "stream retention must be positive and resume grace not negative")
		f.require(cfg.StreamRetainedBytes >= 1, "stream retained bytes must be at least 1")
		f.require(cfg.StreamFormat == "seed" || cfg.StreamFormat == "mastra" || cfg.StreamFormat == "ai-sdk", "stream format must be seed, mastra or ai-sdk")
	})
}

// parseProxy reads a trusted proxy's network: a CIDR, or one address.
func parseProxy(p string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(p)
	if err != nil {
		if addr, aerr := netip.ParseAddr(p); aerr == nil {
			prefix, err = addr.Prefix(addr.BitLen())
		}
	}
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q is not a CIDR such as 10.0.0.0/8 or an address", p)
	}
	return prefix, nil
}

// authFlags: authentication is off unless one of these is set. The JWKS
// URL is auth's to check, as it reads it.
func authFlags(f *flags, cfg *auth.Config, def auth.Config) {
	f.str(&cfg.APIKeysFile, setting{"api-keys-file", "COMPANION_API_KEYS_FILE", `file of API keys, one "KEY RESOURCE[,RESOURCE...]" (or "KEY *") a line; re-read on SIGHUP`}, def.APIKeysFile)
	f.str(&cfg.JWKSURL, setting{"jwt-jwks-url", "COMPANION_JWT_JWKS_URL", "JWKS URL of the identity provider whose bearer tokens are accepted"}, def.JWKSURL)
	f.str(&cfg.Issuer, setting{"jwt-issuer", "COMPANION_JWT_ISSUER", "required iss of bearer tokens"}, def.Issuer)
	f.str(&cfg.Audience, setting{"jwt-audience", "COMPANION_JWT_AUDIENCE", "required aud of bearer tokens"}, def.Audience)
	f.str(&cfg.ResourceClaim, setting{"jwt-resource-claim", "COMPANION_JWT_RESOURCE_CLAIM", "claim of a bearer token that names its resources"}, def.ResourceClaim)
	f.str(&cfg.JWTSecretFile, setting{"jwt-secret-file", "COMPANION_JWT_SECRET_FILE", "file holding an HS256 secret for bearer tokens (development)"}, def.JWTSecretFile)
	f.then(func() {
		f.require(strings.TrimSpace(cfg.ResourceClaim) != "", "the JWT resource claim must not be empty")
	})
}

// limitsFlags: the limits on one request, then on a resource and a thread.
func limitsFlags(f *flags, cfg *app.LimitsConfig, def app.LimitsConfig) {
	f.i64(&cfg.MaxBodyBytes, setting{"max-body-bytes", "COMPANION_MAX_BODY_BYTES", "largest request body accepted"}, def.MaxBodyBytes)
	f.num(&cfg.MaxMessages, setting{"max-messages", "COMPANION_MAX_MESSAGES", "most messages in one run request"}, def.MaxMessages)
	f.num(&cfg.MaxMessageBytes, setting{"max-message-bytes", "COMPANION_MAX_MESSAGE_BYTES", "most bytes in one message's content"}, def.MaxMessageBytes)
	f.num(&cfg.MaxIDBytes, setting{"max-id-bytes", "COMPANION_MAX_ID_BYTES", "most bytes in a threadId, resourceId or message id"}, def.MaxIDBytes)
	f.num(&cfg.MaxStreams, setting{"max-streams", "COMPANION_MAX_STREAMS", "most streams open at once; beyond it 503 with Retry-After"}, def.MaxStreams)
	f.dur(&cfg.MaxRunDuration, setting{"max-run-duration", "COMPANION_MAX_RUN_DURATION", "longest a run may take; a stream then ends with an error event (RUN_TIMEOUT)"}, def.MaxRunDuration)
	f.dur(&cfg.BodyReadTimeout, setting{"body-read-timeout", "COMPANION_BODY_READ_TIMEOUT", "longest a client may take to send a request body"}, def.BodyReadTimeout)
	f.dur(&cfg.StreamStallTimeout, setting{"stream-stall-timeout", "COMPANION_STREAM_STALL_TIMEOUT", "a stream whose client takes none of its bytes for this long ends, as a broken stream, and frees its slot"}, def.StreamStallTimeout)
	f.num(&cfg.MaxHeaderBytes, setting{"max-header-bytes", "COMPANION_MAX_HEADER_BYTES", "most bytes of request headers"}, def.MaxHeaderBytes)
	f.num(&cfg.RateLimit, setting{"rate-limit", "COMPANION_RATE_LIMIT", "requests per minute one resource, and one client address, may make; 0 for no limit"}, def.RateLimit)
	f.i64(&cfg.Quota.Tokens, setting{"token-quota", "COMPANION_TOKEN_QUOTA", "tokens one resource may use per UTC day; 0 for no quota"}, def.Quota.Tokens)
	f.dollars(&cfg.Quota.Cost, setting{"cost-quota", "COMPANION_COST_QUOTA", "US dollars one resource's runs may cost per UTC day; 0 for no quota"}, def.Quota.Cost)
	f.i64((*int64)(&cfg.MaxThreadBytes), setting{"max-thread-bytes", "COMPANION_MAX_THREAD_BYTES", "most bytes one thread may store, 0 for no limit"}, int64(def.MaxThreadBytes))
	f.then(func() {
		f.require(cfg.MaxBodyBytes >= 1024, "max body bytes must be at least 1024")
		f.require(cfg.MaxMessages >= 1 && cfg.MaxMessageBytes >= 1 && cfg.MaxIDBytes >= 1 && cfg.MaxStreams >= 1,
			"max messages, max message bytes, max id bytes and max streams must be at least 1")
		f.require(cfg.MaxRunDuration > 0 && cfg.BodyReadTimeout > 0 && cfg.StreamStallTimeout > 0, "max run duration, body read timeout and stream stall timeout must be positive")
		f.require(cfg.MaxHeaderBytes >= 4096, "max header bytes must be at least 4096")
		f.require(cfg.RateLimit >= 0 && cfg.Quota.Tokens >= 0 && cfg.Quota.Cost >= 0, "rate limit, token quota and cost quota must not be negative")
		f.require(cfg.MaxThreadBytes >= 0, "max thread bytes must not be negative")
	})
}

// storageFlags registers where threads are kept and what a run sees of
// them.
func storageFlags(f *flags, cfg *app.StorageConfig, def app.StorageConfig) {
	f.str(&cfg.DatabaseURL, setting{"database-url", "COMPANION_DATABASE_URL", "conversation store: sqlite://PATH or postgres://USER@HOST/DB"}, def.DatabaseURL)
	var redisURL string
	f.str(&redisURL, setting{"redis-url", "COMPANION_REDIS_URL", "Redis shared by every instance for the rate limits, e.g. redis://127.0.0.1:6379/0"}, string(def.RedisURL))
	f.num(&cfg.HistoryWindow, setting{"history-window", "COMPANION_HISTORY_WINDOW", "how many stored messages of a thread each run sees"}, def.HistoryWindow)
	f.dur(&cfg.LockWait, setting{"lock-wait", "COMPANION_LOCK_WAIT", "how long a turn waits for the thread's previous turn before it is refused with 409"}, def.LockWait)
	f.num(&cfg.HistoryBytes, setting{"history-max-bytes", "COMPANION_HISTORY_MAX_BYTES", "most bytes of message content a run sees of its thread's history"}, def.HistoryBytes)
	f.then(func() {
		cfg.RedisURL = redact.Secret(redisURL)
		if err := app.CheckDatabaseURL(cfg.DatabaseURL); err != nil {
			f.fail(err)
		}
		if u := redisURL; u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
			f.fail(errors.New("redis URL must start with redis:// or rediss://"))
		}
		f.require(cfg.HistoryWindow >= 0, "history window must not be negative")
		f.require(cfg.LockWait >= 0, "lock wait must not be negative")
		f.require(cfg.HistoryBytes >= 1, "history max bytes must be at least 1")
	})
}

// safetyFlags registers how the service guards its users
// (docs/safety.md).
func safetyFlags(f *flags, cfg *app.SafetyConfig, def app.SafetyConfig) {
	f.boolean(&cfg.Crisis, setting{"crisis", "COMPANION_CRISIS", "the crisis protocol: a user's message that speaks of suicide or self-harm is answered with the crisis referral in the user's locale (docs/safety.md)"}, def.Crisis)
	f.str(&cfg.CrisisReply, setting{"crisis-reply", "COMPANION_CRISIS_REPLY", "what answers a crisis: referral (the referral's texts alone; the run trips) or model (the referral, then the model, told to answer with care)"}, def.CrisisReply)
	f.str(&cfg.ReferralsFile, setting{"crisis-referrals", "COMPANION_CRISIS_REFERRALS", "a JSON file of the crisis referral's texts by locale, replacing the built-in ones (docs/safety.md)"}, def.ReferralsFile)
	f.str(&cfg.Disclosure, setting{"disclosure", "COMPANION_DISCLOSURE", "the notice that tells users they talk to an AI, at the start of each interaction; empty for none"}, def.Disclosure)
	f.dur(&cfg.DisclosureInterval, setting{"disclosure-interval", "COMPANION_DISCLOSURE_INTERVAL", "how often the AI disclosure is told again in a continuing interaction"}, def.DisclosureInterval)
	f.str(&cfg.BreakReminder, setting{"break-reminder", "COMPANION_BREAK_REMINDER", "the notice that reminds a minor to take a break; empty for none"}, def.BreakReminder)
	f.dur(&cfg.BreakReminderInterval, setting{"break-reminder-interval", "COMPANION_BREAK_REMINDER_INTERVAL", "how often a minor is reminded to take a break in a continuing interaction"}, def.BreakReminderInterval)
	f.boolean(&cfg.RedactPII, setting{"redact-pii", "COMPANION_REDACT_PII", "replace e-mail addresses, phone numbers and card numbers in users' messages before they are stored, logged or sent to the model"}, def.RedactPII)
	f.str(&cfg.ModerationURL, setting{"moderation-url", "COMPANION_MODERATION_URL", "check each user message through the OpenAI-compatible /v1/moderations at this base address (empty: the model provider's, when -moderation-model is set; neither: no moderation)"}, def.ModerationURL)
	f.str(&cfg.ModerationModel, setting{"moderation-model", "COMPANION_MODERATION_MODEL", "the moderation model, e.g. omni-moderation-latest, or the guard model with -moderation-guard; set alone, moderation goes to the model provider's address (-model-base-url, else OpenAI's)"}, def.ModerationModel)
	f.boolean(&cfg.ModerationGuard, setting{"moderation-guard", "COMPANION_MODERATION_GUARD", "the moderation address serves a guard model (Llama Guard's answers) through /v1/chat/completions"}, def.ModerationGuard)
	f.then(func() {
		// The moderation endpoint's key: its own, else the OpenAI key.
		cfg.ModerationKey = redact.Secret(cmp.Or(f.getenv("COMPANION_MODERATION_API_KEY"), f.getenv("OPENAI_API_KEY")))
		f.require(cfg.DisclosureInterval > 0 && cfg.BreakReminderInterval > 0, "disclosure interval and break reminder interval must be above 0")
		if cfg.CrisisReply != "referral" && cfg.CrisisReply != "model" {
			f.fail(fmt.Errorf("crisis reply must be referral or model, not %q", cfg.CrisisReply))
		}
		if u := cfg.ModerationURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			f.fail(errors.New("moderation URL must start with http:// or https://"))
		}
	})
}

// memoryFlags registers what the companion keeps of its user across
// threads: working memory, recall and titles.
func memoryFlags(f *flags, cfg *app.MemoryConfig, def app.MemoryConfig) {
	var wm, recall string
	f.str(&wm, setting{"working-memory", "COMPANION_WORKING_MEMORY", "what the model knows of the user across threads: resource (one block per resource), thread (one per thread) or off"}, def.WorkingMemory.Scope)
	f.str(&cfg.WorkingMemoryTemplateFile, setting{"working-memory-template", "COMPANION_WORKING_MEMORY_TEMPLATE", "working memory's template: a Markdown file, or a JSON Schema (.json) whose updates are merged field by field"}, def.WorkingMemoryTemplateFile)
	f.num(&cfg.WorkingMemory.MaxBytes, setting{"working-memory-max-bytes", "COMPANION_WORKING_MEMORY_MAX_BYTES", "most bytes working memory may hold"}, def.WorkingMemory.MaxBytes)
	f.str(&recall, setting{"recall", "COMPANION_RECALL", "messages recalled for the model from earlier conversations: resource (the resource's other threads), thread (the thread's older messages) or off"}, def.Recall.Scope)
	f.num(&cfg.Recall.TopK, setting{"recall-top-k", "COMPANION_RECALL_TOP_K", "most messages recalled for one turn"}, def.Recall.TopK)
	f.num(&cfg.Recall.MessageRange, setting{"recall-message-range", "COMPANION_RECALL_MESSAGE_RANGE", "messages before and after each recalled one that come with it"}, def.Recall.MessageRange)
	f.num(&cfg.Recall.MaxBytes, setting{"recall-max-bytes", "COMPANION_RECALL_MAX_BYTES", "most bytes of recalled messages shown to the model in one turn"}, def.Recall.MaxBytes)
	f.boolean(&cfg.Titles, setting{"thread-titles", "COMPANION_THREAD_TITLES", "name a thread after its first exchange (the model is asked, off the reply's path)"}, def.Titles)
	f.str(&cfg.Embed.Provider, setting{"embed-provider", "COMPANION_EMBED_PROVIDER", "an embedding model for hybrid recall (vector ranking beside full-text): fake (offline, deterministic), openai (any OpenAI-compatible /embeddings) or cohere; empty for none"}, def.Embed.Provider)
	f.str(&cfg.Embed.Model, setting{"embed-model", "COMPANION_EMBED_MODEL", "the embedding model's name, e.g. text-embedding-3-small or embed-v4.0"}, def.Embed.Model)
	f.str(&cfg.Embed.BaseURL, setting{"embed-base-url", "COMPANION_EMBED_BASE_URL", "the embedding provider's address, e.g. http://127.0.0.1:11434/v1 for an OpenAI-compatible server (empty: the provider's own)"}, def.Embed.BaseURL)
	f.num(&cfg.Embed.Dimensions, setting{"embed-dimensions", "COMPANION_EMBED_DIMENSIONS", "length of the vectors asked for (0: the model's own)"}, def.Embed.Dimensions)
	f.float(&cfg.EmbedMinSimilarity, setting{"embed-min-similarity", "COMPANION_EMBED_MIN_SIMILARITY", "least cosine similarity of a message's vector with the question's for vector ranking to count it (it depends on the model)"}, def.EmbedMinSimilarity)
	f.float(&cfg.EmbedWeight, setting{"embed-weight", "COMPANION_EMBED_WEIGHT", "what a message's rank by vector counts for beside its rank by words when the two are fused (hybrid recall)"}, def.EmbedWeight)
	f.dur(&cfg.Recall.EmbedWait, setting{"recall-embed-wait", "COMPANION_RECALL_EMBED_WAIT", "how long a turn's recall waits for the question's vector (the call starts as the turn begins); past it, recall ranks by words alone; 0 never waits"}, def.Recall.EmbedWait)
	f.then(func() {
		for _, s := range []struct {
			name, v string
			off     *bool
			scope   *string
		}{{"working memory", wm, &cfg.WorkingMemory.Off, &cfg.WorkingMemory.Scope}, {"recall", recall, &cfg.Recall.Off, &cfg.Recall.Scope}} {
			switch s.v {
			case "off":
				*s.off = true
			case "resource", "thread":
				*s.scope = s.v
			default:
				f.fail(fmt.Errorf("%s must be resource, thread or off, not %q", s.name, s.v))
			}
		}
		f.require(cfg.WorkingMemory.MaxBytes >= 1 && cfg.Recall.MaxBytes >= 1, "working memory max bytes and recall max bytes must be at least 1")
		f.require(cfg.Recall.TopK >= 1 && cfg.Recall.MessageRange >= 0, "recall top k must be at least 1 and recall message range not negative")
		f.require(cfg.Embed.Dimensions >= 0 && cfg.Recall.EmbedWait >= 0 && cfg.EmbedWeight > 0, "embed dimensions and recall embed wait must not be negative, and embed weight must be above 0")
		// The embedding provider's key: its own, else the chat provider's.
		cfg.EmbedAPIKey = redact.Secret(f.getenv("COMPANION_EMBED_API_KEY"))
		if cfg.EmbedAPIKey == "" {
			switch cfg.Embed.Provider {
			case "openai":
				cfg.EmbedAPIKey = redact.Secret(f.getenv("OPENAI_API_KEY"))
			case "cohere":
				cfg.EmbedAPIKey = redact.Secret(f.getenv("CO_API_KEY"))
			}
		}
	})
}

// modelFlags: which model answers (see provider.Open, which checks that
// the choice can work), and what one run may ask of it.
func modelFlags(f *flags, cfg *app.ModelConfig, def app.ModelConfig) {
	f.str(&cfg.Model, setting{"model", "COMPANION_MODEL", `model to answer with: "fake", "cohere/<model>", "openai/<model>", "ollama/<model>", "replay" (answer from -replay-dir), or a model name with -model-base-url`}, def.Model)
	f.str(&cfg.BaseURL, setting{"model-base-url", "COMPANION_MODEL_BASE_URL", "the model provider's base URL; with a bare model name, any OpenAI-compatible server"}, def.BaseURL)
	f.str(&cfg.RecordDir, setting{"record-dir", "COMPANION_RECORD_DIR", "record every exchange with the model provider to a cassette in this directory (keys scrubbed)"}, def.RecordDir)
	f.str(&cfg.ReplayDir, setting{"replay-dir", "COMPANION_REPLAY_DIR", `directory of the cassettes the model "replay" answers from`}, def.ReplayDir)
	f.boolean(&cfg.ReplayFast, setting{"replay-fast", "COMPANION_REPLAY_FAST", "replay cassettes without their recorded delays"}, def.ReplayFast)
	f.dur(&cfg.Timeout, setting{"model-timeout", "COMPANION_MODEL_TIMEOUT", "longest a model call may take, retries and streaming included"}, def.Timeout)
	f.dur(&cfg.FirstTokenTimeout, setting{"model-first-token-timeout", "COMPANION_MODEL_FIRST_TOKEN_TIMEOUT", "longest wait for the first token of an answer"}, def.FirstTokenTimeout)
	f.num(&cfg.MaxRetries, setting{"model-max-retries", "COMPANION_MODEL_MAX_RETRIES", "retries of a model call that failed before its first token (429, 5xx, connection errors)"}, def.MaxRetries)
	f.dur(&cfg.RetryDelay, setting{"model-retry-delay", "COMPANION_MODEL_RETRY_DELAY", "wait before the first retry; doubles with each retry, jittered, up to 16 times this"}, def.RetryDelay)
	f.dur(&cfg.RetryBudget, setting{"model-retry-budget", "COMPANION_MODEL_RETRY_BUDGET", "no retry begins later than this after the call started"}, def.RetryBudget)
	f.dur(&cfg.FakeFirstTokenDelay, setting{"fake-first-token-delay", "COMPANION_FAKE_FIRST_TOKEN_DELAY", "fake model: delay before its first token"}, def.FakeFirstTokenDelay)
	f.dur(&cfg.FakeTokenDelay, setting{"fake-token-delay", "COMPANION_FAKE_TOKEN_DELAY", "fake model: delay before each later token"}, def.FakeTokenDelay)
	f.num(&cfg.MaxSteps, setting{"max-steps", "COMPANION_MAX_STEPS", "most model calls in one run"}, def.MaxSteps)
	f.num(&cfg.MaxOutputTokens, setting{"max-output-tokens", "COMPANION_MAX_OUTPUT_TOKENS", "cap on tokens per model call, 0 for the model's own"}, def.MaxOutputTokens)
	f.str(&cfg.PricesFile, setting{"prices", "COMPANION_PRICES", "prices table (JSON: per model, US dollars per million input, output and cached input tokens) over the shipped one"}, def.PricesFile)
	// Keys come from the providers' usual variables, never from flags: a
	// flag would show in the process list.
	cfg.CohereAPIKey = redact.Secret(f.getenv("CO_API_KEY"))
	cfg.OpenAIAPIKey = redact.Secret(f.getenv("OPENAI_API_KEY"))
	f.then(func() {
		f.require(cfg.MaxSteps >= 1, "max steps must be at least 1")
		f.require(cfg.MaxOutputTokens >= 0, "max output tokens must not be negative")
		f.require(cfg.Timeout > 0 && cfg.FirstTokenTimeout > 0 && cfg.RetryDelay > 0 && cfg.RetryBudget >= 0,
			"the model timeouts and retry delay must be positive, the retry budget not negative")
		f.require(cfg.MaxRetries >= 0 && cfg.MaxRetries <= 10, "model max retries must be from 0 to 10")
	})
}

// toolsFlags registers the weather tool's upstreams.
func toolsFlags(f *flags, cfg *app.ToolsConfig, def app.ToolsConfig) {
	w := &cfg.Weather
	f.str(&w.GeocodingURL, setting{"weather-geocoding-url", "COMPANION_WEATHER_GEOCODING_URL", "Open-Meteo geocoding API base URL"}, def.Weather.GeocodingURL)
	f.str(&w.ForecastURL, setting{"weather-forecast-url", "COMPANION_WEATHER_FORECAST_URL", "Open-Meteo forecast API base URL"}, def.Weather.ForecastURL)
	f.dur(&w.Timeout, setting{"weather-timeout", "COMPANION_WEATHER_TIMEOUT", "timeout of each Open-Meteo request"}, def.Weather.Timeout)
	f.str(&cfg.MCPServers, setting{"mcp-servers", "COMPANION_MCP_SERVERS", "mcpServers file (JSON, as Claude Desktop and Cursor write it) whose servers' tools are offered too, named <server>_<tool>"}, def.MCPServers)
	f.then(func() {
		f.require(w.Timeout > 0, graceAndTimeout)
		for _, u := range []string{w.GeocodingURL, w.ForecastURL} {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				f.fail(fmt.Errorf("weather URL %q must start with http:// or https://", u))
			}
		}
	})
}

// telemetryFlags registers what spans record and where they go.
func telemetryFlags(f *flags, cfg *app.TelemetryConfig, def app.TelemetryConfig) {
	f.boolean(&cfg.TraceContent, setting{"trace-content", "COMPANION_TRACE_CONTENT", "record message contents, tool arguments and results in spans (they may hold personal data)"}, def.TraceContent)
	// Span export follows the standard OpenTelemetry variables, read here
	// for the decision and by the exporter for the rest.
	otlp, err := telemetry.OTLPProtocol(f.getenv)
	if err != nil {
		f.fail(err)
	}
	cfg.OTLPProtocol = otlp
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
