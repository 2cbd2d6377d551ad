package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/runlog"
	"github.com/companionhq/companion/internal/turn"
)

// This file holds every metric the service exports. Names follow the
// Prometheus conventions (base units, _total for counters, _seconds for
// durations); label values come from small, fixed sets (route patterns,
// model ids, personalities, tool names, finish reasons), never from
// thread, user or run ids.

const namespace = "companion"

// Outcome label values of model and tool calls.
const (
	outcomeOK    = "ok"
	outcomeError = "error"
)

// Token type label values of companion_tokens_total.
const (
	tokenInput     = "input"
	tokenOutput    = "output"
	tokenReasoning = "reasoning"
	tokenCached    = "cached"
)

// Metrics records the service's Prometheus metrics. It is the agent's and
// the HTTP server's Observer, and is safe for concurrent use.
type Metrics struct {
	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	streamsOpen   prometheus.Gauge
	firstEvent    prometheus.Histogram
	firstText     prometheus.Histogram
	runsInFlight  prometheus.Gauge
	runs          *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	runSteps      *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	modelCalls    *prometheus.CounterVec
	modelDuration *prometheus.HistogramVec
	toolCalls     *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	limited       *prometheus.CounterVec
	sharedLimits  prometheus.Gauge
	cost          *prometheus.CounterVec
	recallLatency prometheus.Histogram
	recallResults prometheus.Histogram
	memoryUpdates *prometheus.CounterVec
	erasures      prometheus.Counter
	searchTypes   *prometheus.CounterVec
	embedded      prometheus.Counter
	embedCalls    *prometheus.CounterVec
	embedDuration prometheus.Histogram
	trips         *prometheus.CounterVec
	referrals     *prometheus.CounterVec
}

var (
	_ agent.Observer   = (*Metrics)(nil)
	_ httpapi.Observer = (*Metrics)(nil)
	_ turn.Observer    = (*Metrics)(nil)
)

// NewMetrics defines the service's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	// Buckets, in seconds. Requests, runs and model calls span milliseconds
	// on the fake model to minutes on a slow real one.
	var (
		latencyBuckets    = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
		firstEventBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30}
		toolBuckets       = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
		stepBuckets       = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20}
		searchBuckets     = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
		resultBuckets     = []float64{0, 1, 2, 3, 4, 5, 10, 20, 50, 100}
	)
	model := []string{"provider", "model"}
	m := &Metrics{
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, to the end of the body (a stream's whole length), by method, route pattern and status code.",
			Buckets: latencyBuckets,
		}, []string{"method", "route", "code"}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "streams_open",
			Help: "Event streams open now.",
		}),
		firstEvent: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "stream_time_to_first_event_seconds",
			Help:    "Time from a stream request's arrival to its first event on the wire.",
			Buckets: firstEventBuckets,
		}),
		firstText: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "stream_time_to_first_text_seconds",
			Help:    "Time from a stream request's arrival to its first text event on the wire (time to first token).",
			Buckets: firstEventBuckets,
		}),
		runsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "runs_in_flight",
			Help: "Agent runs in progress now.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "runs_total",
			Help: "Agent runs finished, by provider, model, personality and finish reason (stop, length, tool_calls, content_filter, error, other).",
		}, []string{"provider", "model", "personality", "finish_reason"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "run_duration_seconds",
			Help:    "Length of agent runs, by provider and model.",
			Buckets: latencyBuckets,
		}, model),
		runSteps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "run_steps",
			Help:    "Steps (model calls) per agent run, by provider and model.",
			Buckets: stepBuckets,
		}, model),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tokens_total",
			Help: "Tokens the model reported, by type (input, output; reasoning, a part of output; cached, a part of input), provider, model and personality.",
		}, []string{"type", "provider", "model", "personality"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "model_calls_total",
			Help: "Model calls, by provider, model and outcome (ok, error).",
		}, []string{"provider", "model", "outcome"}),
		modelDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "model_call_duration_seconds",
			Help:    "Length of model calls, from request to finish or failure, by provider and model.",
			Buckets: latencyBuckets,
		}, model),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tool_calls_total",
			Help: "Tool calls, by tool and outcome (ok, error); _OTHER is a tool the model asked for that does not exist.",
		}, []string{"tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "tool_call_duration_seconds",
			Help:    "Length of tool calls, by tool and outcome.",
			Buckets: toolBuckets,
		}, []string{"tool", "outcome"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_limited_total",
			Help: "Requests refused with 429, by scope: address (a client address's rate limit), resource (a resource's rate limit), quota (a resource's daily token or cost quota).",
		}, []string{"scope"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "cost_total",
			Help: "What the model calls cost, in US dollars at the prices table (-prices), by provider, model and personality.",
		}, []string{"provider", "model", "personality"}),
		recallLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "recall_duration_seconds",
			Help:    "Time to search a resource's conversations, for a turn's recall or the search route.",
			Buckets: searchBuckets,
		}),
		recallResults: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "recall_results",
			Help:    "Messages a recall gave the model, or a search found.",
			Buckets: resultBuckets,
		}),
		memoryUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "working_memory_updates_total",
			Help: "Updates of working memory stored, by scope (resource, thread): the model's through its tool, and people's through the API.",
		}, []string{"scope"}),
		trips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tripwires_total",
			Help: "Runs a processor stopped, by the processor's id and the reason's code (a small set: crisis kinds, moderation, minor-content).",
		}, []string{"processor", "reason"}),
		referrals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "crisis_referrals_total",
			Help: "Crisis referrals shown to users, by the locale of the referral's texts (docs/safety.md).",
		}, []string{"locale"}),
		erasures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "resource_erasures_total",
			Help: "Resources whose memory was erased (DELETE /api/memory/resources/{resourceId}).",
		}),
		searchTypes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "recall_searches_total",
			Help: "Searches of recall and of the search route, by how they ranked: text (full-text alone) or hybrid (with an embedding model's vectors).",
		}, []string{"type"}),
		embedded: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "embedded_messages_total",
			Help: "Messages embedded and stored in the vector index, off the reply's path.",
		}),
		embedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "embedding_calls_total",
			Help: "The vector indexer's calls to the embedding model, by outcome: ok, retried (a failure tried again later) or refused (texts the model refused, left out of vector search).",
		}, []string{"outcome"}),
		embedDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "embedding_duration_seconds",
			Help:    "Time of the vector indexer's successful calls to the embedding model.",
			Buckets: prometheus.DefBuckets,
		}),
		sharedLimits: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "rate_limits_shared",
			Help: "1 while the rate limits are shared through Redis, 0 while this instance limits on its own (no Redis configured, or Redis unreachable).",
		}),
	}
	for _, c := range []prometheus.Collector{
		m.httpRequests, m.httpDuration, m.streamsOpen, m.firstEvent, m.firstText, m.runsInFlight, m.runs,
		m.runDuration, m.runSteps, m.tokens, m.modelCalls, m.modelDuration, m.toolCalls, m.toolDuration,
		m.limited, m.sharedLimits, m.cost, m.recallLatency, m.recallResults, m.memoryUpdates, m.erasures,
		m.searchTypes, m.embedded, m.embedCalls, m.embedDuration, m.trips, m.referrals,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// NewRegistry returns a registry holding the Go runtime, process and build
// information collectors, for NewMetrics to add the service's own to.
func NewRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Handler serves reg's metrics in the Prometheus exposition format.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, ErrorHandling: promhttp.ContinueOnError})
}

