package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/requestid"
)

// LogHandler wraps h so that a record logged with a context that holds a
// span carries the span's trace_id and span_id, tying each log line to its
// trace, and one logged within a request its request_id. Records that
// already name a trace_id keep theirs.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ next slog.Handler }

func (h traceHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	cloned := false
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !hasAttr(r, "trace_id") {
		r = r.Clone()
		cloned = true
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	if id := requestid.From(ctx); id != "" {
		if !cloned {
			r = r.Clone()
		}
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.next.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.next.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.next.WithGroup(name)}
}

func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
