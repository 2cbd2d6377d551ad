package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// call is one tool call of a step, from its first delta to its result.
type call struct {
	// id is the call's id in the API: the model's, or made up when the
	// model gave none.
	id, name string
	args     strings.Builder
	parsed   json.RawMessage
	argsErr  error
	done     chan struct{}   // closed when result or err is set
	result   json.RawMessage // the tool's result, encoded, when err is nil
	err      error
}

// step runs model call i and the tools it asks for. It reports whether the
// model asked for tools, so that another step should follow.
func (r *run) step(ctx context.Context, i int) (more bool, err error) {
	a := r.a
	stepType := StepInitial
	if i > 0 {
		stepType = StepToolResult
	}
	started := a.cfg.Now()
	ctx, span := a.cfg.Tracer.Start(ctx, "step", trace.WithAttributes(stepAttrs(i, stepType)...))
	defer span.End()
	defer func() { endStepSpan(span, err) }()
	// Tools started during the step stop when it ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if err := r.send(StepStarted{Index: i, Kind: stepType, MessageID: r.replyID}); err != nil {
		return false, err
	}

	req := model.Request{System: r.system, Messages: r.convo, Tools: r.specs, MaxOutputTokens: r.maxOut, Temperature: r.in.Temperature}
	out := &answer{byID: map[string]*call{}}
	if i == 0 && r.in.Preface != "" {
		out.text.WriteString(r.in.Preface)
		out.sent = len(r.in.Preface)
		if err := r.send(TextDelta{Text: r.in.Preface}); err != nil {
			return false, err
		}
	}
	// Tools still running when the step fails must not outlive it.
	defer func() {
		if err != nil {
			cancel()
			for _, c := range out.calls {
				if c.done != nil {
					<-c.done
				}
			}
		}
	}()

	mctx, mspan := r.startModelSpan(ctx, req)
	mstart := a.cfg.Now()
	merr := r.stream(ctx, mctx, req, out, mstart)
	return r.endStep(ctx, span, mspan, i, stepType, started, req, out, mstart, merr)
}

// stream streams the model's answer to req into out. It and endStep are
// functions of their own so that, while the model answers, the stack holds
// step's frame and stream's, not endStep's large one: an open stream keeps
// its run's stack as deep as it ever grew.
func (r *run) stream(ctx, mctx context.Context, req model.Request, out *answer, mstart time.Time) error {
	a := r.a
	for part, perr := range a.cfg.Model.Stream(mctx, req) {
		if perr != nil {
			return perr
		}
		if out.firstChunk == 0 {
			out.firstChunk = max(a.cfg.Now().Sub(mstart), time.Nanosecond)
		}
		// Tools start in the step's context: their spans are the model call's
		// siblings, not its children.
		if err := r.handlePart(ctx, part, out); err != nil {
			return err
		}
		if out.fin != nil || out.trip != nil {
			return nil
		}
	}
	return nil
}