// Known creates the series of a model and its tools at zero, so that
// dashboards and alert ratios read 0, not "no data", before the first
// failure (the Prometheus advice for label values known in advance).
func (m *Metrics) Known(provider, model string, tools ...string) {
	for _, scope := range []string{httpapi.ScopeAddress, httpapi.ScopeResource, httpapi.ScopeQuota} {
		m.limited.WithLabelValues(scope)
	}
	for _, p := range agent.Personalities() {
		m.cost.WithLabelValues(provider, model, string(p))
	}
	for _, scope := range []string{"resource", "thread"} {
		m.memoryUpdates.WithLabelValues(scope)
	}
	for _, o := range []string{outcomeOK, outcomeError} {
		m.modelCalls.WithLabelValues(provider, model, o)
		for _, t := range tools {
			m.toolCalls.WithLabelValues(t, o)
		}
	}
}

// RequestServed implements httpapi.Observer.
func (m *Metrics) RequestServed(method, route string, status int, elapsed time.Duration) {
	method, code := boundedMethod(method), strconv.Itoa(status)
	m.httpRequests.WithLabelValues(method, route, code).Inc()
	m.httpDuration.WithLabelValues(method, route, code).Observe(elapsed.Seconds())
}

// RequestLimited implements httpapi.Observer.
func (m *Metrics) RequestLimited(scope string) { m.limited.WithLabelValues(scope).Inc() }

// RateLimitsShared records whether the rate limits are shared through Redis.
func (m *Metrics) RateLimitsShared(shared bool) {
	v := 0.0
	if shared {
		v = 1
	}
	m.sharedLimits.Set(v)
}

// StreamOpened implements httpapi.Observer.
func (m *Metrics) StreamOpened() { m.streamsOpen.Inc() }

// StreamClosed implements httpapi.Observer.
func (m *Metrics) StreamClosed() { m.streamsOpen.Dec() }

// StreamFirstEvent implements httpapi.Observer.
func (m *Metrics) StreamFirstEvent(elapsed time.Duration) { m.firstEvent.Observe(elapsed.Seconds()) }

// StreamFirstText implements httpapi.Observer.
func (m *Metrics) StreamFirstText(elapsed time.Duration) { m.firstText.Observe(elapsed.Seconds()) }

// RunStarted implements agent.Observer.
func (m *Metrics) RunStarted(context.Context, agent.RunInfo) { m.runsInFlight.Inc() }

