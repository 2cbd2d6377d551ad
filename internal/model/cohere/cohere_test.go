package cohere_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	fakecohere "github.com/companionhq/companion/fakes/cohere"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/cohere"
	"github.com/companionhq/companion/internal/model/modeltest"
	_ "github.com/companionhq/companion/internal/testkit"
)

func newModel(t *testing.T, baseURL string) model.Model {
	t.Helper()
	return newModelWith(t, baseURL, nil)
}

func newModelWith(t *testing.T, baseURL string, client *http.Client) model.Model {
	t.Helper()
	m, err := cohere.New(cohere.Config{Model: "command-a-03-2025", APIKey: modeltest.Key, BaseURL: baseURL, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// harness runs the suite against the fake Cohere, which bills as the real
// API does: the usage is the billed units, and the token counts, larger,
// are in the provider metadata.
var harness = modeltest.Harness{
	Provider: cohere.Provider,
	Fake: func(opts upstream.Options) (http.Handler, *upstream.Core) {
		s := fakecohere.New(opts)
		return s, s.Core
	},
	New: newModelWith,
	Usage: func(req model.Request) model.Usage {
		b := fakecohere.Bill(req)
		return model.Usage{InputTokens: b.BilledInput, OutputTokens: b.BilledOutput, TotalTokens: b.BilledInput + b.BilledOutput}
	},
	CheckFinish: func(req model.Request, fin *model.Finish) error {
		b := fakecohere.Bill(req)
		want := map[string]any{
			"finishReason": fin.ProviderMetadata["finishReason"],
			"billedUnits":  map[string]any{"inputTokens": b.BilledInput, "outputTokens": b.BilledOutput},
			"tokens":       map[string]any{"inputTokens": b.Input, "outputTokens": b.Output},
		}
		if b.Cached > 0 {
			want["cachedTokens"] = b.Cached
		}
		if !reflect.DeepEqual(fin.ProviderMetadata, want) {
			return fmt.Errorf("provider metadata %v, want %v", fin.ProviderMetadata, want)
		}
		if b.Input <= b.BilledInput {
			return fmt.Errorf("the fake's token count %d is not above its billed input %d", b.Input, b.BilledInput)
		}
		return nil
	},
}

func TestConformance(t *testing.T) { modeltest.Run(t, harness) }

// TestConformanceOnCassettes runs the suite on cassettes recorded from the
// fake (MODELTEST_RECORD=1 records them again), without any server.
func TestConformanceOnCassettes(t *testing.T) {
	modeltest.RunCassettes(t, harness, "testdata/cassettes")
}

// TestDoneBeforeMessageEnd: a [DONE] with no message-end is a cut stream,
// retryable like a body that ends early when no part was sent yet, and not
// once the answer began.
func TestDoneBeforeMessageEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		temporary bool
	}{
		{"before any part", "event: message-start\ndata: {\"type\":\"message-start\",\"id\":\"m\",\"delta\":{\"message\":{\"role\":\"assistant\"}}}\n\ndata: [DONE]\n\n", true},
		{"after text", "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\ndata: [DONE]\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			var got error
			for _, err := range newModel(t, srv.URL).Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}) {
				if err != nil {
					got = err
				}
			}
			var me *model.Error
			if !errors.As(got, &me) || me.Message != "the stream ended before message-end" || me.Temporary != tc.temporary {
				t.Fatalf("got %#v, want a cut stream with Temporary %v", got, tc.temporary)
			}
		})
	}
}

