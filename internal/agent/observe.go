package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// Observer is told what runs do, for metrics. Calls come from the run's
// goroutine and, for tools, from the tool's; implementations must be safe for
// concurrent use and must not block.
type Observer interface {
	RunStarted(ctx context.Context, run RunInfo)
	RunFinished(ctx context.Context, run RunInfo, stats RunStats)
	ModelCalled(ctx context.Context, call ModelCallStats)
	ToolCalled(ctx context.Context, call ToolCallStats)
}

// RunInfo identifies a run and the labels it is measured by.
type RunInfo struct {
	RunID       string
	Provider    string
	Model       string
	Personality string
}

// RunStats is how a run ended.
type RunStats struct {
	FinishReason string
	Steps        int
	Usage        model.Usage
	Cost         pricing.Cost
	Duration     time.Duration
	Err          error
	// Trip is why a processor stopped the run, nil when none did.
	Trip *Trip
}

// ModelCallStats is one model call. Finish is nil when the call failed.
type ModelCallStats struct {
	RunInfo
	Duration time.Duration
	Finish   *model.Finish
	// Cost is what the call's usage cost.
	Cost pricing.Cost
	Err  error
}

// ToolCallStats is one tool call.
type ToolCallStats struct {
	RunInfo
	// Tool is the tool's name, or "_OTHER" when the model called a tool the
	// agent does not have.
	Tool     string
	Duration time.Duration
	Err      error
}

type nopObserver struct{}

func (nopObserver) RunStarted(context.Context, RunInfo)            {}
func (nopObserver) RunFinished(context.Context, RunInfo, RunStats) {}
func (nopObserver) ModelCalled(context.Context, ModelCallStats)    {}
func (nopObserver) ToolCalled(context.Context, ToolCallStats)      {}

// otherTool is the tool label of a call to a tool the agent does not have:
// the name comes from the model, and metric labels must stay a bounded set.
const otherTool = "_OTHER"

// The span tree of a run, named and attributed after the OpenTelemetry GenAI
// semantic conventions:
//
//	invoke_agent companionAgent
//	  step                      (one per step)
//	    chat <model>            (the model call)
//	    execute_tool <tool>     (one per tool call)
//
// Message contents, tool arguments and tool results are recorded only when
// Config.TraceContent is set: they may hold personal data.

func (a *Agent) startRunSpan(ctx context.Context, r *run) (context.Context, trace.Span) {
	return a.cfg.Tracer.Start(ctx, "invoke_agent "+Name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(Name),
			semconv.GenAIAgentID(Name),
			semconv.GenAIProviderNameKey.String(a.cfg.Model.Provider()),
			semconv.GenAIRequestModel(a.cfg.Model.ID()),
			semconv.GenAIConversationID(r.in.ThreadID),
			attribute.String("companion.run.id", r.runID),
			attribute.String("companion.personality", string(r.in.Personality)),
		))
}

// traceIDOf is the run's traceId: the span's trace id when tracing is on,
// else a fresh random id of the same form, so the field is always useful.
func traceIDOf(span trace.Span, newID func() string) string {
	if sc := span.SpanContext(); sc.TraceID().IsValid() {
		return sc.TraceID().String()
	}
	return strings.ReplaceAll(newID(), "-", "")
}

func endRunSpan(span trace.Span, s RunStats) {
	span.SetAttributes(semconv.GenAIResponseFinishReasons(s.FinishReason), attribute.Int("companion.steps", s.Steps))
	tripAttrs(span, s.Trip)
	span.SetAttributes(usageAttrs(s.Usage)...)
	span.SetAttributes(attribute.Float64("companion.cost.usd", s.Cost.Total()))
	if s.Err != nil {
		span.SetStatus(codes.Error, s.Err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(s.Err)))
	}
}

// usageAttrs are the token counts of u; cached and reasoning tokens only
// when reported, as the conventions count them within input and output.
func usageAttrs(u model.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.GenAIUsageInputTokens(u.InputTokens), semconv.GenAIUsageOutputTokens(u.OutputTokens)}
	if u.CachedInputTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(u.CachedInputTokens))
	}
	if u.ReasoningTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(u.ReasoningTokens))
	}
	return attrs
}

func stepAttrs(i int, stepType StepKind) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int("companion.step.index", i), attribute.String("companion.step.type", string(stepType))}
}

