package openai_test

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
	"github.com/companionhq/companion/internal/model/modeltest"
	"github.com/companionhq/companion/internal/model/openai"
)

// replay serves a recorded stream to a model of provider and returns the
// body of the request it sent.
func replay(t *testing.T, provider, file string, req model.Request) (modeltest.Result, map[string]any) {
	t.Helper()
	b, err := os.ReadFile("../../../fakes/openai/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+modeltest.Key {
			t.Errorf("request %s %v", r.URL.Path, r.Header)
		}
		_ = json.NewDecoder(r.Body).Decode(&sent)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{Provider: provider, Model: "gpt-4o", APIKey: modeltest.Key, BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.Collect(context.Background(), m, req), sent
}

func TestMockText(t *testing.T) {
	temperature := 0.25
	r, sent := replay(t, openai.ProviderOpenAI, "mock-text.sse", model.Request{System: "Be brief.",
		Messages: []model.Message{{Role: model.RoleUser, Content: "Plan a trip"}}, MaxOutputTokens: 3, Temperature: &temperature})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Text() != "Let's take a" {
		t.Errorf("text %q", r.Text())
	}
	f := r.Finish()
	if f.Reason != model.FinishLength || f.ResponseID != "chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF" {
		t.Errorf("finish %+v", f)
	}
	if f.Usage != (model.Usage{InputTokens: 1212, OutputTokens: 3, TotalTokens: 1215, CachedInputTokens: 1024}) {
		t.Errorf("usage %+v", f.Usage)
	}
	if f.ProviderMetadata["model"] != "gpt-4o-2024-05-13" || f.ProviderMetadata["finishReason"] != "length" {
		t.Errorf("metadata %v", f.ProviderMetadata)
	}
	so, _ := sent["stream_options"].(map[string]any)
	if sent["stream"] != true || so["include_usage"] != true || sent["max_completion_tokens"] != float64(3) || sent["max_tokens"] != nil || sent["temperature"] != 0.25 {
		t.Errorf("sent %v", sent)
	}
}

func TestThirdPartyParallelToolCalls(t *testing.T) {
	r, sent := replay(t, openai.ProviderOllama, "third-party-parallel-tools.sse", model.Request{
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "show me the current date and the natural logarithm of 22"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weatherTool", Args: json.RawMessage(`{"location":"Oslo"}`)}}},
			{Role: model.RoleTool, ToolCallID: "c1", ToolName: "weatherTool", Content: `{"temperature":1}`},
		},
		Tools: []model.ToolSpec{modeltest.WeatherTool()}, MaxOutputTokens: 50,
	})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID != "call_nsnhJgZZaqiKyMvwxW9NnptH" || calls[0].Name != "get_current_datetime" || calls[0].Args() != "{}" ||
		calls[1].Name != "calculate_natural_log" || calls[1].Args() != `{"number": 22}` || !calls[0].Ended || !calls[1].Ended {
		t.Fatalf("calls %+v", calls)
	}
	if len(calls[1].Deltas) != 3 {
		t.Errorf("deltas %q", calls[1].Deltas)
	}
	if f := r.Finish(); f.Reason != model.FinishToolCalls || f.Usage.TotalTokens != 132 {
		t.Errorf("finish %+v", f)
	}
	// Not OpenAI itself: the limit goes as max_tokens.
	if sent["max_tokens"] != float64(50) || sent["max_completion_tokens"] != nil {
		t.Errorf("limit sent as %v / %v", sent["max_tokens"], sent["max_completion_tokens"])
	}
	// No temperature asked for: none sent, the model's own applies.
	if _, ok := sent["temperature"]; ok {
		t.Errorf("temperature sent as %v", sent["temperature"])
	}
	msgs := sent["messages"].([]any)
	tc := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if tc["id"] != "c1" || tc["type"] != "function" || msgs[2].(map[string]any)["tool_call_id"] != "c1" {
		t.Errorf("sent %v", msgs)
	}
}

func TestReasoningAndMidStreamError(t *testing.T) {
	body := "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":\"thinking\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"error\":{\"message\":\"upstream overloaded\",\"code\":502}}\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	m, _ := openai.New(openai.Config{Model: "m", BaseURL: srv.URL})
	r := modeltest.Collect(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	if len(r.Parts) != 2 || r.Parts[0].Kind != model.PartReasoning || r.Parts[0].Text != "thinking" || r.Text() != "Hi" {
		t.Errorf("parts %+v", r.Parts)
	}
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindUpstream || !strings.Contains(me.Message, "middle of the stream") {
		t.Errorf("err %v", r.Err)
	}
	if m.Provider() != openai.ProviderCompatible {
		t.Errorf("provider %q", m.Provider())
	}
}

func TestRejectedKeyIsNotShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + modeltest.Key + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	m, _ := openai.New(openai.Config{Provider: openai.ProviderOpenAI, Model: "m", APIKey: modeltest.Key, BaseURL: srv.URL})
	r := modeltest.Collect(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Kind != model.KindRejected || me.Status != 401 {
		t.Fatalf("%v", r.Err)
	}
	if s := r.Err.Error(); strings.Contains(s, modeltest.Key) || !strings.Contains(s, "Incorrect API key") {
		t.Errorf("error %q", s)
	}
}

func TestNoEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/never")
	t.Setenv("OPENAI_API_KEY", "from-the-environment")
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.WriteHeader(500)
	}))
	defer srv.Close()
	m, _ := openai.New(openai.Config{Model: "m", BaseURL: srv.URL})
	r := modeltest.Collect(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}})
	var me *model.Error
	if !errors.As(r.Err, &me) || me.Status != 500 || auth != "" {
		t.Fatalf("err %v, auth %q: the environment leaked into the client", r.Err, auth)
	}
}

// TestCallsWithoutDistinctIndexes: a server that sends each call whole at
// index 0 still gives two calls, told apart by their ids.
func TestCallsWithoutDistinctIndexes(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	body := chunk(`{"role":"assistant","content":"","tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"weatherTool","arguments":"{\"location\":\"Paris\"}"}}]}`, "null") +
		chunk(`{"role":"assistant","content":"","tool_calls":[{"id":"call_b","index":0,"type":"function","function":{"name":"weatherTool","arguments":"{\"location\":\"Tokyo\"}"}}]}`, "null") +
		chunk(`{"role":"assistant","content":""}`, `"tool_calls"`) + "data: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	m, _ := openai.New(openai.Config{Provider: openai.ProviderOllama, Model: "llama3.2", APIKey: "ollama", BaseURL: srv.URL})
	r := modeltest.Collect(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Paris and Tokyo?"}}})
	calls := r.Calls()
	if r.Err != nil || len(calls) != 2 || calls[0].Args() != `{"location":"Paris"}` || calls[1].ID != "call_b" || calls[1].Args() != `{"location":"Tokyo"}` {
		t.Fatalf("err %v, calls %+v", r.Err, calls)
	}
}
