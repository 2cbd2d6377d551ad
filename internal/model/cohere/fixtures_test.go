package cohere_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/cohere"
	"github.com/companionhq/companion/internal/model/modeltest"
)

// replay serves a recorded stream and returns the body of the request the
// model sent.
func replay(t *testing.T, file string, req model.Request) (modeltest.Result, map[string]any) {
	t.Helper()
	b, err := os.ReadFile("../../../fakes/cohere/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/chat" || r.Header.Get("Authorization") != "Bearer "+modeltest.Key || r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("request %s %v", r.URL.Path, r.Header)
		}
		_ = json.NewDecoder(r.Body).Decode(&sent)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	return modeltest.Collect(context.Background(), newModel(t, srv.URL), req), sent
}

func TestRecordedText(t *testing.T) {
	r, sent := replay(t, "text.sse", model.Request{System: "Be brief.", Messages: []model.Message{{Role: model.RoleUser, Content: "what is Coca Cola?"}}, MaxOutputTokens: 200})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Text() != "Coca-Cola is a carbonated soft drink." {
		t.Errorf("text %q", r.Text())
	}
	f := r.Finish()
	if f.Reason != model.FinishStop || f.ResponseID != "a8fc192e-4bb8-4e15-ae1f-a174e8b02ae8" {
		t.Errorf("finish %+v", f)
	}
	if f.Usage != (model.Usage{InputTokens: 186, OutputTokens: 105, TotalTokens: 291}) {
		t.Errorf("usage %+v", f.Usage)
	}
	if bu := f.ProviderMetadata["billedUnits"].(map[string]any); bu["inputTokens"] != 21 || bu["outputTokens"] != 105 {
		t.Errorf("billed units %v", bu)
	}
	msgs := sent["messages"].([]any)
	if sent["stream"] != true || sent["model"] != "command-a-03-2025" || sent["max_tokens"] != float64(200) || len(msgs) != 2 ||
		msgs[0].(map[string]any)["role"] != "system" {
		t.Errorf("sent %v", sent)
	}
}

func TestRecordedToolCalls(t *testing.T) {
	r, sent := replay(t, "tools.sse", model.Request{
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "What's the weather in Madrid and Brasilia?"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "get_weather", Args: json.RawMessage(`{"location":"Oslo"}`)}}},
			{Role: model.RoleTool, ToolCallID: "c1", ToolName: "get_weather", Content: `{"temperature":1}`},
		},
		Tools: []model.ToolSpec{modeltest.WeatherTool()},
	})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID != "get_weather_p1t92w7gfgq7" || calls[1].Name != "get_weather" || !calls[0].Ended || !calls[1].Ended {
		t.Fatalf("calls %+v", calls)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(calls[1].Args()), &args); err != nil || args["location"] != "Brasilia" {
		t.Errorf("arguments %q", calls[1].Args())
	}
	var plan string
	for _, p := range r.Parts {
		if p.Kind == model.PartReasoning {
			plan += p.Text
		}
	}
	if plan != "I will search for the weather in Madrid and Brasilia." || r.Text() != "" {
		t.Errorf("tool plan %q, text %q", plan, r.Text())
	}
	if f := r.Finish(); f.Reason != model.FinishToolCalls || f.Usage.InputTokens != 913 {
		t.Errorf("finish %+v", f)
	}
	msgs := sent["messages"].([]any)
	assistant, tool := msgs[1].(map[string]any), msgs[2].(map[string]any)
	tc := assistant["tool_calls"].([]any)[0].(map[string]any)
	if tc["id"] != "c1" || tc["function"].(map[string]any)["arguments"] != `{"location":"Oslo"}` || tool["tool_call_id"] != "c1" || tool["content"] != `{"temperature":1}` {
		t.Errorf("sent %v", msgs)
	}
	if fn := sent["tools"].([]any)[0].(map[string]any)["function"].(map[string]any); fn["name"] != "weatherTool" || fn["parameters"] == nil {
		t.Errorf("tools %v", sent["tools"])
	}
}

func TestRecordedErrorFinish(t *testing.T) {
	r, _ := replay(t, "error.sse", model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || me.Message != "the model stopped with an error" || r.Text() != "Hello" {
		t.Fatalf("err %v, text %q", r.Err, r.Text())
	}
}

func TestCachedTokens(t *testing.T) {
	// error.sse's usage carries cached_tokens; read it off a clean finish.
	b, _ := os.ReadFile("../../../fakes/cohere/testdata/error.sse")
	fixed := []byte(strings.ReplaceAll(string(b), `"error":"internal error while generating","finish_reason":"ERROR"`, `"finish_reason":"COMPLETE"`))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(fixed) }))
	defer srv.Close()
	r := modeltest.Collect(context.Background(), newModel(t, srv.URL), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	if r.Err != nil || r.Finish().Usage.CachedInputTokens != 64 {
		t.Fatalf("%v %+v", r.Err, r.Finish())
	}
}

func TestNewNeedsModelAndKey(t *testing.T) {
	if _, err := cohere.New(cohere.Config{APIKey: "k"}); err == nil {
		t.Error("no model accepted")
	}
	if _, err := cohere.New(cohere.Config{Model: "m"}); err == nil {
		t.Error("no key accepted")
	}
}

func TestRejectedKeyIsNotShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"id":"x","message":"invalid api token ` + modeltest.Key + `"}`))
	}))
	defer srv.Close()
	r := modeltest.Collect(context.Background(), newModel(t, srv.URL), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindRejected || me.Status != 401 {
		t.Fatalf("%v", r.Err)
	}
	if s := r.Err.Error(); strings.Contains(s, modeltest.Key) || !strings.Contains(s, "invalid api token") {
		t.Errorf("error %q", s)
	}
}
