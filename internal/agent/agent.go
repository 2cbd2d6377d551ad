// Package agent runs companionAgent: the loop that sends the conversation to
// the model, runs the tools it asks for (concurrently), sends the results
// back, and repeats up to a maximum number of steps. A run is reported twice:
// as a sequence of stream events, in order, and as the generate body at the
// end. Transport stays out: the HTTP layer decides how events are written.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// Tool is something the model may call.
type Tool interface {
	// Name is how the model calls it.
	Name() string
	// Description tells the model what it is for.
	Description() string
	// Parameters is the JSON Schema of its arguments.
	Parameters() json.RawMessage
	// Run executes one call. Its error text says the cause for a person to
	// read, without the tool's name (the agent adds it).
	Run(ctx context.Context, args json.RawMessage) (any, error)
}

// Defaults of Config.
const (
	DefaultMaxSteps = 5
)

// Config holds an Agent's dependencies and limits.
type Config struct {
	Model model.Model
	Tools []Tool
	// MaxSteps bounds the model calls of a run; 0 means DefaultMaxSteps.
	MaxSteps int
	// MaxOutputTokens caps each model call; 0 leaves it to the model.
	MaxOutputTokens int
	// Prices turns usage into cost; nil counts no cost.
	Prices *pricing.Table
	// Tracer makes the run, step, model and tool spans; nil makes none.
	Tracer trace.Tracer
	// TraceContent records instructions, messages, tool arguments and tool
	// results in spans. Off by default: they may hold personal data.
	TraceContent bool
	// Observer is told about runs, model calls and tool calls; nil is none.
	Observer Observer
	// Logger gets one line per run; nil discards.
	Logger *slog.Logger
	// Now and NewID are the clock and the id source; tests fix them.
	Now   func() time.Time
	NewID func() string
}

// Agent runs conversations. It is safe for concurrent use.
type Agent struct {
	cfg   Config
	tools map[string]Tool
	specs []model.ToolSpec
}

// New checks cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: no model")
	}
	if cfg.MaxSteps < 0 || cfg.MaxOutputTokens < 0 {
		return nil, errors.New("agent: limits must not be negative")
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return uuid.NewString() }
	}
	a := &Agent{cfg: cfg, tools: make(map[string]Tool, len(cfg.Tools))}
	for _, t := range cfg.Tools {
		if _, dup := a.tools[t.Name()]; dup {
			return nil, fmt.Errorf("agent: two tools named %q", t.Name())
		}
		a.tools[t.Name()] = t
		a.specs = append(a.specs, model.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()})
	}
	return a, nil
}

// Tools describes the agent's own tools, in the order they were given: what
// every run offers the model before a turn adds its own.
func (a *Agent) Tools() []model.ToolSpec { return slices.Clone(a.specs) }

// RoleSystem is the role of a request message that adds to the
// instructions instead of joining the conversation.
const RoleSystem = "system"

// Message is one message of a request: roles model.RoleUser and
// model.RoleAssistant join the conversation, RoleSystem adds to the
// instructions. ID is the client's, or "" for one to be made.
type Message struct {
	ID      string
	Role    string
	Content string
}

// Input is one run's request, already validated.
type Input struct {
	// RunID names the run; "" makes one up.
	RunID       string
	ThreadID    string
	ResourceID  string
	Personality Personality
	// History is the thread's earlier conversation, oldest first.
	History []model.Message
	// Messages are the request's new messages.
	Messages []Message
	// MaxSteps and MaxOutputTokens lower the agent's limits when positive.
	MaxSteps        int
	MaxOutputTokens int
	// Temperature is the model's sampling temperature for the run; nil
	// leaves it to the model.
	Temperature *float64
	// Context is what the service knows that the model should (what is
	// kept about the user, earlier conversations recalled): blocks shown
	// after the instructions, in order.
	Context []string
	// Tools are offered in this run besides the agent's own (a tool bound
	// to the run's thread and resource); a name may not repeat one of them.
	Tools []Tool
	// Notices are told to the user with the reply (RunStarted, Result).
	Notices []Notice
	// Trip, when set, is an input processor's: the run does not call the
	// model, and its reply is Trip.Text (tripwire.go).
	Trip *Trip
	// Output checks the reply's text as it streams (tripwire.go).
	Output []OutputProcessor
	// Preface, when set, opens the reply: the service's words (a crisis
	// referral), sent before the model's and part of the first step's
	// text, never left to the model.
	Preface string
	// Locale is the user's (a BCP 47 tag, "" when unknown), for the texts
	// the user is shown; Minor is set when the user is known to be a minor.
	Locale string
	Minor  bool
}

