package cohere_test

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

	"github.com/companionhq/companion/fakes/cohere"
	"github.com/companionhq/companion/fakes/upstream"
	_ "github.com/companionhq/companion/internal/testkit"
)

type frame struct{ event, data string }

func read(t *testing.T, r io.Reader) []frame {
	t.Helper()
	var out []frame
	for ev, err := range sse.Read(r, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, frame{ev.Type, ev.Data})
	}
	return out
}

// examples maps each event type of the example streams to the key paths
// its events use.
func examples(t *testing.T) map[string]map[string]bool {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.sse")
	out := map[string]map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range read(t, strings.NewReader(string(b))) {
			if fr.data == "[DONE]" {
				continue
			}
			if out[fr.event] == nil {
				out[fr.event] = map[string]bool{}
			}
			for _, p := range upstream.Paths([]byte(fr.data)) {
				out[fr.event][p] = true
			}
		}
	}
	return out
}

func post(t *testing.T, url, key, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v2/chat", strings.NewReader(body))
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

func chat(question string, extra string) string {
	return `{"model":"command-a-03-2025","stream":true` + extra + `,"messages":[{"role":"system","content":"You are in guru mode."},` +
		`{"role":"user","content":"` + question + `"}],"tools":[{"type":"function","function":{"name":"weatherTool","description":"Get current weather for a location","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]}`
}

// TestShapesMatchExamples: every event the fake sends is named by its type
// and uses only keys that example events of that type use.
func TestShapesMatchExamples(t *testing.T) {
	want := examples(t)
	srv := httptest.NewServer(cohere.New(upstream.Options{}))
	defer srv.Close()
	seen := map[string]bool{}
	for _, body := range []string{chat("Hello there", ""), chat("What's the weather in Paris and Tokyo?", ""), chat("Tell me a story", `,"max_tokens":2`)} {
		res := post(t, srv.URL, "k", body)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		frames := read(t, res.Body)
		if last := frames[len(frames)-1]; last.data != "[DONE]" {
			t.Errorf("the stream ends with %q, not [DONE]", last.data)
		}
		for _, fr := range frames[:len(frames)-1] {
			seen[fr.event] = true
			if !strings.Contains(fr.data, `"type":"`+fr.event+`"`) {
				t.Errorf("event %q carries another type: %s", fr.event, fr.data)
			}
			rec, ok := want[fr.event]
			if !ok {
				t.Errorf("event type %q is in no example", fr.event)
				continue
			}
			for _, p := range upstream.Paths([]byte(fr.data)) {
				if !rec[p] {
					t.Errorf("%s: key %s is in no example %s event", fr.event, p, fr.event)
				}
			}
		}
	}
	for _, ev := range []string{"message-start", "content-start", "content-delta", "content-end", "tool-plan-delta", "tool-call-start", "tool-call-delta", "tool-call-end", "message-end"} {
		if !seen[ev] {
			t.Errorf("the fake never sent %s", ev)
		}
	}
}

func TestErrors(t *testing.T) {
	s := cohere.New(upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultStatus, Status: 429, RetryAfter: "3"}}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	if res := post(t, srv.URL, "", chat("Hi", "")); res.StatusCode != 401 {
		t.Errorf("without a key: %d", res.StatusCode)
	}
	res := post(t, srv.URL, "k", chat("Hi", ""))
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "3" || !strings.Contains(string(b), `"message":`) {
		t.Errorf("fault: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	if res := post(t, srv.URL, "k", chat("Hi", "")); res.StatusCode != 200 {
		t.Errorf("after the fault: %d", res.StatusCode)
	}
	if res := post(t, srv.URL, "k", `{"model":"m","messages":[{"role":"user","content":"x"}]}`); res.StatusCode != 400 {
		t.Errorf("not streaming: %d", res.StatusCode)
	}
	ex := s.Exchanges()
	if len(ex) != 4 || ex[0].Authorized || ex[1].Fault == nil || ex[1].Header.Get("Authorization") != "" {
		t.Errorf("exchanges %+v", ex)
	}
}

// conversation is a v2 chat body whose messages are msgs (JSON), with the
// weather tool and extra fields.
func conversation(msgs, extra string) string {
	return `{"model":"command-a-03-2025","stream":true` + extra + `,"messages":[` + msgs + `],` +
		`"tools":[{"type":"function","function":{"name":"weatherTool","description":"Get current weather for a location","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]}`
}

const (
	askBerlin    = `{"role":"user","content":"What's the weather in Berlin?"}`
	callBerlin   = `{"id":"c1","type":"function","function":{"name":"weatherTool","arguments":"{\"location\":\"Berlin\"}"}}`
	resultBerlin = `{"role":"tool","tool_call_id":"c1","content":"{\"temperature\":3.2,\"conditions\":\"Overcast\",\"location\":\"Berlin\"}"}`
)

// TestRefusesWhatTheAPIRefuses: requests the real API refuses get 400 with
// Cohere's error body and the reason.
func TestRefusesWhatTheAPIRefuses(t *testing.T) {
	srv := httptest.NewServer(cohere.New(upstream.Options{}))
	defer srv.Close()
	for _, tc := range []struct{ name, body, want string }{
		{"text content with tool calls", conversation(askBerlin+`,{"role":"assistant","content":"Let me look.","tool_calls":[`+callBerlin+`]},`+resultBerlin, ""),
			"invalid request: text content is not allowed when tool_calls are provided. If you wish to pass a tool plan, either pass thinking content (with thinking enabled) or use 'tool_plan': 'messages[1].content[0]'"},
		{"text content item with tool calls", conversation(askBerlin+`,{"role":"assistant","content":[{"type":"text","text":"Let me look."}],"tool_calls":[`+callBerlin+`]},`+resultBerlin, ""),
			"text content is not allowed when tool_calls are provided"},
		{"a call without its result", conversation(askBerlin+`,{"role":"assistant","tool_calls":[`+callBerlin+`]},{"role":"user","content":"Well?"}`, ""),
			"invalid request: An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: c1"},
		{"the last call without its result", conversation(askBerlin+`,{"role":"assistant","tool_calls":[`+callBerlin+`]}`, ""), "did not have response messages: c1"},
		{"a result of no call", conversation(askBerlin+`,`+resultBerlin, ""), `tool_call_id "c1" answers no tool call`},
		{"a result without its id", conversation(askBerlin+`,{"role":"assistant","tool_calls":[`+callBerlin+`]},{"role":"tool","content":"{}"}`, ""), "tool_call_id is required"},
		{"a result without content", conversation(askBerlin+`,{"role":"assistant","tool_calls":[`+callBerlin+`]},{"role":"tool","tool_call_id":"c1"}`, ""), "messages[2]: content is required"},
		{"a call without an id", conversation(askBerlin+`,{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"weatherTool","arguments":"{}"}}]}`, ""), "id is required"},
		{"no model", `{"stream":true,"messages":[` + askBerlin + `]}`, "model is required"},
		{"no messages", `{"model":"m","stream":true,"messages":[]}`, "messages must not be empty"},
		{"unknown role", conversation(`{"role":"chatbot","content":"Hi"}`, ""), `role "chatbot"`},
		{"user without content", conversation(`{"role":"user"}`, ""), "content is required"},
		{"tool without parameters", `{"model":"m","stream":true,"messages":[` + askBerlin + `],"tools":[{"type":"function","function":{"name":"weatherTool"}}]}`, "parameters must be a JSON schema object"},
		{"temperature", conversation(askBerlin, `,"temperature":1.5`), "temperature must be between 0 and 1"},
		{"p", conversation(askBerlin, `,"p":1`), "p must be between 0.01 and 0.99"},
		{"k", conversation(askBerlin, `,"k":501`), "k must be between 0 and 500"},
		{"max_tokens", conversation(askBerlin, `,"max_tokens":0`), "max_tokens must be at least 1"},
		{"stop sequences", conversation(askBerlin, `,"stop_sequences":["a","b","c","d","e","f"]`), "at most 5"},
		{"safety mode with tools", conversation(askBerlin, `,"safety_mode":"STRICT"`), "safety_mode is not configurable"},
		{"tool choice without tools", `{"model":"m","stream":true,"tool_choice":"REQUIRED","messages":[` + askBerlin + `]}`, "tool_choice needs tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := post(t, srv.URL, "k", tc.body)
			b, _ := io.ReadAll(res.Body)
			var e struct{ ID, Message string }
			if err := json.Unmarshal(b, &e); err != nil || res.StatusCode != 400 || e.ID == "" || !strings.Contains(e.Message, tc.want) {
				t.Errorf("%d %s, want 400 with %q", res.StatusCode, b, tc.want)
			}
		})
	}
}

