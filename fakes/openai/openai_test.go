package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sse "github.com/tmaxmax/go-sse"

	"github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	_ "github.com/companionhq/companion/internal/testkit"
)

func read(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	for ev, err := range sse.Read(r, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != "" {
			t.Errorf("chunks carry no event name, got %q", ev.Type)
		}
		out = append(out, ev.Data)
	}
	return out
}

// examples is the set of key paths the example chunks of testdata use.
func examples(t *testing.T) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.sse")
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range read(t, strings.NewReader(string(b))) {
			for _, p := range upstream.Paths([]byte(d)) {
				out[p] = true
			}
		}
	}
	return out
}

func post(t *testing.T, url, key, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func chat(question, extra string) string {
	return `{"model":"gpt-4o-mini","stream":true` + extra + `,"messages":[{"role":"system","content":"You are in guru mode."},` +
		`{"role":"user","content":"` + question + `"}],"tools":[{"type":"function","function":{"name":"weatherTool","description":"Get current weather for a location","parameters":{"type":"object"}}}]}`
}

// TestShapesMatchExamples: every chunk the fake sends uses only keys that
// example chunks use; usage comes last, only when asked for.
func TestShapesMatchExamples(t *testing.T) {
	want := examples(t)
	srv := httptest.NewServer(openai.New(upstream.Options{}))
	defer srv.Close()
	usage := `,"stream_options":{"include_usage":true}`
	for _, body := range []string{chat("Hello there", usage), chat("What's the weather in Paris and Tokyo?", usage), chat("Tell me a story", usage+`,"max_tokens":2`)} {
		res := post(t, srv.URL, "k", body)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		chunks := read(t, res.Body)
		n := len(chunks)
		if chunks[n-1] != "[DONE]" || !strings.Contains(chunks[n-2], `"choices":[],"usage":{`) {
			t.Errorf("the stream ends with %q, %q: want the usage chunk, then [DONE]", chunks[n-2], chunks[n-1])
		}
		for _, c := range chunks[:n-1] {
			for _, p := range upstream.Paths([]byte(c)) {
				if !want[p] {
					t.Errorf("key %s is in no example chunk: %s", p, c)
				}
			}
		}
	}
	chunks := read(t, post(t, srv.URL, "k", chat("Hello there", "")).Body)
	for _, c := range chunks {
		if strings.Contains(c, `"usage"`) {
			t.Fatalf("usage without stream_options.include_usage: %s", c)
		}
	}
}

func TestErrors(t *testing.T) {
	s := openai.New(upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultStatus, Status: 429, RetryAfter: "3"}}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	if res := post(t, srv.URL, "", chat("Hi", "")); res.StatusCode != 401 {
		t.Errorf("without a key: %d", res.StatusCode)
	}
	res := post(t, srv.URL, "k", chat("Hi", ""))
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "3" || !strings.Contains(string(b), `"error":{`) {
		t.Errorf("fault: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	if res := post(t, srv.URL, "k", chat("Hi", "")); res.StatusCode != 200 {
		t.Errorf("after the fault: %d", res.StatusCode)
	}
}

// TestRefusesWhatTheAPIRefuses: requests the real API refuses get 400 with
// OpenAI's error body, the reason and the param at fault; content beside
// tool calls is valid here.
func TestRefusesWhatTheAPIRefuses(t *testing.T) {
	srv := httptest.NewServer(openai.New(upstream.Options{}))
	defer srv.Close()
	const (
		ask    = `{"role":"user","content":"What's the weather in Berlin?"}`
		call   = `{"id":"c1","type":"function","function":{"name":"weatherTool","arguments":"{\"location\":\"Berlin\"}"}}`
		result = `{"role":"tool","tool_call_id":"c1","content":"{\"temperature\":3.2,\"location\":\"Berlin\"}"}`
	)
	body := func(msgs string) string {
		return `{"model":"gpt-4o-mini","stream":true,"messages":[` + msgs + `]}`
	}
	for _, tc := range []struct{ name, body, want, param string }{
		{"a result of no call", body(ask + `,` + result), "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "messages.[1].role"},
		{"a call without its result", body(ask + `,{"role":"assistant","tool_calls":[` + call + `]},{"role":"user","content":"Well?"}`),
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: c1", "messages.[2].role"},
		{"an assistant without content or calls", body(ask + `,{"role":"assistant"},{"role":"user","content":"Well?"}`), "Missing required parameter: 'messages.[1].content'", "messages.[1].content"},
		{"a result without content", body(ask + `,{"role":"assistant","tool_calls":[` + call + `]},{"role":"tool","tool_call_id":"c1"}`), "Missing required parameter: 'messages.[2].content'", "messages.[2].content"},
		{"a call without a type", body(ask + `,{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"weatherTool","arguments":"{}"}}]},` + result), "expected 'function'", "messages.[1].tool_calls.[0].type"},
		{"stream options without streaming", `{"model":"gpt-4o-mini","stream_options":{"include_usage":true},"messages":[` + ask + `]}`, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"},
		{"unknown role", body(`{"role":"chatbot","content":"Hi"}`), "Invalid value: 'chatbot'", "messages.[0].role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := post(t, srv.URL, "k", tc.body)
			b, _ := io.ReadAll(res.Body)
			var e struct {
				Error struct{ Message, Type, Param string }
			}
			if err := json.Unmarshal(b, &e); err != nil || res.StatusCode != 400 || e.Error.Type != "invalid_request_error" ||
				!strings.Contains(e.Error.Message, tc.want) || e.Error.Param != tc.param {
				t.Errorf("%d %s, want 400 with %q at %s", res.StatusCode, b, tc.want, tc.param)
			}
		})
	}
	// Text beside tool calls is valid in chat completions.
	res := post(t, srv.URL, "k", body(ask+`,{"role":"assistant","content":"Let me look.","tool_calls":[`+call+`]},`+result))
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || !strings.Contains(string(b), "Berlin") {
		t.Errorf("content with tool calls: %d %s", res.StatusCode, b)
	}
}
