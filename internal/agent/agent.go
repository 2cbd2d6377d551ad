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
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
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

// Input is one run's request, already validated.
type Input struct {
	ThreadID    string
	ResourceID  string
	Personality Personality
	// History is the thread's earlier conversation, oldest first.
	History []model.Message
	// Messages are the request's new messages: user and assistant messages
	// join the conversation; system messages add to the instructions.
	Messages []api.Message
	// MaxSteps and MaxOutputTokens lower the agent's limits when positive.
	MaxSteps        int
	MaxOutputTokens int
}

// Result is a finished run.
type Result struct {
	// Response is the generate body.
	Response api.GenerateResponse
	// Reply is what the run added to the conversation, in order: assistant
	// messages and the tool messages that answer their calls.
	Reply []model.Message
}

// Emit receives the stream events of a run in order. An error stops the run.
type Emit func(api.Event) error

// RunError is a run that failed: the model failed, or the run was cancelled.
// The terminal events (error, run-finish) have been emitted when Emitted is
// true.
type RunError struct {
	// Code is the error event's code (api.CodeModelError, ...).
	Code string
	// Message is safe to show to a client.
	Message string
	Err     error
	// Usage counts the tokens the run used before it failed.
	Usage api.Usage
}

// ErrRunTimeout is the cause of a run context that ended because the run
// took longer than it may (context.WithTimeoutCause): the run then fails
// with code RUN_TIMEOUT rather than CANCELLED.
var ErrRunTimeout = errors.New("the run took longer than the longest a run may take")