// TestToolPlanAccepted: the text of a step with tool calls goes in
// tool_plan, with the results after it; thinking content is not text.
func TestToolPlanAccepted(t *testing.T) {
	srv := httptest.NewServer(cohere.New(upstream.Options{}))
	defer srv.Close()
	for _, assistant := range []string{
		`{"role":"assistant","tool_plan":"I will look it up.","tool_calls":[` + callBerlin + `]}`,
		`{"role":"assistant","tool_calls":[` + callBerlin + `]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"Berlin, then."}],"tool_calls":[` + callBerlin + `]}`,
	} {
		res := post(t, srv.URL, "k", conversation(askBerlin+","+assistant+","+resultBerlin, ""))
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !strings.Contains(string(b), "Berlin") {
			t.Errorf("%s: %d %s", assistant, res.StatusCode, b)
		}
	}
}

// TestBillsLikeTheAPI: message-end bills what the caller sent and the model
// wrote; the token counts add what the API adds under the hood, and the
// prompt cache counts in tokens too.
func TestBillsLikeTheAPI(t *testing.T) {
	srv := httptest.NewServer(cohere.New(upstream.Options{}))
	defer srv.Close()
	type counts struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	for _, tc := range []struct {
		name, body    string
		billed, total counts
		cached        int
	}{
		// 5 words of system, 5 of question, 8 of tool definition; a plan of
		// 6 words and 2 argument deltas.
		{"tool call", conversation(`{"role":"system","content":"You are in guru mode."},`+askBerlin, ""), counts{5 + 5 + 8, 6 + 2}, counts{18 + 165 + 711, 8 + 27}, 0},
		{"text, later turn", `{"model":"m","stream":true,"messages":[{"role":"system","content":"You are in guru mode."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."},{"role":"user","content":"How are you?"}]}`,
			counts{5 + 1 + 1 + 3, 0}, counts{10 + 165, 0}, 165 + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := read(t, post(t, srv.URL, "k", tc.body).Body)
			var end struct {
				Delta struct {
					Usage struct {
						BilledUnits  counts `json:"billed_units"`
						Tokens       counts `json:"tokens"`
						CachedTokens int    `json:"cached_tokens"`
					} `json:"usage"`
				} `json:"delta"`
			}
			if err := json.Unmarshal([]byte(frames[len(frames)-2].data), &end); err != nil {
				t.Fatal(err)
			}
			u := end.Delta.Usage
			if tc.billed.OutputTokens == 0 {
				// The reply's length is the fake model's business.
				tc.billed.OutputTokens, tc.total.OutputTokens = u.BilledUnits.OutputTokens, u.BilledUnits.OutputTokens
			}
			if u.BilledUnits != tc.billed || u.Tokens != tc.total || u.CachedTokens != tc.cached {
				t.Errorf("usage %+v, want billed %+v, tokens %+v, cached %d", u, tc.billed, tc.total, tc.cached)
			}
		})
	}
}