// RunFinished implements agent.Observer.
func (m *Metrics) RunFinished(_ context.Context, run agent.RunInfo, s agent.RunStats) {
	m.runsInFlight.Dec()
	m.runs.WithLabelValues(run.Provider, run.Model, run.Personality, boundedFinish(s.FinishReason)).Inc()
	m.runDuration.WithLabelValues(run.Provider, run.Model).Observe(s.Duration.Seconds())
	m.runSteps.WithLabelValues(run.Provider, run.Model).Observe(float64(s.Steps))
	if s.Trip != nil {
		m.trips.WithLabelValues(s.Trip.Processor, s.Trip.Code).Inc()
	}
}

// ModelCalled implements agent.Observer. Tokens are counted per call, as
// they are spent, so a run that fails later still counts the calls it made.
func (m *Metrics) ModelCalled(_ context.Context, c agent.ModelCallStats) {
	outcome := outcomeOK
	if c.Err != nil {
		outcome = outcomeError
	}
	m.modelCalls.WithLabelValues(c.Provider, c.Model, outcome).Inc()
	m.modelDuration.WithLabelValues(c.Provider, c.Model).Observe(c.Duration.Seconds())
	if c.Finish == nil {
		return
	}
	u := c.Finish.Usage
	for _, t := range []struct {
		typ string
		n   int
	}{{tokenInput, u.InputTokens}, {tokenOutput, u.OutputTokens}, {tokenReasoning, u.ReasoningTokens}, {tokenCached, u.CachedInputTokens}} {
		// Adding 0 still creates the series: every type reads 0, not absent.
		m.tokens.WithLabelValues(t.typ, c.Provider, c.Model, c.Personality).Add(float64(max(t.n, 0)))
	}
	m.cost.WithLabelValues(c.Provider, c.Model, c.Personality).Add(max(c.Cost.Total(), 0))
}

// ToolCalled implements agent.Observer.
func (m *Metrics) ToolCalled(_ context.Context, c agent.ToolCallStats) {
	outcome := outcomeOK
	if c.Err != nil {
		outcome = outcomeError
	}
	m.toolCalls.WithLabelValues(c.Tool, outcome).Inc()
	m.toolDuration.WithLabelValues(c.Tool, outcome).Observe(c.Duration.Seconds())
}

// boundedMethod keeps the method label to the standard methods.
func boundedMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// boundedFinish keeps the finish reason label to a known set: a provider
// could report anything.
func boundedFinish(r string) string {
	switch r {
	case api.FinishStop, api.FinishLength, api.FinishToolCalls, api.FinishError, "content_filter":
		return r
	}
	return "other"
}

// runLogCollector reads what the run log keeps at each scrape: one Stats
// call, which also forgets the runs past their retention, for three
// series.
type runLogCollector struct {
	stats          func() runlog.Stats
	runs, retained *prometheus.Desc
}

// WatchRunLog exports, from stats at each scrape, the streamed runs whose
// events this instance keeps (in progress, and ended ones kept to be
// resumed) and the ended runs' bytes, which -stream-retained-bytes bounds.
func WatchRunLog(reg prometheus.Registerer, stats func() runlog.Stats) error {
	return reg.Register(&runLogCollector{
		stats: stats,
		runs: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "stream_runs_kept"),
			"Streamed runs whose events this instance keeps: in progress (state running), and ended ones kept to be resumed (state ended).",
			[]string{"state"}, nil),
		retained: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "stream_retained_bytes"),
			"Bytes of the events of ended runs this instance keeps to be resumed; -stream-retained-bytes bounds them.", nil, nil),
	})
}

// Describe implements prometheus.Collector.
func (c *runLogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.runs
	ch <- c.retained
}

// Collect implements prometheus.Collector.
func (c *runLogCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(s.Running), "running")
	ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(s.Ended), "ended")
	ch <- prometheus.MustNewConstMetric(c.retained, prometheus.GaugeValue, float64(s.EndedBytes))
}

// Recalled implements turn.Observer.
func (m *Metrics) Recalled(typ string, took time.Duration, results int) {
	m.searchTypes.WithLabelValues(typ).Inc()
	m.recallLatency.Observe(took.Seconds())
	m.recallResults.Observe(float64(results))
}

// WorkingMemoryUpdated implements turn.Observer.
func (m *Metrics) WorkingMemoryUpdated(scope string) { m.memoryUpdates.WithLabelValues(scope).Inc() }

// Referred implements turn.Observer.
func (m *Metrics) Referred(locale string) { m.referrals.WithLabelValues(locale).Inc() }

// ResourceErased implements turn.Observer.
func (m *Metrics) ResourceErased() { m.erasures.Inc() }

// Embedded implements embedindex.Observer.
func (m *Metrics) Embedded(n int, took time.Duration) {
	m.embedded.Add(float64(n))
	m.embedCalls.WithLabelValues("ok").Inc()
	m.embedDuration.Observe(took.Seconds())
}

// EmbedFailed implements embedindex.Observer.
func (m *Metrics) EmbedFailed(retryable bool) {
	outcome := "refused"
	if retryable {
		outcome = "retried"
	}
	m.embedCalls.WithLabelValues(outcome).Inc()
}
