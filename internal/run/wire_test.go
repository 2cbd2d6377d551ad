package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// written are the records of testdata/records-v*.jsonl, in order: every
// kind of record, as four runs wrote them (one that called tools and
// finished, one the model failed, one cancelled, one the quota refused).
// Each file holds them in its format; records-v1.jsonl was written by the
// service before its records had a format of their own.
func written() []*Record {
	step0 := agent.StepFinished{Index: 0, Kind: agent.StepInitial, FinishReason: model.FinishToolCalls,
		Usage: model.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, ReasoningTokens: 5, CachedInputTokens: 64},
		Cost:  pricing.Cost{Input: 0.00025, CachedInput: 1e-07, Output: 0.0002}}
	events := []agent.Event{
		agent.RunStarted{RunID: "run-1", ThreadID: "thread-<1>", ResourceID: "user-&-1", Personality: agent.Guru, TraceID: "0123456789abcdef0123456789abcdef", MessageID: "msg-1"},
		agent.StepStarted{Index: 0, Kind: agent.StepInitial, MessageID: "msg-1"},
		agent.TextDelta{Text: "Bonjour, \"mer\" <b>&</b>\n\u2028 🌊 é"},
		agent.ToolInputStarted{CallID: "call-1", Tool: "weatherTool"},
		agent.ToolInputDelta{CallID: "call-1", Tool: "weatherTool", Delta: `{"location":"Ber`},
		agent.ToolInputEnded{CallID: "call-1"},
		agent.ToolCalled{Call: agent.ToolCall{ID: "call-1", Name: "weatherTool", Args: json.RawMessage(`{"location":"Berlin"}`)}},
		agent.ToolFailed{CallID: "call-2", Tool: "weatherTool", Message: "the forecast service did not answer"},
		agent.ToolReturned{Result: agent.ToolResult{CallID: "call-2", Tool: "weatherTool", Output: json.RawMessage(`{"error":"the forecast service did not answer"}`), Error: "the forecast service did not answer"}},
		agent.ToolReturned{Result: agent.ToolResult{CallID: "call-1", Tool: "weatherTool", Output: json.RawMessage(`{"temperature":3.2,"conditions":"Overcast","location":"Berlin"}`)}},
		step0,
		agent.StepStarted{Index: 1, Kind: agent.StepToolResult, MessageID: "msg-1"},
		agent.TextDelta{Text: " word"},
		agent.StepFinished{Index: 1, Kind: agent.StepToolResult, FinishReason: model.FinishStop,
			Usage: model.Usage{InputTokens: 140, OutputTokens: 1, TotalTokens: 141}, Cost: pricing.Cost{Input: 0.00035, Output: 0.00001}},
	}
	var recs []*Record
	add := func(evs ...agent.Event) {
		for _, ev := range evs {
			recs = append(recs, recordOf(ev))
		}
	}
	failed := func(f Failed) {
		recs = append(recs, &Record{Failed: &f}, &Record{Finished: &Finished{Reason: model.FinishError}})
	}
	add(events...)
	recs = append(recs, &Record{Finished: &Finished{Reason: model.FinishStop,
		Usage: model.Usage{InputTokens: 240, OutputTokens: 21, TotalTokens: 261, ReasoningTokens: 5, CachedInputTokens: 64},
		Cost:  pricing.Cost{Input: 0.0006, CachedInput: 1e-07, Output: 0.00021}}})
	add(events[:3]...)
	failed(Failed{Code: "MODEL_ERROR", Message: "cohere model failed: overloaded", Kind: "unavailable", Error: "cohere model failed: overloaded", RetryAfter: 3})
	add(events[:2]...)
	failed(Failed{Code: "CANCELLED", Message: "the run was cancelled before it finished", Kind: "unavailable",
		Error: "the run was cancelled before it finished: the server is shutting down or the request was withdrawn"})
	failed(Failed{Code: "INTERNAL_ERROR", Message: `resource "user-1" used its token quota`, Kind: "rate_limited", Error: `resource "user-1" used its token quota`, RetryAfter: 90})
	return recs
}

