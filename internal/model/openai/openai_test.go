package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/modeltest"
	"github.com/companionhq/companion/internal/model/openai"
	_ "github.com/companionhq/companion/internal/testkit"
)

func newModel(t *testing.T, baseURL string, client *http.Client) model.Model {
	t.Helper()
	m, err := openai.New(openai.Config{Provider: openai.ProviderOpenAI, Model: "gpt-4o-mini", APIKey: modeltest.Key, BaseURL: baseURL + "/v1", HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var harness = modeltest.Harness{
	Provider: openai.ProviderOpenAI,
	Fake: func(opts upstream.Options) (http.Handler, *upstream.Core) {
		s := fakeopenai.New(opts)
		return s, s.Core
	},
	New: newModel,
}

func TestConformance(t *testing.T) { modeltest.Run(t, harness) }

// TestConformanceOnCassettes runs the suite on cassettes recorded from the
// fake (MODELTEST_RECORD=1 records them again), without any server.
func TestConformanceOnCassettes(t *testing.T) {
	modeltest.RunCassettes(t, harness, "testdata/cassettes")
}

// collect decodes body as the answer of one call.
func collect(t *testing.T, body string) modeltest.Result {
	t.Helper()
	m, err := openai.New(openai.Config{Model: "m", BaseURL: "http://openai.test/v1",
		HTTPClient: &http.Client{Transport: modeltest.Serve{Body: []byte(body)}}})
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.Collect(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
}

// chunk is one chunk of tool-call deltas: index, id, name, arguments each.
func chunk(finish string, calls ...[4]any) string {
	var tcs []string
	for _, c := range calls {
		tcs = append(tcs, fmt.Sprintf(`{"index":%d,"id":%q,"function":{"name":%q,"arguments":%q}}`, c[0], c[1], c[2], c[3]))
	}
	reason := "null"
	if finish != "" {
		reason = strconv.Quote(finish)
	}
	return `data: {"id":"r1","choices":[{"index":0,"delta":{"tool_calls":[` + strings.Join(tcs, ",") + `]},"finish_reason":` + reason + "}]}\n\n"
}

// TestToolCallsWithoutIDs: calls the server gives no id get one each, so
// that the deltas of two calls stay apart (FuzzOpenAIStream corpus:
// calls-without-ids).
func TestToolCallsWithoutIDs(t *testing.T) {
	r := collect(t, chunk("", [4]any{0, "", "a", "{"}, [4]any{1, "", "b", "{"})+
		chunk("", [4]any{0, "", "", `"x":1}`})+chunk("tool_calls", [4]any{1, "", "", "}"})+"data: [DONE]\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID == "" || calls[1].ID == "" || calls[0].ID == calls[1].ID || !calls[0].Ended || !calls[1].Ended {
		t.Fatalf("calls %+v, want two ended calls with ids of their own", calls)
	}
	if calls[0].Args() != `{"x":1}` || calls[1].Args() != "{}" {
		t.Errorf("arguments %q and %q", calls[0].Args(), calls[1].Args())
	}
}

// TestToolCallIDContinuesItsCall: a chunk that repeats a call's id continues
// that call wherever its index, and never starts a second call of the same
// id; a new id at a used index starts a new call, as servers that send every
// call at index 0 do (FuzzOpenAIStream corpus: id-again-at-other-index).
func TestToolCallIDContinuesItsCall(t *testing.T) {
	r := collect(t, chunk("", [4]any{0, "c1", "a", "{"})+chunk("", [4]any{1, "c1", "", "}"})+
		chunk("tool_calls", [4]any{0, "c2", "b", "{}"})+"data: [DONE]\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID != "c1" || calls[0].Args() != "{}" || calls[1].ID != "c2" || calls[1].Args() != "{}" {
		t.Fatalf("calls %+v", calls)
	}
}

// TestBogusUsage: negative and huge token counts read as no tokens or as
// model.MaxTokens (FuzzOpenAIStream corpus: negative-usage).
func TestBogusUsage(t *testing.T) {
	r := collect(t, `data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-4,"completion_tokens":9000000000000,"total_tokens":-1}}`+"\n\ndata: [DONE]\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if u := r.Finish().Usage; u != (model.Usage{OutputTokens: model.MaxTokens, TotalTokens: model.MaxTokens}) {
		t.Errorf("usage %+v", u)
	}
}

// TestChunkOfWrongType: a chunk that is JSON but no chunk is a malformed
// stream, not a connection that failed, and is not retried (FuzzOpenAIStream
// corpus: chunk-not-an-object).
func TestChunkOfWrongType(t *testing.T) {
	r := collect(t, "data: 5\n\n")
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || me.Temporary || me.Message != "the provider sent a malformed stream event" {
		t.Fatalf("error %#v", r.Err)
	}
}

// TestInvalidUTF8: bytes that are not UTF-8 inside a chunk's strings reach
// the parts as U+FFFD, one for each byte, as encoding/json decodes them
// (FuzzOpenAIStream corpus: invalid-utf8-in-content,
// invalid-utf8-in-tool-call).
func TestInvalidUTF8(t *testing.T) {
	r := collect(t, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"caf\xc3\"}}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\xff\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"a\\\":\\\"\xe2\x98\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	calls := r.Calls()
	if r.Text() != "caf\uFFFD" || len(calls) != 1 || calls[0].ID != "c\uFFFD" || calls[0].Args() != `{"a":"`+"\uFFFD\uFFFD"+`"}` {
		t.Fatalf("text %q, calls %+v", r.Text(), calls)
	}
}

// TestErrorEvent: an event carrying "error" in the middle of an answer ends
// it with the provider's error, as the SDK's stream does, after the text
// already read.
func TestErrorEvent(t *testing.T) {
	r := collect(t, `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}`+"\n\n"+
		`data: {"error":{"message":"overloaded","type":"server_error"}}`+"\n\n")
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || me.Message != "the provider reported an error in the middle of the stream" ||
		!strings.Contains(me.Err.Error(), "overloaded") {
		t.Fatalf("error %#v", r.Err)
	}
	if r.Text() != "Hi" {
		t.Errorf("text %q", r.Text())
	}
}

// TestFieldOfWrongType: a field of an unexpected type reads as absent and
// the rest of the chunk is read, as the SDK's decoder reads it; the usage
// counts read whatever form of number they come in.
func TestFieldOfWrongType(t *testing.T) {
	r := collect(t, `data: {"id":7,"system_fingerprint":["x"],"choices":[{"index":0,"delta":{"content":"Hi","tool_calls":"none"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3.0,"completion_tokens":2e0,"total_tokens":5}}`+"\n\ndata: [DONE]\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Text() != "Hi" || len(r.Calls()) != 0 {
		t.Fatalf("text %q, calls %v", r.Text(), r.Calls())
	}
	if u := r.Finish().Usage; u.InputTokens != 3 || u.OutputTokens != 2 || u.TotalTokens != 5 {
		t.Errorf("usage %+v", u)
	}
}

// TestEventsWithoutData: an event without data, as some servers send to
// keep a connection alive, and a comment line are skipped, not read as a
// malformed chunk.
func TestEventsWithoutData(t *testing.T) {
	r := collect(t, "event: ping\n\n: keep-alive\n\n"+
		`data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}`+"\n\nevent: ping\n\ndata: [DONE]\n\n")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Text() != "Hi" || r.Finish() == nil {
		t.Fatalf("text %q, finish %+v", r.Text(), r.Finish())
	}
}