// ErrRunTimeout is the cause of a run context that ended because the run
// took longer than it may (context.WithTimeoutCause): the run then fails
// with FailedTimeout rather than FailedCancelled.
var ErrRunTimeout = errors.New("the run took longer than the longest a run may take")

// Run runs the agent on in, calling emit (which may be nil) for each event,
// and returns the finished run. A run that fails after it started returns a
// *RunError, or the emit error when emit failed.
func (a *Agent) Run(ctx context.Context, in Input, emit Emit) (*Result, error) {
	r := a.newRun(in, emit)
	ctx, span := a.startRunSpan(ctx, r)
	defer span.End()
	r.traceID = traceIDOf(span, a.cfg.NewID)

	a.cfg.Observer.RunStarted(ctx, r.info())
	res, err := r.loop(ctx)
	a.finish(ctx, span, r, err)
	return res, err
}

// run is the state of one Run.
type run struct {
	a        *Agent
	in       Input
	runID    string
	traceID  string
	replyID  string
	started  time.Time
	emit     Emit
	emitErr  error
	maxSteps int
	maxOut   int

	system   string
	specs    []model.ToolSpec // the tools on offer
	convo    []model.Message  // what the model sees next
	input    []Message
	reply    []model.Message
	steps    []Step
	total    model.Usage
	cost     pricing.Cost
	finish   string
	warnings []Warning
	// trip is set when a processor stopped the run.
	trip *Trip
}

func (a *Agent) newRun(in Input, emit Emit) *run {
	r := &run{a: a, in: in, runID: in.RunID, started: a.cfg.Now(), emit: emit,
		maxSteps: a.cfg.MaxSteps, maxOut: a.cfg.MaxOutputTokens}
	if r.runID == "" {
		r.runID = a.cfg.NewID()
	}
	if in.MaxSteps > 0 && in.MaxSteps < r.maxSteps {
		r.maxSteps = in.MaxSteps
	}
	if in.MaxOutputTokens > 0 && (r.maxOut == 0 || in.MaxOutputTokens < r.maxOut) {
		r.maxOut = in.MaxOutputTokens
	}
	var extra []string
	r.convo = append(r.convo, in.History...)
	for _, m := range in.Messages {
		if m.Role == RoleSystem {
			extra = append(extra, m.Content)
			continue
		}
		r.convo = append(r.convo, model.Message{Role: m.Role, Content: m.Content})
		if m.ID == "" {
			m.ID = a.cfg.NewID()
		}
		r.input = append(r.input, m)
	}
	r.system = withContext(Instructions(in.Personality, extra), in.Context)
	r.specs = a.specs
	if len(in.Tools) > 0 {
		r.specs = slices.Clip(a.specs)
		for _, t := range in.Tools {
			r.specs = append(r.specs, model.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()})
		}
	}
	r.replyID = a.cfg.NewID()
	return r
}

