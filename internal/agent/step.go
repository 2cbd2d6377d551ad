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

	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
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
	stepType := api.StepInitial
	if i > 0 {
		stepType = api.StepToolResult
	}
	started := a.cfg.Now()
	ctx, span := a.cfg.Tracer.Start(ctx, "step", trace.WithAttributes(stepAttrs(i, stepType)...))
	defer span.End()
	defer func() { endStepSpan(span, err) }()
	// Tools started during the step stop when it ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if err := r.send(api.Event{Type: api.EventStepStart, Payload: api.StepStartPayload{StepIndex: i, StepType: stepType, MessageID: r.uiReply.ID}}); err != nil {
		return false, err
	}

	req := model.Request{System: r.system, Messages: r.convo, Tools: a.specs, MaxOutputTokens: r.maxOut}
	out := &answer{byID: map[string]*call{}}
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
	var merr error
	for part, perr := range a.cfg.Model.Stream(mctx, req) {
		if perr != nil {
			merr = perr
			break
		}
		if out.firstChunk == 0 {
			out.firstChunk = max(a.cfg.Now().Sub(mstart), time.Nanosecond)
		}
		// Tools start in the step's context: their spans are the model call's
		// siblings, not its children.
		if err := r.handlePart(ctx, part, out); err != nil {
			merr = err
			break
		}
		if out.fin != nil {
			break
		}
	}
	fin := out.fin
	if merr == nil && fin == nil {
		merr = &model.Error{Kind: model.KindUpstream, Provider: a.cfg.Model.Provider(), Message: "the model's stream ended before it finished"}
	}
	if merr == nil && ctx.Err() != nil {
		merr = ctx.Err()
	}
	r.endModelSpan(mspan, out, merr)
	a.cfg.Observer.ModelCalled(ctx, ModelCallStats{RunInfo: r.info(), Duration: a.cfg.Now().Sub(mstart), Finish: fin, Err: merr})
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
		reason = api.FinishToolCalls
	}
	st := api.Step{
		StepType: stepType, Text: out.text.String(), ReasoningText: out.reasoning.String(),
		Content: []api.ContentPart{}, Sources: []any{}, Files: []any{}, Reasoning: []any{},
		ToolCalls: []api.ToolCall{}, StaticToolCalls: []api.ToolCall{}, DynamicToolCalls: []api.ToolCall{},
		ToolResults: []api.ToolResult{}, StaticToolResults: []api.ToolResult{}, DynamicToolResults: []api.ToolResult{},
		Warnings: []api.Warning{}, FinishReason: reason, Usage: fin.Usage,
		Request:          api.RequestInfo{Body: model.Body(a.cfg.Model.ID(), req)},
		ProviderMetadata: providerMetadata(a.cfg.Model.Provider(), fin.ProviderMetadata),
		TraceID:          r.traceID,
	}
	if st.Text != "" {
		st.Content = append(st.Content, api.ContentPart{Type: "text", Text: st.Text})
	}
	if st.ReasoningText != "" {
		st.Reasoning = append(st.Reasoning, map[string]string{"type": "reasoning", "text": st.ReasoningText})
	}

	assistant := model.Message{Role: model.RoleAssistant, Content: st.Text}
	for _, c := range calls {
		assistant.ToolCalls = append(assistant.ToolCalls, model.ToolCall{ID: c.id, Name: c.name, Args: c.parsed})
	}
	added := []model.Message{assistant}
	if st.Text != "" {
		r.uiReply.Parts = append(r.uiReply.Parts, api.UIPart{Type: "text", Text: st.Text})
	}

	// Results are reported in call order, each as soon as it and the ones
	// before it are done; the tools themselves run concurrently.
	for _, c := range calls {
		select {
		case <-c.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		tc := api.ToolCall{ToolCallID: c.id, ToolName: c.name, Args: c.parsed, ProviderMetadata: map[string]any{}}
		tr, msg := toolOutcome(c)
		part := api.UIPart{Type: "tool-" + c.name, ToolCallID: c.id, Input: c.parsed, State: "output-available", Output: tr.Result}
		if c.err != nil {
			message := c.failure()
			w := api.Warning{Type: "tool-error", Message: message, ToolCallID: c.id, ToolName: c.name}
			st.Warnings = append(st.Warnings, w)
			r.warnings = append(r.warnings, w)
			part.State, part.Output, part.ErrorText = "output-error", nil, message
			if err := r.send(api.Event{Type: api.EventError, Payload: api.ToolErrorPayload{ToolCallID: c.id, ToolName: c.name},
				Error: &api.StreamError{Message: message, Code: api.CodeToolError}}); err != nil {
				return false, err
			}
		}
		if err := r.send(api.Event{Type: api.EventToolResult, Payload: tr}); err != nil {
			return false, err
		}
		st.ToolCalls = append(st.ToolCalls, tc)
		st.StaticToolCalls = append(st.StaticToolCalls, tc)
		st.ToolResults = append(st.ToolResults, tr)
		st.StaticToolResults = append(st.StaticToolResults, tr)
		r.calls = append(r.calls, tc)
		r.results = append(r.results, tr)
		added = append(added, msg)
		r.uiReply.Parts = append(r.uiReply.Parts, part)
	}

	r.total = r.total.Add(fin.Usage)
	st.TotalUsage = r.total
	st.Response = api.Response{
		ID: fin.ResponseID, Timestamp: timestamp(started), ModelID: a.cfg.Model.ID(),
		Headers: map[string]string{}, ModelMetadata: map[string]any{},
		Messages:   make([]api.ModelMessage, 0, len(added)),
		UIMessages: []api.UIMessage{cloneUI(r.uiReply)},
	}
	if st.Response.ID == "" {
		st.Response.ID = "resp-" + a.cfg.NewID()
	}
	for _, m := range added {
		st.Response.Messages = append(st.Response.Messages, modelMessage(m))
	}
	r.steps = append(r.steps, st)
	r.reply = append(r.reply, added...)
	r.convo = append(r.convo, added...)
	r.finish = reason
	span.SetAttributes(stepEndAttrs(reason)...)

	if err := r.send(api.Event{Type: api.EventStepFinish, Payload: api.StepFinishPayload{
		StepIndex: i, StepType: stepType, FinishReason: reason, Usage: fin.Usage}}); err != nil {
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
}

// handlePart turns one model part into events and adds it to out.
func (r *run) handlePart(ctx context.Context, p model.Part, out *answer) error {
	switch p.Kind {
	case model.PartText:
		if p.Text == "" {
			return nil
		}
		out.text.WriteString(p.Text)
		return r.send(api.Event{Type: api.EventText, Text: p.Text})
	case model.PartReasoning:
		out.reasoning.WriteString(p.Text)
		return nil
	case model.PartToolCallStart:
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
		if err := r.send(api.Event{Type: api.EventToolCallInputStreamingStart, Payload: api.ToolCallStreamingStartPayload{ToolCallID: id, ToolName: c.name}}); err != nil {
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

// endCall completes c's arguments, reports the call and starts its tool.
func (r *run) endCall(ctx context.Context, c *call) error {
	if err := r.send(api.Event{Type: api.EventToolCallInputStreamingEnd, Payload: api.ToolCallStreamingEndPayload{ToolCallID: c.id}}); err != nil {
		return err
	}
	c.parsed, c.argsErr = parseArgs(c.args.String())
	if err := r.send(api.Event{Type: api.EventToolCall, Payload: api.ToolCall{
		ToolCallID: c.id, ToolName: c.name, Args: c.parsed, ProviderMetadata: map[string]any{}}}); err != nil {
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
	return r.send(api.Event{Type: api.EventToolCallDelta, Payload: api.ToolCallDeltaPayload{ArgsTextDelta: delta, ToolCallID: c.id, ToolName: c.name}})
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
	t, ok := a.tools[c.name]
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

// toolOutcome is c's result as the API reports it and as the model sees it.
func toolOutcome(c *call) (api.ToolResult, model.Message) {
	tr := api.ToolResult{ToolCallID: c.id, ToolName: c.name, Result: c.result}
	if c.err != nil {
		// The model is told the call failed, in the same shape the API reports.
		tr.Result, _ = json.Marshal(map[string]string{"error": c.failure()})
		tr.IsError = true
	}
	return tr, model.Message{Role: model.RoleTool, ToolCallID: c.id, ToolName: c.name, Content: string(tr.Result), IsError: tr.IsError}
}

func providerMetadata(provider string, m map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	return map[string]any{provider: m}
}

func cloneUI(m api.UIMessage) api.UIMessage {
	m.Parts = append([]api.UIPart{}, m.Parts...)
	return m
}