// lines are the records of testdata/records-v<format>.jsonl.
func lines(t *testing.T, format int) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("records-v%d.jsonl", format)))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// TestEveryFormatDecodes: the records written in each format this version
// reads, the service's before formats had a number among them, decode to
// the records written. An instance reads them from another during a
// rolling deploy, and from Redis for as long as a run's log is kept.
func TestEveryFormatDecodes(t *testing.T) {
	want := written()
	for format := 1; format <= Version; format++ {
		t.Run(fmt.Sprintf("v%d", format), func(t *testing.T) {
			got := lines(t, format)
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			var dec Decoder
			for i, data := range got {
				rec, err := dec.Decode(data)
				if err != nil {
					t.Fatalf("record %d, %s: %v", i+1, data, err)
				}
				if !reflect.DeepEqual(rec, want[i]) {
					t.Fatalf("record %d, %s, decodes to\n%s\nwant\n%s", i+1, data, show(rec), show(want[i]))
				}
			}
		})
	}
}

// TestTheFormatIsPinned: the records encode, byte for byte, as the file of
// format Version holds them. Changing a byte is changing the format (see
// wire.go).
func TestTheFormatIsPinned(t *testing.T) {
	want := lines(t, Version)
	enc := new(encoder)
	for i, rec := range written() {
		got, err := enc.encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("record %d encodes as\n%s\nwant\n%s", i+1, got, want[i])
		}
	}
}

// TestEveryFieldGoesThrough: every field of every kind of record, set, is
// decoded as it was encoded. A field added to an event or to a record, and
// not to its format, fails here.
func TestEveryFieldGoesThrough(t *testing.T) {
	enc, dec := new(encoder), new(Decoder)
	kinds := reflect.TypeFor[Record]().NumField()
	// Twice, so that each kind follows every other through the same encoder
	// and decoder.
	for i := range 2 * kinds {
		var rec Record
		field := reflect.ValueOf(&rec).Elem().Field(i % kinds)
		n := 0
		fill(t, field, &n)
		data, err := enc.encode(&rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dec.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(got, &rec) {
			t.Fatalf("%s decodes to\n%s\nwant\n%s", data, show(got), show(&rec))
		}
	}
}

// fill sets every field v holds, each to a value of its own.
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Struct:
		exported := 0
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				exported++
				fill(t, v.Field(i), n)
			}
		}
		if exported == 0 {
			t.Fatalf("fill does not know how to fill a %s", v.Type())
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes(fmt.Appendf(nil, `{"n":%d}`, *n))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), n)
	default:
		t.Fatalf("fill does not know how to fill a %s", v.Type())
	}
}

// TestANewerFormatIsRefused: a record of a format newer than Version is
// ErrUnknownFormat, whether or not it would decode; format 1 may say so.
func TestANewerFormatIsRefused(t *testing.T) {
	for _, data := range []string{
		`{"v":2,"text":{"Text":"a newer text"}}`,
		`{"v":2,"text":"a newer shape"}`,
		`{"text":{"Text":"x"},"v":3}`,
		`{"v":-1}`,
	} {
		if rec, err := Decode([]byte(data)); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%s decodes to %s, %v; want %v", data, show(rec), err, ErrUnknownFormat)
		}
	}
	rec, err := Decode([]byte(`{"v":1,"text":{"Text":"x"}}`))
	if err != nil || rec.Text == nil || rec.Text.Text != "x" {
		t.Fatalf("a record saying format 1 decodes to %s, %v", show(rec), err)
	}
}

// TestAnUnknownKindDecodesEmpty: a kind of record this version does not
// know, within its format, decodes to a record with no field set.
func TestAnUnknownKindDecodesEmpty(t *testing.T) {
	rec, err := Decode([]byte(`{"reasoning":{"Text":"hmm"}}`))
	if err != nil || !reflect.DeepEqual(rec, &Record{}) {
		t.Fatalf("decodes to %s, %v", show(rec), err)
	}
	if rec.Event() != nil || rec.Opening() {
		t.Fatal("an empty record holds an event")
	}
}

// TestNotARecord: bytes that are not a record do not decode.
func TestNotARecord(t *testing.T) {
	for _, data := range []string{``, `[]`, `{"text":`, `{"finished":{"usage":"none"}}`} {
		if _, err := Decode([]byte(data)); err == nil || errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%q: %v, want a decoding error", data, err)
		}
	}
}

// show is rec with the values of its pointers.
func show(rec *Record) string {
	if rec == nil {
		return "nil"
	}
	v := reflect.ValueOf(rec).Elem()
	var fields []string
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsNil() {
			fields = append(fields, fmt.Sprintf("%s: %+v", v.Type().Field(i).Name, f.Elem().Interface()))
		}
	}
	if fields == nil {
		return "{}"
	}
	return fmt.Sprint(slices.Clip(fields))
}