// endStep ends step i once the model's answer to req is in out (or merr
// says why not): it waits for the tools, reports their results and the
// step, and reports whether another step should follow.
func (r *run) endStep(ctx context.Context, span, mspan trace.Span, i int, stepType StepKind, started time.Time,
	req model.Request, out *answer, mstart time.Time, merr error) (bool, error) {
	a := r.a
	if out.trip != nil && merr == nil {
		return false, r.endOutputTrip(ctx, mspan, i, stepType, req, out, mstart)
	}
	fin := out.fin
	if merr == nil && fin == nil {
		merr = &model.Error{Kind: model.KindUpstream, Provider: a.cfg.Model.Provider(), Message: "the model's stream ended before it finished"}
	}
	if merr == nil && ctx.Err() != nil {
		merr = ctx.Err()
	}
	r.endModelSpan(mspan, out, merr)
	var callCost pricing.Cost
	if fin != nil {
		callCost = a.costOf(fin.Usage)
	}
	a.cfg.Observer.ModelCalled(ctx, ModelCallStats{RunInfo: r.info(), Duration: a.cfg.Now().Sub(mstart), Finish: fin, Cost: callCost, Err: merr})
	if merr != nil {
		if r.emitErr != nil {
			return false, r.emitErr
		}
		return false, merr
	}

	// A provider may say "stop" while asking for tools; the calls decide.
	reason := fin.Reason
	calls := out.calls
	if len(calls) > 0 {
		reason = model.FinishToolCalls
	}
	st := Step{
		Index: i, Kind: stepType, Text: out.text.String(), Reasoning: out.reasoning.String(),
		FinishReason: reason, Usage: fin.Usage, Cost: callCost, Request: req, ModelID: a.cfg.Model.ID(),
		ResponseID: fin.ResponseID, Started: started,
		ProviderMetadata: providerMetadata(a.cfg.Model.Provider(), fin.ProviderMetadata),
	}
	if st.ResponseID == "" {
		st.ResponseID = "resp-" + a.cfg.NewID()
	}
	assistant := model.Message{Role: model.RoleAssistant, Content: st.Text}
	for _, c := range calls {
		assistant.ToolCalls = append(assistant.ToolCalls, model.ToolCall{ID: c.id, Name: c.name, Args: c.parsed})
	}
	st.Messages = []model.Message{assistant}
	st.Calls = assistant.ToolCalls

	// Results are reported in call order, each as soon as it and the ones
	// before it are done; the tools themselves run concurrently.
	for _, c := range calls {
		select {
		case <-c.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		tr, msg := toolOutcome(c)
		if tr.Failed() {
			w := Warning{Kind: "tool-error", Message: tr.Error, CallID: c.id, Tool: c.name}
			st.Warnings = append(st.Warnings, w)
			r.warnings = append(r.warnings, w)
			if err := r.send(ToolFailed{CallID: c.id, Tool: c.name, Message: tr.Error}); err != nil {
				return false, err
			}
		}
		if err := r.send(ToolReturned{Result: tr}); err != nil {
			return false, err
		}
		st.Results = append(st.Results, tr)
		st.Messages = append(st.Messages, msg)
	}

	r.total = r.total.Add(fin.Usage)
	r.cost = r.cost.Add(callCost)
	st.Total = r.total
	r.steps = append(r.steps, st)
	r.reply = append(r.reply, st.Messages...)
	r.convo = append(r.convo, st.Messages...)
	r.finish = reason
	span.SetAttributes(stepEndAttrs(reason)...)

	if err := r.send(StepFinished{Index: i, Kind: stepType, FinishReason: reason, Usage: fin.Usage, Cost: callCost}); err != nil {
		return false, err
	}
	return len(calls) > 0, nil
}

// answer is what one model call has streamed so far.
type answer struct {
	text, reasoning strings.Builder
	calls           []*call
	byID            map[string]*call // by the model's id; "" is the last call opened without one
	fin             *model.Finish    // set when the model finished
	firstChunk      time.Duration    // 0 until something came
	// With output processors: sent is how much of text is sent, the rest
	// held back (heldBack); trip is set when one tripped.
	sent int
	trip *Trip
}

// handlePart turns one model part into events and adds it to out.
func (r *run) handlePart(ctx context.Context, p model.Part, out *answer) error {
	switch p.Kind {
	case model.PartText:
		if p.Text == "" {
			return nil
		}
		out.text.WriteString(p.Text)
		if len(r.in.Output) == 0 {
			return r.send(TextDelta{Text: p.Text})
		}
		text := out.text.String()
		if out.trip = r.checkOutput(text, len(text)-len(p.Text)); out.trip != nil {
			return nil
		}
		return r.sendText(out, len(text)-heldBack(text, len(p.Text)))
	case model.PartReasoning:
		out.reasoning.WriteString(p.Text)
		return nil
	case model.PartToolCallStart:
		if err := r.sendText(out, out.text.Len()); err != nil {
			return err
		}
		id := p.ToolCallID
		if id == "" {
			id = "call_" + r.a.cfg.NewID()
		} else if _, dup := out.byID[id]; dup {
			return r.protocolError("the model opened tool call %q twice", id)
		}
		// A model that gives no ids continues the call it opened last.
		c := &call{id: id, name: p.ToolName}
		out.byID[p.ToolCallID] = c
		out.calls = append(out.calls, c)
		if err := r.send(ToolInputStarted{CallID: id, Tool: c.name}); err != nil {
			return err
		}
		if p.Text != "" {
			return r.argsDelta(c, p.Text)
		}
		return nil
	case model.PartToolCallDelta:
		c, ok := out.byID[p.ToolCallID]
		if !ok {
			return r.protocolError("the model sent arguments for unknown tool call %q", p.ToolCallID)
		}
		return r.argsDelta(c, p.Text)
	case model.PartToolCallEnd:
		c, ok := out.byID[p.ToolCallID]
		if !ok {
			return r.protocolError("the model closed unknown tool call %q", p.ToolCallID)
		}
		if c.done != nil {
			return r.protocolError("the model closed tool call %q twice", p.ToolCallID)
		}
		return r.endCall(ctx, c)
	case model.PartFinish:
		if p.Finish == nil {
			return r.protocolError("the model sent a finish without its reason")
		}
		if err := r.sendText(out, out.text.Len()); err != nil {
			return err
		}
		// Calls the model never closed are complete when it finishes.
		for _, c := range out.calls {
			if c.done == nil {
				if err := r.endCall(ctx, c); err != nil {
					return err
				}
			}
		}
		out.fin = p.Finish
		return nil
	}
	return nil
}

// sendText sends the step's text up to end that output processors held
// back (out.sent onwards); without them, the text is sent as it comes.
func (r *run) sendText(out *answer, end int) error {
	if len(r.in.Output) == 0 || end <= out.sent {
		return nil
	}
	text := out.text.String()[out.sent:end]
	out.sent = end
	return r.send(TextDelta{Text: text})
}

// endOutputTrip ends step i, which an output processor stopped: the text
// sent so far, then the trip's, is the step's; the model's call, cut
// short, reported no usage.
func (r *run) endOutputTrip(ctx context.Context, mspan trace.Span, i int, stepType StepKind, req model.Request, out *answer, mstart time.Time) error {
	a := r.a
	t := *out.trip
	mspan.SetAttributes(semconv.GenAIResponseFinishReasons(FinishTripped))
	mspan.End()
	a.cfg.Observer.ModelCalled(ctx, ModelCallStats{RunInfo: r.info(), Duration: a.cfg.Now().Sub(mstart), Finish: &model.Finish{Reason: FinishTripped}})
	shown := out.text.String()[:out.sent]
	if t.Text != "" {
		if shown != "" {
			t.Text = "\n\n" + t.Text // a paragraph of its own
		}
		if err := r.send(TextDelta{Text: t.Text}); err != nil {
			return err
		}
	}
	r.endTripped(i, stepType, t, shown+t.Text, req)
	return r.send(StepFinished{Index: i, Kind: stepType, FinishReason: FinishTripped})
}

// endCall completes c's arguments, reports the call and starts its tool.
func (r *run) endCall(ctx context.Context, c *call) error {
	if err := r.send(ToolInputEnded{CallID: c.id}); err != nil {
		return err
	}
	c.parsed, c.argsErr = parseArgs(c.args.String())
	if err := r.send(ToolCalled{Call: ToolCall{ID: c.id, Name: c.name, Args: c.parsed}}); err != nil {
		return err
	}
	r.startTool(ctx, c)
	return nil
}

func (r *run) argsDelta(c *call, delta string) error {
	if delta == "" {
		return nil
	}
	c.args.WriteString(delta)
	return r.send(ToolInputDelta{CallID: c.id, Tool: c.name, Delta: delta})
}

func (r *run) protocolError(format string, args ...any) error {
	return &model.Error{Kind: model.KindUpstream, Provider: r.a.cfg.Model.Provider(), Message: fmt.Sprintf(format, args...)}
}

// parseArgs checks that a call's arguments are a JSON object. Empty
// arguments mean no arguments.
func parseArgs(s string) (json.RawMessage, error) {
	// JSON's own whitespace only: anything else makes the text not JSON.
	s = strings.Trim(s, " \t\r\n")
	if s == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
		return json.RawMessage(`{}`), errors.New("the model sent arguments that are not a JSON object")
	}
	return json.RawMessage(s), nil
}

