// Package telemetrytest reads the spans a test recorded with the SDK's
// in-memory exporter.
package telemetrytest

import (
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Attrs are the attributes of s by key.
func Attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// Tree renders spans as indented "name (kind)" lines, with " [error:
// description]" on those with an error status, so that a test can compare
// the whole shape at once. It starts from the roots: spans whose parent is
// not among spans. Children come in start order, except that tool calls,
// which run concurrently and may start in any order, come by call id.
func Tree(spans tracetest.SpanStubs) string {
	have := map[trace.SpanID]bool{}
	for _, s := range spans {
		have[s.SpanContext.SpanID()] = true
	}
	children := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if have[s.Parent.SpanID()] {
			children[s.Parent.SpanID()] = append(children[s.Parent.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(list []tracetest.SpanStub, depth int)
	walk = func(list []tracetest.SpanStub, depth int) {
		sort.SliceStable(list, func(i, j int) bool {
			ci, cj := Attrs(list[i])["gen_ai.tool.call.id"].AsString(), Attrs(list[j])["gen_ai.tool.call.id"].AsString()
			if ci != "" && cj != "" {
				return ci < cj
			}
			return list[i].StartTime.Before(list[j].StartTime)
		})
		for _, s := range list {
			b.WriteString(strings.Repeat("  ", depth) + s.Name + " (" + s.SpanKind.String() + ")")
			if s.Status.Code == codes.Error {
				b.WriteString(" [error: " + s.Status.Description + "]")
			}
			b.WriteString("\n")
			walk(children[s.SpanContext.SpanID()], depth+1)
		}
	}
	walk(roots, 0)
	return b.String()
}