func (e *RunError) Error() string { return e.Message + ": " + e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Run runs the agent on in, calling emit (which may be nil) for each event.
// On success it returns the result. On failure it still emits the terminal
// events (an error event, then run-finish) when it can, and returns a
// *RunError, or the emit error when the client went away.
func (a *Agent) Run(ctx context.Context, in Input, emit Emit) (*Result, error) {
	r := a.newRun(in, emit)
	ctx, span := a.startRunSpan(ctx, r)
	defer span.End()
	r.traceID = traceIDOf(span, a.cfg.NewID)

	a.cfg.Observer.RunStarted(ctx, r.info())
	res, err := r.loop(ctx, span)
	a.finish(ctx, span, r, err)
	return res, err
}

// run is the state of one Run.
type run struct {
	a        *Agent
	in       Input
	runID    string
	traceID  string
	started  time.Time
	emit     Emit
	emitErr  error
	maxSteps int
	maxOut   int

	system   string
	convo    []model.Message // what the model sees next
	reply    []model.Message
	steps    []api.Step
	total    api.Usage
	finish   string
	warnings []api.Warning
	calls    []api.ToolCall
	results  []api.ToolResult
	uiInput  []api.UIMessage
	uiReply  api.UIMessage
}

func (a *Agent) newRun(in Input, emit Emit) *run {
	r := &run{a: a, in: in, runID: a.cfg.NewID(), started: a.cfg.Now(), emit: emit,
		maxSteps: a.cfg.MaxSteps, maxOut: a.cfg.MaxOutputTokens}
	if in.MaxSteps > 0 && in.MaxSteps < r.maxSteps {
		r.maxSteps = in.MaxSteps
	}
	if in.MaxOutputTokens > 0 && (r.maxOut == 0 || in.MaxOutputTokens < r.maxOut) {
		r.maxOut = in.MaxOutputTokens
	}
	var extra []string
	r.convo = append(r.convo, in.History...)
	created := timestamp(r.started)
	for _, m := range in.Messages {
		if m.Role == api.RoleSystem {
			extra = append(extra, m.Content)
			continue
		}
		r.convo = append(r.convo, model.Message{Role: m.Role, Content: m.Content})
		id := m.ID
		if id == "" {
			id = a.cfg.NewID()
		}
		r.uiInput = append(r.uiInput, api.UIMessage{ID: id, Role: m.Role, Metadata: r.meta(created),
			Parts: []api.UIPart{{Type: "text", Text: m.Content}}})
	}
	r.system = Instructions(in.Personality, extra)
	r.uiReply = api.UIMessage{ID: a.cfg.NewID(), Role: api.RoleAssistant, Metadata: r.meta(created), Parts: []api.UIPart{}}
	return r
}

func (r *run) meta(created string) api.UIMetadata {
	return api.UIMetadata{CreatedAt: created, ThreadID: r.in.ThreadID, ResourceID: r.in.ResourceID}
}

// send emits ev unless an earlier emit failed; the first failure is kept and
// stops the run.
func (r *run) send(ev api.Event) error {
	if r.emitErr != nil {
		return r.emitErr
	}
	if r.emit == nil {
		return nil
	}
	ev.RunID = r.runID
	if err := r.emit(ev); err != nil {
		r.emitErr = fmt.Errorf("writing %s event: %w", ev.Type, err)
	}
	return r.emitErr
}

func (r *run) loop(ctx context.Context, span trace.Span) (*Result, error) {
	if err := r.send(api.Event{Type: api.EventStart, Payload: api.StartPayload{
		AgentID: api.AgentID, ThreadID: r.in.ThreadID, ResourceID: r.in.ResourceID,
		Personality: string(r.in.Personality), TraceID: r.traceID,
	}}); err != nil {
		return nil, err
	}
	for i := 0; i < r.maxSteps; i++ {
		more, err := r.step(ctx, i)
		if err != nil {
			return nil, r.fail(ctx, err)
		}
		if !more {
			break
		}
		if i == r.maxSteps-1 {
			r.warnings = append(r.warnings, api.Warning{Type: "max-steps",
				Message: fmt.Sprintf("the run stopped after %d steps, its maximum, before the model gave a final answer", r.maxSteps)})
		}
	}
	if err := r.send(api.Event{Type: api.EventRunFinish, Payload: api.RunFinishPayload{FinishReason: r.finish, Usage: r.total}}); err != nil {
		return nil, err
	}
	return &Result{Response: r.response(), Reply: r.reply}, nil
}

// fail ends a failed run with its terminal events and returns the error the
// caller gets.
func (r *run) fail(ctx context.Context, err error) error {
	if r.emitErr != nil {
		return r.emitErr
	}
	r.finish = api.FinishError
	re := &RunError{Code: api.CodeInternal, Message: "the run failed inside the service", Err: err, Usage: r.total}
	var me *model.Error
	switch {
	case errors.Is(context.Cause(ctx), ErrRunTimeout):
		re.Code, re.Message = api.CodeRunTimeout, "the run took longer than the longest a run may take, and was stopped"
	case ctx.Err() != nil:
		re.Code, re.Message = api.CodeCancelled, "the run was cancelled before it finished"
	case errors.As(err, &me):
		re.Code, re.Message = api.CodeModelError, me.Provider+" model failed: "+me.Message
	}
	if r.send(api.Event{Type: api.EventError, Error: &api.StreamError{Message: re.Message, Code: re.Code}}) == nil {
		_ = r.send(api.Event{Type: api.EventRunFinish, Payload: api.RunFinishPayload{FinishReason: api.FinishError, Usage: r.total}})
	}
	if r.emitErr != nil && ctx.Err() != nil {
		// The client is gone; the write failure says nothing new.
		r.emitErr = nil
	}
	return re
}

func (a *Agent) finish(ctx context.Context, span trace.Span, r *run, err error) {
	stats := RunStats{FinishReason: r.finish, Steps: len(r.steps), Usage: r.total, Duration: a.cfg.Now().Sub(r.started), Err: err}
	if err != nil && stats.FinishReason == "" {
		stats.FinishReason = api.FinishError
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
	if sc := span.SpanContext(); sc.IsValid() {
		attrs = append(attrs, slog.String("span_id", sc.SpanID().String()))
	}
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	a.cfg.Logger.LogAttrs(ctx, level, "run", attrs...)
}

func (r *run) info() RunInfo {
	return RunInfo{RunID: r.runID, Provider: r.a.cfg.Model.Provider(), Model: r.a.cfg.Model.ID(), Personality: string(r.in.Personality)}
}

// response builds the generate body from the finished steps.
func (r *run) response() api.GenerateResponse {
	last := r.steps[len(r.steps)-1]
	resp := last.Response
	resp.UIMessages = append(append([]api.UIMessage{}, r.uiInput...), r.uiReply)
	// The run's messages and text are its steps', in order: each step has
	// converted its own already.
	resp.Messages = make([]api.ModelMessage, 0, len(r.reply))
	var text strings.Builder
	for _, s := range r.steps {
		resp.Messages = append(resp.Messages, s.Response.Messages...)
		text.WriteString(s.Text)
	}
	return api.GenerateResponse{
		// The run's text is what the stream's text events concatenate to.
		Text:             text.String(),
		Usage:            r.total,
		TotalUsage:       r.total,
		Steps:            r.steps,
		FinishReason:     r.finish,
		Warnings:         nonNil(r.warnings),
		ProviderMetadata: last.ProviderMetadata,
		TraceID:          r.traceID,
		RunID:            r.runID,
		Request:          last.Request,
		Reasoning:        []any{},
		ToolCalls:        nonNil(r.calls),
		ToolResults:      nonNil(r.results),
		Sources:          []any{},
		Files:            []any{},
		Response:         resp,
		TripwireReason:   "",
	}
}

func modelMessage(m model.Message) api.ModelMessage {
	out := api.ModelMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, api.ToolCall{ToolCallID: c.ID, ToolName: c.Name, Args: c.Args, ProviderMetadata: map[string]any{}})
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