// startTool runs c in its own goroutine; c.done closes when it is over.
func (r *run) startTool(ctx context.Context, c *call) {
	c.done = make(chan struct{})
	a := r.a
	t, ok := r.tool(c.name)
	go func() {
		defer close(c.done)
		ctx, span := r.startToolSpan(ctx, c, t)
		started := a.cfg.Now()
		defer func() {
			if p := recover(); p != nil {
				a.cfg.Logger.ErrorContext(ctx, "tool panicked", slog.String("tool", c.name), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				c.result, c.err = nil, errors.New("the tool failed inside the service")
			}
			r.endToolSpan(span, c)
			if c.err != nil {
				// The client and the model get the tool's safe message; the
				// cause (an address, an upstream body) is for the log only.
				attrs := []slog.Attr{slog.String("tool", c.name), slog.String("tool_call_id", c.id), slog.String("error", c.err.Error())}
				if cause := errors.Unwrap(c.err); cause != nil {
					attrs = append(attrs, slog.String("cause", cause.Error()))
				}
				a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "tool call failed", attrs...)
			}
			name := c.name
			if !ok {
				name = otherTool
			}
			a.cfg.Observer.ToolCalled(ctx, ToolCallStats{RunInfo: r.info(), Tool: name, Duration: a.cfg.Now().Sub(started), Err: c.err})
		}()
		switch {
		case !ok:
			c.err = fmt.Errorf("no tool named %q is available", c.name)
		case c.argsErr != nil:
			c.err = c.argsErr
		default:
			c.result, c.err = runTool(ctx, t, c.parsed)
		}
	}()
}

// runTool runs t and encodes its result, once, for the API, the model and
// the span alike. A result that cannot be encoded fails the call.
func runTool(ctx context.Context, t Tool, args json.RawMessage) (json.RawMessage, error) {
	v, err := t.Run(ctx, args)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("its result could not be encoded: %w", err)
	}
	return b, nil
}

// failure is the message of a failed call, as the API reports it and as
// the model is told.
func (c *call) failure() string { return fmt.Sprintf("%s failed: %s", c.name, c.err) }

// toolOutcome is c's result as the run reports it and as the model sees it.
func toolOutcome(c *call) (ToolResult, model.Message) {
	tr := ToolResult{CallID: c.id, Tool: c.name, Output: c.result}
	if c.err != nil {
		// The model is told the call failed, in the same shape the API reports.
		tr.Error = c.failure()
		tr.Output, _ = json.Marshal(map[string]string{"error": tr.Error})
	}
	return tr, model.Message{Role: model.RoleTool, ToolCallID: c.id, ToolName: c.name, Content: string(tr.Output), IsError: tr.Failed()}
}

func providerMetadata(provider string, m map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	return map[string]any{provider: m}
}