// collect decodes body as the answer of one call.
func collect(t *testing.T, body string) modeltest.Result {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	return modeltest.Collect(context.Background(), newModel(t, srv.URL), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
}

func toolStart(index int, id string) string {
	return `data: {"type":"tool-call-start","index":` + strconv.Itoa(index) + `,"delta":{"message":{"tool_calls":{"id":"` + id + `","type":"function","function":{"name":"weatherTool","arguments":"{"}}}}}` + "\n\n"
}

func toolDelta(index int, args string) string {
	return `data: {"type":"tool-call-delta","index":` + strconv.Itoa(index) + `,"delta":{"message":{"tool_calls":{"function":{"arguments":"` + args + `"}}}}}` + "\n\n"
}

func toolEnd(index int) string {
	return `data: {"type":"tool-call-end","index":` + strconv.Itoa(index) + "}\n\n"
}

const toolCallsEnd = `data: {"type":"message-end","delta":{"finish_reason":"TOOL_CALL"}}` + "\n\n"

// TestToolCallEventsOutOfOrder: a delta or an end for a call that is not
// open, and an id used twice, are a malformed stream, not parts for a call
// the agent never saw start (FuzzCohereStream corpus: delta-for-unstarted-call,
// end-twice, same-id-twice).
func TestToolCallEventsOutOfOrder(t *testing.T) {
	for name, body := range map[string]string{
		"delta before start": toolDelta(3, "}"),
		"end before start":   toolEnd(0),
		"delta after end":    toolStart(0, "c1") + toolEnd(0) + toolDelta(0, "}"),
		"end twice":          toolStart(0, "c1") + toolEnd(0) + toolEnd(0),
		"started twice":      toolStart(0, "c1") + toolStart(0, "c2"),
		"id used twice":      toolStart(0, "c1") + toolEnd(0) + toolStart(1, "c1"),
	} {
		t.Run(name, func(t *testing.T) {
			r := collect(t, body+toolCallsEnd)
			var me *model.Error
			if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || me.Message != "the provider sent a malformed stream event" {
				t.Fatalf("error %v, want a malformed stream", r.Err)
			}
		})
	}
}

// TestToolCallsWithoutIDs: calls the provider gives no id get one each, so
// that the deltas of two open calls stay apart (FuzzCohereStream corpus:
// calls-without-ids).
func TestToolCallsWithoutIDs(t *testing.T) {
	r := collect(t, toolStart(0, "")+toolStart(1, "")+toolDelta(1, "}")+toolDelta(0, "}")+toolEnd(0)+toolEnd(1)+toolCallsEnd)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID == "" || calls[1].ID == "" || calls[0].ID == calls[1].ID || !calls[0].Ended || !calls[1].Ended {
		t.Fatalf("calls %+v, want two ended calls with ids of their own", calls)
	}
	for _, c := range calls {
		if c.Args() != "{}" {
			t.Errorf("call %s: arguments %q, want {}", c.ID, c.Args())
		}
	}
}

// TestBogusUsage: negative, fractional and huge token counts read as no
// tokens or as model.MaxTokens, never as a negative or wrapped usage
// (FuzzCohereStream corpus: negative-usage).
func TestBogusUsage(t *testing.T) {
	r := collect(t, `data: {"type":"message-end","delta":{"finish_reason":"COMPLETE","usage":{"tokens":{"input_tokens":-1,"output_tokens":1e300},"cached_tokens":-3}}}`+"\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if u := r.Finish().Usage; u != (model.Usage{InputTokens: 0, OutputTokens: model.MaxTokens, TotalTokens: model.MaxTokens}) {
		t.Errorf("usage %+v", u)
	}
}

// TestUnknownFinishReason: a finish reason is named in the message only
// when it looks like one; any other text the provider put there goes to the
// cause, for the log (FuzzCohereStream corpus: unknown-reason-echoes-url).
func TestUnknownFinishReason(t *testing.T) {
	for _, tc := range []struct{ reason, message string }{
		{"CONTENT_BLOCKED", `the model stopped for an unknown reason "CONTENT_BLOCKED"`},
		{"see http://10.0.0.1:8080/v2/chat", "the model stopped for an unknown reason"},
		{strings.Repeat("A", 300), "the model stopped for an unknown reason"},
	} {
		r := collect(t, `data: {"type":"message-end","delta":{"finish_reason":"`+tc.reason+`"}}`+"\n\n")
		var me *model.Error
		if !errors.As(r.Err, &me) || me.Message != tc.message {
			t.Errorf("reason %.40q: error %v, want message %q", tc.reason, r.Err, tc.message)
			continue
		}
		if err := modeltest.CheckMessage(me.Message); err != nil {
			t.Error(err)
		}
		if !strings.Contains(me.Error(), tc.reason) {
			t.Errorf("the cause %q lacks the reason", me.Error())
		}
	}
}

// TestEventTooLarge: an event over the 1 MiB limit is the provider's fault,
// not a connection that failed, and is not retried.
func TestEventTooLarge(t *testing.T) {
	r := collect(t, `data: {"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"`+strings.Repeat("x", 1<<20)+`"}}}}`+"\n\n")
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || me.Temporary || me.Message != "the provider sent a stream event larger than the limit" {
		t.Fatalf("error %#v", r.Err)
	}
}

// TestStepTextWithCalls: a step that wrote text before its tool calls is
// sent as the real API accepts it, which the fake, refusing text content
// beside tool calls as the API does, holds the provider to.
func TestStepTextWithCalls(t *testing.T) {
	srv := httptest.NewServer(fakecohere.New(upstream.Options{}))
	defer srv.Close()
	req := model.Request{System: modeltest.System, Tools: []model.ToolSpec{modeltest.WeatherTool()}, Messages: []model.Message{
		{Role: model.RoleUser, Content: "What's the weather in Berlin?"},
		{Role: model.RoleAssistant, Content: "Let me look that up.", ToolCalls: []model.ToolCall{{ID: "c1", Name: "weatherTool", Args: []byte(`{"location":"Berlin"}`)}}},
		{Role: model.RoleTool, ToolCallID: "c1", ToolName: "weatherTool", Content: `{"temperature":3.2,"conditions":"Overcast","location":"Berlin"}`},
	}}
	r := modeltest.Collect(context.Background(), newModel(t, srv.URL), req)
	if r.Err != nil || !strings.Contains(r.Text(), "Berlin") {
		t.Fatalf("%v %q", r.Err, r.Text())
	}
	// The fake counts the plan as the step's text, as the model saw it.
	if want := fakecohere.Bill(req).BilledInput; r.Finish().Usage.InputTokens != want {
		t.Errorf("billed input %d, want %d", r.Finish().Usage.InputTokens, want)
	}
}