func stepEndAttrs(reason string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIResponseFinishReasons(reason)}
}

// endStepSpan marks a failed step; its span ends with the step.
func endStepSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
}

func (r *run) startModelSpan(ctx context.Context, req model.Request) (context.Context, trace.Span) {
	m := r.a.cfg.Model
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(m.Provider()),
		semconv.GenAIRequestModel(m.ID()),
		semconv.GenAIRequestStream(true),
		semconv.GenAIConversationID(r.in.ThreadID),
	}
	if req.MaxOutputTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxOutputTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if r.a.cfg.TraceContent {
		attrs = append(attrs,
			semconv.GenAISystemInstructionsKey.String(jsonString([]genAIPart{{Type: "text", Content: req.System}})),
			semconv.GenAIInputMessagesKey.String(jsonString(genAIMessages(req.Messages))))
	}
	return r.a.cfg.Tracer.Start(ctx, "chat "+m.ID(),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func (r *run) endModelSpan(span trace.Span, out *answer, err error) {
	defer span.End()
	if out.firstChunk > 0 {
		span.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(out.firstChunk.Seconds()))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		return
	}
	fin := out.fin
	span.SetAttributes(semconv.GenAIResponseModel(r.a.cfg.Model.ID()), semconv.GenAIResponseFinishReasons(fin.Reason))
	span.SetAttributes(usageAttrs(fin.Usage)...)
	if fin.ResponseID != "" {
		span.SetAttributes(semconv.GenAIResponseID(fin.ResponseID))
	}
	if r.a.cfg.TraceContent {
		msg := genAIMessage{Role: model.RoleAssistant, Parts: []genAIPart{}, FinishReason: fin.Reason}
		if out.text.Len() > 0 {
			msg.Parts = append(msg.Parts, genAIPart{Type: "text", Content: out.text.String()})
		}
		for _, c := range out.calls {
			msg.Parts = append(msg.Parts, genAIPart{Type: "tool_call", ID: c.id, Name: c.name, Arguments: c.parsed})
		}
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(jsonString([]genAIMessage{msg})))
	}
}

func (r *run) startToolSpan(ctx context.Context, c *call, t Tool) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(c.name),
		semconv.GenAIToolCallID(c.id),
		semconv.GenAIToolType("function"),
	}
	if t != nil {
		attrs = append(attrs, semconv.GenAIToolDescription(t.Description()))
	}
	if r.a.cfg.TraceContent {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(c.parsed)))
	}
	return r.a.cfg.Tracer.Start(ctx, "execute_tool "+c.name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

func (r *run) endToolSpan(span trace.Span, c *call) {
	if c.err != nil {
		span.SetStatus(codes.Error, c.err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
	} else if r.a.cfg.TraceContent {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(string(c.result)))
	}
	span.End()
}

// genAIMessage and genAIPart are the message shapes of the GenAI
// conventions' gen_ai.input.messages and gen_ai.output.messages.
type genAIMessage struct {
	Role         string      `json:"role"`
	Parts        []genAIPart `json:"parts"`
	FinishReason string      `json:"finish_reason,omitempty"`
}

type genAIPart struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

func genAIMessages(ms []model.Message) []genAIMessage {
	out := make([]genAIMessage, 0, len(ms))
	for _, m := range ms {
		g := genAIMessage{Role: m.Role, Parts: []genAIPart{}}
		switch {
		case m.Role == model.RoleTool:
			res := json.RawMessage(m.Content)
			if !json.Valid(res) {
				res, _ = json.Marshal(m.Content)
			}
			g.Parts = append(g.Parts, genAIPart{Type: "tool_call_response", ID: m.ToolCallID, Result: res})
		case m.Content != "":
			g.Parts = append(g.Parts, genAIPart{Type: "text", Content: m.Content})
		}
		for _, c := range m.ToolCalls {
			g.Parts = append(g.Parts, genAIPart{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
		}
		out = append(out, g)
	}
	return out
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// errorType is a low-cardinality name for err, for error.type.
func errorType(err error) string {
	var me *model.Error
	var re *RunError
	switch {
	case errors.As(err, &re):
		return re.Kind.String()
	case errors.As(err, &me):
		return me.Kind.String()
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}