// withContext is system followed by each block of context that is not
// blank, after an empty line: built at once, for the blocks (working
// memory, recalled messages) are a few kilobytes every turn.
func withContext(system string, context []string) string {
	size := len(system)
	for _, c := range context {
		size += len("\n\n") + len(c)
	}
	if size == len(system) {
		return system
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(system)
	for _, c := range context {
		if c = strings.TrimSpace(c); c != "" {
			b.WriteString("\n\n")
			b.WriteString(c)
		}
	}
	return b.String()
}

// tool is the tool named name that the run offers: the agent's, or one of
// its input's.
func (r *run) tool(name string) (Tool, bool) {
	if t, ok := r.a.tools[name]; ok {
		return t, true
	}
	for _, t := range r.in.Tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// send emits ev unless an earlier emit failed; the first failure is kept and
// stops the run.
func (r *run) send(ev Event) error {
	if r.emitErr != nil {
		return r.emitErr
	}
	if r.emit == nil {
		return nil
	}
	if err := r.emit(ev); err != nil {
		r.emitErr = fmt.Errorf("writing %T: %w", ev, err)
	}
	return r.emitErr
}

func (r *run) loop(ctx context.Context) (*Result, error) {
	if err := r.send(RunStarted{RunID: r.runID, ThreadID: r.in.ThreadID, ResourceID: r.in.ResourceID,
		Personality: r.in.Personality, TraceID: r.traceID, MessageID: r.replyID, Notices: r.in.Notices}); err != nil {
		return nil, err
	}
	if r.in.Trip != nil {
		if err := r.tripped(*r.in.Trip); err != nil {
			return nil, err
		}
		return r.result(), nil
	}
	for i := 0; i < r.maxSteps && r.trip == nil; i++ {
		more, err := r.step(ctx, i)
		if err != nil {
			return nil, r.fail(ctx, err)
		}
		if !more {
			break
		}
		if i == r.maxSteps-1 {
			r.warnings = append(r.warnings, Warning{Kind: "max-steps",
				Message: fmt.Sprintf("the run stopped after %d steps, its maximum, before the model gave a final answer", r.maxSteps)})
		}
	}
	return r.result(), nil
}

// fail is the error of a failed run.
func (r *run) fail(ctx context.Context, err error) error {
	if r.emitErr != nil && ctx.Err() == nil {
		return r.emitErr
	}
	r.finish = model.FinishError
	re := &RunError{Kind: FailedInternal, Err: err, Usage: r.total, Cost: r.cost}
	var me *model.Error
	switch {
	case errors.Is(context.Cause(ctx), ErrRunTimeout):
		re.Kind = FailedTimeout
	case ctx.Err() != nil:
		re.Kind = FailedCancelled
	case errors.As(err, &me):
		re.Kind = FailedModel
	}
	return re
}

func (a *Agent) finish(ctx context.Context, span trace.Span, r *run, err error) {
	stats := RunStats{FinishReason: r.finish, Steps: len(r.steps), Usage: r.total, Cost: r.cost, Duration: a.cfg.Now().Sub(r.started), Err: err, Trip: r.trip}
	if err != nil && stats.FinishReason == "" {
		stats.FinishReason = model.FinishError
	}
	endRunSpan(span, stats)
	a.cfg.Observer.RunFinished(ctx, r.info(), stats)
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("run_id", r.runID), slog.String("thread_id", r.in.ThreadID),
		slog.String("trace_id", r.traceID), slog.String("personality", string(r.in.Personality)),
		slog.String("model", a.cfg.Model.ID()), slog.String("finish_reason", stats.FinishReason),
		slog.Int("steps", stats.Steps), slog.Int("input_tokens", r.total.InputTokens),
		slog.Int("output_tokens", r.total.OutputTokens), slog.Int("reasoning_tokens", r.total.ReasoningTokens),
		slog.Int("cached_input_tokens", r.total.CachedInputTokens), slog.Duration("duration", stats.Duration),
	}
	if r.trip != nil {
		attrs = append(attrs, slog.String("tripwire_processor", r.trip.Processor), slog.String("tripwire_code", r.trip.Code))
	}
	if sc := span.SpanContext(); sc.IsValid() {
		attrs = append(attrs, slog.String("span_id", sc.SpanID().String()))
	}
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	a.cfg.Logger.LogAttrs(ctx, level, "run", attrs...)
}

// costOf is what u cost on the agent's model.
func (a *Agent) costOf(u model.Usage) pricing.Cost {
	if a.cfg.Prices == nil {
		return pricing.Cost{}
	}
	return a.cfg.Prices.Cost(a.cfg.Model.Provider(), a.cfg.Model.ID(), u)
}

func (r *run) info() RunInfo {
	return RunInfo{RunID: r.runID, Provider: r.a.cfg.Model.Provider(), Model: r.a.cfg.Model.ID(), Personality: string(r.in.Personality)}
}

// result is the finished run.
func (r *run) result() *Result {
	return &Result{
		RunID: r.runID, TraceID: r.traceID, ThreadID: r.in.ThreadID, ResourceID: r.in.ResourceID,
		Personality: r.in.Personality, Started: r.started, Steps: r.steps, FinishReason: r.finish,
		Usage: r.total, Cost: r.cost, Warnings: r.warnings, ReplyID: r.replyID, Input: r.input, Reply: r.reply,
		Notices: r.notices(), Trip: r.trip,
	}
}

// notices are the input's notices, then the trip's.
func (r *run) notices() []Notice {
	if r.trip == nil || r.trip.Notice == nil {
		return r.in.Notices
	}
	return append(slices.Clip(r.in.Notices), *r.trip.Notice)
}
