package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
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
	Usage        api.Usage
	Duration     time.Duration
	Err          error
}

// ModelCallStats is one model call. Finish is nil when the call failed.
type ModelCallStats struct {
	RunInfo
	Duration time.Duration
	Finish   *model.Finish
	Err      error
}

// ToolCallStats is one tool call.
type ToolCallStats struct {
	RunInfo
	Tool     string
	Duration time.Duration
	Err      error
}

type nopObserver struct{}

func (nopObserver) RunStarted(context.Context, RunInfo)            {}
func (nopObserver) RunFinished(context.Context, RunInfo, RunStats) {}
func (nopObserver) ModelCalled(context.Context, ModelCallStats)    {}
func (nopObserver) ToolCalled(context.Context, ToolCallStats)      {}

// The span tree of a run, named and attributed after the OpenTelemetry GenAI
// semantic conventions:
//
//	invoke_agent companionAgent
//	  step                      (one per step)
//	    chat <model>            (the model call)
//	    execute_tool <tool>     (one per tool call)

func (a *Agent) startRunSpan(ctx context.Context, r *run) (context.Context, trace.Span) {
	return a.cfg.Tracer.Start(ctx, "invoke_agent "+api.AgentID,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(api.AgentID),
			semconv.GenAIAgentID(api.AgentID),
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

func endRunSpan(span trace.Span, r *run, s RunStats) {
	span.SetAttributes(
		semconv.GenAIResponseFinishReasons(s.FinishReason),
		semconv.GenAIUsageInputTokens(s.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(s.Usage.OutputTokens),
		attribute.Int("companion.steps", s.Steps),
	)
	if s.Err != nil {
		span.SetStatus(codes.Error, s.Err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(s.Err)))
	}
}

func stepAttrs(i int, stepType string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int("companion.step.index", i), attribute.String("companion.step.type", stepType)}
}

func stepEndAttrs(reason string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIResponseFinishReasons(reason)}
}

func startModelSpan(ctx context.Context, tr trace.Tracer, m model.Model, req model.Request) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(m.Provider()),
		semconv.GenAIRequestModel(m.ID()),
	}
	if req.MaxOutputTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxOutputTokens))
	}
	return tr.Start(ctx, "chat "+m.ID(),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func endModelSpan(span trace.Span, fin *model.Finish, err error) {
	defer span.End()
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		return
	}
	span.SetAttributes(
		semconv.GenAIResponseFinishReasons(fin.Reason),
		semconv.GenAIUsageInputTokens(fin.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(fin.Usage.OutputTokens),
	)
	if fin.ResponseID != "" {
		span.SetAttributes(semconv.GenAIResponseID(fin.ResponseID))
	}
}

func startToolSpan(ctx context.Context, tr trace.Tracer, c *call) (context.Context, trace.Span) {
	return tr.Start(ctx, "execute_tool "+c.name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(c.name),
			semconv.GenAIToolCallID(c.id),
			semconv.GenAIToolType("function"),
		))
}

func endToolSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
	}
	span.End()
}

// errorType is a low-cardinality name for err, for error.type.
func errorType(err error) string {
	var me *model.Error
	var re *RunError
	switch {
	case errors.As(err, &re) && re.Code != "":
		return re.Code
	case errors.As(err, &me):
		return me.Kind.String()
	}
	return "_OTHER"
}
