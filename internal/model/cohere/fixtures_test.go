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

// replay serves an example stream of fakes/cohere/testdata and returns
// the body of the request the model sent.
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

// TestReshapedText: a text answer, its usage the billed units, the token
// counts in the provider metadata.
func TestReshapedText(t *testing.T) {
	temperature := 0.5
	r, sent := replay(t, "reshaped-text.sse", model.Request{System: "Be brief.", Messages: []model.Message{{Role: model.RoleUser, Content: "what is Coca Cola?"}}, MaxOutputTokens: 200, Temperature: &temperature})
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
	if f.Usage != (model.Usage{InputTokens: 21, OutputTokens: 105, TotalTokens: 126}) {
		t.Errorf("usage %+v, want the billed units", f.Usage)
	}
	if bu := f.ProviderMetadata["billedUnits"].(map[string]any); bu["inputTokens"] != 21 || bu["outputTokens"] != 105 {
		t.Errorf("billed units %v", bu)
	}
	if tk := f.ProviderMetadata["tokens"].(map[string]any); tk["inputTokens"] != 186 || tk["outputTokens"] != 105 {
		t.Errorf("tokens %v", tk)
	}
	msgs := sent["messages"].([]any)
	if sent["stream"] != true || sent["model"] != "command-a-03-2025" || sent["max_tokens"] != float64(200) || sent["temperature"] != 0.5 || len(msgs) != 2 ||
		msgs[0].(map[string]any)["role"] != "system" {
		t.Errorf("sent %v", sent)
	}
}

// TestDocsToolUse: Cohere's own tool-use example: the calls, the plan as
// reasoning, the billed usage; the request sends the earlier step's calls
// with their results.
func TestDocsToolUse(t *testing.T) {
	r, sent := replay(t, "docs-tool-use.sse", model.Request{
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
	f := r.Finish()
	if f.Reason != model.FinishToolCalls || f.Usage != (model.Usage{InputTokens: 37, OutputTokens: 28, TotalTokens: 65}) {
		t.Errorf("finish %+v", f)
	}
	if tk := f.ProviderMetadata["tokens"].(map[string]any); tk["inputTokens"] != 913 || tk["outputTokens"] != 83 {
		t.Errorf("tokens %v", tk)
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

func TestInventedErrorFinish(t *testing.T) {
	r, _ := replay(t, "invented-error.sse", model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || me.Message != "the model stopped with an error" || r.Text() != "Hello" {
		t.Fatalf("err %v, text %q", r.Err, r.Text())
	}
}

// TestCachedTokens: cached_tokens counts prompt tokens as the model saw
// them, not billed ones: it goes to the provider metadata, not to the usage.
func TestCachedTokens(t *testing.T) {
	// invented-error.sse's usage carries cached_tokens; read it off a clean
	// finish.
	b, _ := os.ReadFile("../../../fakes/cohere/testdata/invented-error.sse")
	fixed := []byte(strings.ReplaceAll(string(b), `"error":"internal error while generating","finish_reason":"ERROR"`, `"finish_reason":"COMPLETE"`))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(fixed) }))
	defer srv.Close()
	r := modeltest.Collect(context.Background(), newModel(t, srv.URL), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	if r.Err != nil || r.Finish().Usage != (model.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6}) || r.Finish().ProviderMetadata["cachedTokens"] != 64 {
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

// TestToolPlanNotContent: the API refuses text content beside tool calls;
// a step's text before its calls is sent as its tool plan, and text
// without calls as content.
func TestToolPlanNotContent(t *testing.T) {
	_, sent := replay(t, "docs-tool-use.sse", model.Request{
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "Weather in Oslo?"},
			{Role: model.RoleAssistant, Content: "I will look it up.", ToolCalls: []model.ToolCall{{ID: "c1", Name: "weatherTool", Args: json.RawMessage(`{"location":"Oslo"}`)}}},
			{Role: model.RoleTool, ToolCallID: "c1", ToolName: "weatherTool", Content: `{"temperature":1}`},
			{Role: model.RoleAssistant, Content: "It is cold."},
			{Role: model.RoleUser, Content: "And in Bergen?"},
		},
		Tools: []model.ToolSpec{modeltest.WeatherTool()},
	})
	msgs := sent["messages"].([]any)
	withCalls, without := msgs[1].(map[string]any), msgs[3].(map[string]any)
	if _, ok := withCalls["content"]; ok || withCalls["tool_plan"] != "I will look it up." || withCalls["tool_calls"] == nil {
		t.Errorf("the step with calls sent as %v", withCalls)
	}
	if without["content"] != "It is cold." || without["tool_plan"] != nil {
		t.Errorf("the step without calls sent as %v", without)
	}
}
