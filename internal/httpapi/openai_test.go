package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

const completionsPath = "/v1/chat/completions"

// completion is a chat completion request body for user with msgs, a JSON
// array, and extra fields.
func completion(model, user, msgs, extra string) string {
	return fmt.Sprintf(`{"model":%q,"user":%q,"messages":%s%s}`, model, user, msgs, extra)
}

// sseChunks reads the data frames of an OpenAI stream, [DONE] last.
func sseChunks(t *testing.T, b []byte) (chunks []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if done {
			t.Fatalf("a frame after [DONE]: %s", data)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	return chunks, done
}

func TestOpenAIModels(t *testing.T) {
	svc := apptest.Start(t, nil)
	res, b := svc.Do(t, "GET", "/v1/models", "")
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	var list api.OpenAIModelList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.Object != "model" || m.OwnedBy == "" || m.Created == 0 {
			t.Errorf("model %+v lacks object, owned_by or created", m)
		}
		ids = append(ids, m.ID)
	}
	want := "companion companion-guru companion-wanderer companion-friend companion-philosopher"
	if list.Object != "list" || strings.Join(ids, " ") != want {
		t.Errorf("got %s %v, want list of %s", list.Object, ids, want)
	}
}

func TestOpenAICompletion(t *testing.T) {
	svc := apptest.Start(t, nil)
	hello := `[{"role":"user","content":"Hello"}]`
	for _, tc := range []struct {
		name, body string
		// voice is a word of the personality's answer.
		voice, finish string
	}{
		{name: "default model", body: completion("companion", "u1", hello, ""), voice: "", finish: "stop"},
		{name: "guru", body: completion("companion-guru", "u1", hello, ""), voice: "Breathe", finish: "stop"},
		{name: "system and developer messages", body: completion("companion-philosopher", "u1",
			`[{"role":"developer","content":"Be brief"},{"role":"system","content":[{"type":"text","text":"Be kind"}]},{"role":"user","content":"Hello"}]`, ""), finish: "stop"},
		{name: "max_tokens", body: completion("companion", "u1", hello, `,"max_tokens":3,"temperature":0.2`), finish: "length"},
		{name: "max_completion_tokens", body: completion("companion", "u1", hello, `,"max_completion_tokens":3`), finish: "length"},
		{name: "weather tool runs inside", body: completion("companion", "u1", `[{"role":"user","content":"What is the weather in Berlin?"}]`, ""), voice: "Berlin", finish: "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := svc.Post(t, completionsPath, tc.body)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			var c api.OpenAIChatCompletion
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			var req api.OpenAIChatRequest
			_ = json.Unmarshal([]byte(tc.body), &req)
			if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || c.Created == 0 || c.Model != req.Model {
				t.Errorf("id %q, object %q, created %d, model %q", c.ID, c.Object, c.Created, c.Model)
			}
			if len(c.Choices) != 1 {
				t.Fatalf("choices: %s", b)
			}
			ch := c.Choices[0]
			if ch.Message.Role != "assistant" || ch.Message.Content == "" || !strings.Contains(ch.Message.Content, tc.voice) {
				t.Errorf("message %+v, want an assistant's answer with %q", ch.Message, tc.voice)
			}
			if ch.FinishReason != tc.finish {
				t.Errorf("finish_reason %q, want %q", ch.FinishReason, tc.finish)
			}
			u := c.Usage
			if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage %+v", u)
			}
			if tc.finish == "length" && u.CompletionTokens > 3 {
				t.Errorf("completion_tokens %d, more than max_tokens", u.CompletionTokens)
			}
		})
	}
}

func TestOpenAIStream(t *testing.T) {
	svc := apptest.Start(t, nil)
	for _, usage := range []bool{false, true} {
		t.Run(fmt.Sprint("include_usage=", usage), func(t *testing.T) {
			extra := `,"stream":true`
			if usage {
				extra += `,"stream_options":{"include_usage":true}`
			}
			res, b := svc.Post(t, completionsPath, completion("companion-wanderer", "u1", `[{"role":"user","content":"Hello"}]`, extra))
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, %s: %s", res.StatusCode, res.Header.Get("Content-Type"), b)
			}
			chunks, done := sseChunks(t, b)
			if !done {
				t.Error("no data: [DONE]")
			}
			if len(chunks) < 3 {
				t.Fatalf("%d chunks: %s", len(chunks), b)
			}
			var text strings.Builder
			for i, c := range chunks {
				if c["id"] != chunks[0]["id"] || c["created"] != chunks[0]["created"] || c["object"] != "chat.completion.chunk" || c["model"] != "companion-wanderer" {
					t.Errorf("chunk %d: id, created, object or model differ: %v", i, c)
				}
				_, hasUsage := c["usage"]
				if hasUsage != usage {
					t.Errorf("chunk %d: usage present %v, want %v", i, hasUsage, usage)
				}
				choices := c["choices"].([]any)
				if usage && i == len(chunks)-1 {
					u, _ := c["usage"].(map[string]any)
					if len(choices) != 0 || u == nil || u["total_tokens"].(float64) == 0 {
						t.Errorf("last chunk %v, want no choices and the usage", c)
					}
					continue
				}
				if usage && c["usage"] != nil {
					t.Errorf("chunk %d: usage %v, want null", i, c["usage"])
				}
				ch := choices[0].(map[string]any)
				delta := ch["delta"].(map[string]any)
				switch {
				case i == 0:
					if delta["role"] != "assistant" || delta["content"] != "" || ch["finish_reason"] != nil {
						t.Errorf("first chunk %v", c)
					}
				case ch["finish_reason"] != nil:
					if ch["finish_reason"] != "stop" || len(delta) != 0 {
						t.Errorf("finishing chunk %v", c)
					}
					if want := len(chunks) - 1 - map[bool]int{false: 0, true: 1}[usage]; i != want {
						t.Errorf("finish_reason on chunk %d, want %d", i, want)
					}
				default:
					text.WriteString(delta["content"].(string))
				}
			}
			if !strings.Contains(text.String(), "road") {
				t.Errorf("text %q is not the wanderer's", text.String())
			}
		})
	}
}

// openaiThreads are u's threads, and the messages of each.
func openaiThreads(t *testing.T, svc *apptest.Service, u string) map[string][]string {
	t.Helper()
	_, b := svc.Do(t, "GET", "/api/memory/threads?resourceId="+u, "")
	var list api.ThreadList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out := map[string][]string{}
	for _, th := range list.Threads {
		_, b := svc.Do(t, "GET", "/api/memory/threads/"+th.ID+"/messages?resourceId="+u, "")
		var ms api.MessageList
		if err := json.Unmarshal(b, &ms); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		for _, m := range ms.Messages {
			var text string
			for _, p := range m.Parts {
				text += p.Text
			}
			out[th.ID] = append(out[th.ID], m.Role+": "+text)
		}
	}
	return out
}

func TestOpenAIThreads(t *testing.T) {
	svc := apptest.Start(t, nil)
	ask := func(t *testing.T, user, msgs, extra string, h http.Header) string {
		t.Helper()
		res, b := svc.DoHeader(t, "POST", completionsPath, completion("companion", user, msgs, extra), h)
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
		var c api.OpenAIChatCompletion
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c.Choices[0].Message.Content
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	t.Run("resent history is one thread, stored once", func(t *testing.T) {
		sys := `{"role":"system","content":"You are Sam"}`
		a1 := ask(t, "u1", `[`+sys+`,{"role":"user","content":"Hello"}]`, "", nil)
		history := `[` + sys + `,{"role":"user","content":"Hello"},{"role":"assistant","content":` + quote(a1) + `},{"role":"user","content":"And you?"}]`
		a2 := ask(t, "u1", history, "", nil)
		// The third turn, streamed: the same rule.
		streamed, b := svc.Post(t, completionsPath, completion("companion", "u1",
			`[`+sys+`,{"role":"user","content":"Hello"},{"role":"assistant","content":`+quote(a1)+`},{"role":"user","content":"And you?"},{"role":"assistant","content":`+quote(a2)+`},{"role":"user","content":"Bye"}]`, `,"stream":true`))
		if streamed.StatusCode != 200 {
			t.Fatalf("status %d: %s", streamed.StatusCode, b)
		}
		threads := openaiThreads(t, svc, "u1")
		if len(threads) != 1 {
			t.Fatalf("%d threads, want 1: %v", len(threads), threads)
		}
		for id, msgs := range threads {
			if !strings.HasPrefix(id, "chat-") {
				t.Errorf("thread %q, want a derived id", id)
			}
			want := []string{"user: Hello", "assistant: " + a1, "user: And you?", "assistant: " + a2, "user: Bye"}
			if len(msgs) != 6 || strings.Join(msgs[:5], "\n") != strings.Join(want, "\n") || !strings.HasPrefix(msgs[5], "assistant: ") {
				t.Errorf("thread holds\n%s\nwant\n%s\nand the last reply", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
			}
		}
	})
	t.Run("another first message or user is another thread", func(t *testing.T) {
		ask(t, "u2", `[{"role":"user","content":"Hello"}]`, "", nil)
		ask(t, "u2", `[{"role":"user","content":"Good morning"}]`, "", nil)
		ask(t, "u3", `[{"role":"user","content":"Hello"}]`, "", nil)
		if n := len(openaiThreads(t, svc, "u2")); n != 2 {
			t.Errorf("u2 has %d threads, want 2", n)
		}
		if n := len(openaiThreads(t, svc, "u3")); n != 1 {
			t.Errorf("u3 has %d threads, want 1", n)
		}
	})
	t.Run("thread from the header or the field", func(t *testing.T) {
		ask(t, "u4", `[{"role":"user","content":"Hello"}]`, "", http.Header{"X-Companion-Thread-Id": {"mine"}})
		ask(t, "u4", `[{"role":"user","content":"Another start"}]`, `,"thread_id":"mine"`, nil)
		threads := openaiThreads(t, svc, "u4")
		if len(threads) != 1 || len(threads["mine"]) != 4 {
			t.Errorf("threads %v, want thread mine with 4 messages", threads)
		}
	})
}

func TestOpenAIErrors(t *testing.T) {
	svc := authService(t, nil)
	alice := http.Header{"Authorization": {"Bearer key-alice"}}
	hello := `[{"role":"user","content":"Hello"}]`
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		status                   int
		typ, code                string
	}{
		{name: "no key", method: "POST", path: completionsPath, body: completion("companion", "", hello, ""), status: 401, typ: "authentication_error", code: "invalid_api_key"},
		{name: "wrong key", method: "GET", path: "/v1/models", header: http.Header{"Authorization": {"Bearer nope"}}, status: 401, typ: "authentication_error", code: "invalid_api_key"},
		{name: "bad JSON", method: "POST", path: completionsPath, body: `{"model":`, header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "unknown model", method: "POST", path: completionsPath, body: completion("gpt-4o", "", hello, ""), header: alice, status: 404, typ: "invalid_request_error", code: "model_not_found"},
		{name: "unknown personality", method: "POST", path: completionsPath, body: completion("companion-pirate", "", hello, ""), header: alice, status: 404, typ: "invalid_request_error", code: "model_not_found"},
		{name: "no model", method: "POST", path: completionsPath, body: `{"messages":` + hello + `}`, header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "no messages", method: "POST", path: completionsPath, body: `{"model":"companion"}`, header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "last message not the user's", method: "POST", path: completionsPath, body: completion("companion", "", `[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"}]`, ""), header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "tool message", method: "POST", path: completionsPath, body: completion("companion", "", `[{"role":"tool","content":"{}","tool_call_id":"c"},{"role":"user","content":"Hi"}]`, ""), header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "client tools", method: "POST", path: completionsPath, body: completion("companion", "", hello, `,"tools":[{"type":"function","function":{"name":"f"}}]`), header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "n", method: "POST", path: completionsPath, body: completion("companion", "", hello, `,"n":2`), header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "max_tokens 0", method: "POST", path: completionsPath, body: completion("companion", "", hello, `,"max_tokens":0`), header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "temperature", method: "POST", path: completionsPath, body: completion("companion", "", hello, `,"temperature":3`), header: alice, status: 400, typ: "invalid_request_error", code: "invalid"},
		{name: "another's resource", method: "POST", path: completionsPath, body: completion("companion", "bob", hello, ""), header: alice, status: 403, typ: "permission_error", code: "forbidden"},
		{name: "no such route", method: "GET", path: "/v1/embeddings", header: alice, status: 404, typ: "invalid_request_error", code: "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := svc.DoHeader(t, tc.method, tc.path, tc.body, tc.header)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			var e struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if msg, _ := e.Error["message"].(string); msg == "" || e.Error["type"] != tc.typ || e.Error["code"] != tc.code {
				t.Errorf("error %v, want a message, type %s, code %s", e.Error, tc.typ, tc.code)
			}
			if _, ok := e.Error["param"]; !ok {
				t.Errorf("error %v has no param", e.Error)
			}
		})
	}
	// A JWT and an API key act alike.
	res, b := svc.DoHeader(t, "POST", completionsPath, completion("companion", "", hello, ""), http.Header{"Authorization": {"Bearer " + token(t, "dana", time.Time{})}})
	if res.StatusCode != 200 {
		t.Errorf("with a token: status %d: %s", res.StatusCode, b)
	}
}

// TestOpenAITemperature: temperature goes to the provider, and only when
// the client sent one.
func TestOpenAITemperature(t *testing.T) {
	fake := fakeopenai.New(upstream.Options{})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	svc := apptest.Start(t, func(cfg *app.Config) {
		cfg.Model.Model, cfg.Model.BaseURL, cfg.Model.OpenAIAPIKey = "openai/gpt-4o-mini", srv.URL+"/v1", "sk-test-0123456789abcdef"
	})
	for i, tc := range []struct {
		extra string
		want  any
	}{{`,"temperature":0.3`, 0.3}, {`,"temperature":0`, 0.0}, {"", nil}} {
		res, b := svc.Post(t, completionsPath, completion("companion", "u1", fmt.Sprintf(`[{"role":"user","content":"Hello %d"}]`, i), tc.extra))
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
		// The turn's call, not a thread title's, which may come after it
		// and offers no tools.
		var sent map[string]any
		for _, ex := range fake.Exchanges() {
			var body map[string]any
			if err := json.Unmarshal(ex.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["tools"] != nil && strings.Contains(string(ex.Body), fmt.Sprintf("Hello %d", i)) {
				sent = body
			}
		}
		if sent == nil {
			t.Fatalf("%s: no call of the turn reached the provider", tc.extra)
		}
		if got, ok := sent["temperature"]; got != tc.want || ok != (tc.want != nil) {
			t.Errorf("%s: the provider got temperature %v (sent: %v), want %v", tc.extra, got, ok, tc.want)
		}
	}
}

// TestOpenAILimitsAndFailures: a rate limit answers 429 in OpenAI's shape,
// and a model that fails mid-answer ends the stream with an error frame,
// then [DONE].
func TestOpenAILimitsAndFailures(t *testing.T) {
	t.Run("rate limit", func(t *testing.T) {
		svc := apptest.Start(t, func(cfg *app.Config) { cfg.Limits.RateLimit = 1 })
		hello := completion("companion", "u1", `[{"role":"user","content":"Hello"}]`, "")
		if res, b := svc.Post(t, completionsPath, hello); res.StatusCode != 200 {
			t.Fatalf("first request: %d %s", res.StatusCode, b)
		}
		res, b := svc.Post(t, completionsPath, hello)
		var e api.OpenAIErrorBody
		_ = json.Unmarshal(b, &e)
		if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || e.Error.Type != "rate_limit_error" || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" {
			t.Errorf("second request: %d, Retry-After %q: %s", res.StatusCode, res.Header.Get("Retry-After"), b)
		}
	})
	t.Run("model cut mid-answer", func(t *testing.T) {
		fake := fakeopenai.New(upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultCut, After: 3}, {Kind: upstream.FaultCut, After: 3}, {Kind: upstream.FaultCut, After: 3}}})
		srv := httptest.NewServer(fake)
		t.Cleanup(srv.Close)
		svc := apptest.Start(t, func(cfg *app.Config) {
			cfg.Model.Model, cfg.Model.BaseURL, cfg.Model.OpenAIAPIKey = "openai/gpt-4o-mini", srv.URL+"/v1", "sk-test-0123456789abcdef"
			cfg.Model.RetryDelay = time.Millisecond
		})
		res, b := svc.Post(t, completionsPath, completion("companion", "u1", `[{"role":"user","content":"Hello"}]`, `,"stream":true`))
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
		chunks, done := sseChunks(t, b)
		last := chunks[len(chunks)-1]
		e, _ := last["error"].(map[string]any)
		if !done || e == nil || e["type"] != "server_error" || e["code"] != "model_error" || !strings.Contains(e["message"].(string), "model failed") {
			t.Errorf("the stream does not end with the model's failure, then [DONE] (%v):\n%s", done, b)
		}
		for _, c := range chunks[:len(chunks)-1] {
			if c["object"] != "chat.completion.chunk" {
				t.Errorf("a chunk before the error: %v", c)
			}
		}
	})
}

// minorStop ends a minor's reply that the minor-content processor stopped.
const minorStop = "\n\nI can't continue with that. Let's talk about something else."

// TestOpenAIUser: a completion's user is who the request says, as on the
// other routes: a minor's credential brings the minors' rules, and
// Accept-Language the locale of the crisis referral.
func TestOpenAIUser(t *testing.T) {
	svc := authService(t, nil)
	for _, tc := range []struct {
		name, say string
		header    http.Header
		// want is a part of the answer, wantNot what it must not hold.
		want, wantNot string
	}{
		{name: "a minor's reply is stopped", say: "Remember that I want to talk about lingerie.",
			header: bearer(minorToken(t, "teen")), want: minorStop, wantNot: "lingerie"},
		{name: "an adult's is not", say: "Remember that I want to talk about lingerie.",
			header: bearer("key-alice"), want: "lingerie", wantNot: minorStop},
		{name: "the referral in the locale of Accept-Language", say: "i want to kill myself",
			header: http.Header{"Authorization": {"Bearer key-alice"}, "Accept-Language": {"en-GB,en;q=0.8"}}, want: "Samaritans", wantNot: "988"},
		{name: "the default referral without it", say: "i want to kill myself",
			header: bearer("key-alice"), want: "988", wantNot: "Samaritans"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				extra := fmt.Sprintf(`,"thread_id":"user-%s-%v"`, strings.ReplaceAll(tc.name, " ", "-"), stream)
				if stream {
					extra += `,"stream":true`
				}
				res, b := svc.DoHeader(t, "POST", completionsPath, completion("companion", "", fmt.Sprintf(`[{"role":"user","content":%q}]`, tc.say), extra), tc.header)
				if res.StatusCode != 200 {
					t.Fatalf("status %d: %s", res.StatusCode, b)
				}
				var text string
				if stream {
					chunks, _ := sseChunks(t, b)
					for _, c := range chunks {
						if ch, _ := c["choices"].([]any); len(ch) == 1 {
							s, _ := ch[0].(map[string]any)["delta"].(map[string]any)["content"].(string)
							text += s
						}
					}
				} else {
					var c api.OpenAIChatCompletion
					if err := json.Unmarshal(b, &c); err != nil {
						t.Fatal(err)
					}
					text = c.Choices[0].Message.Content
				}
				if !strings.Contains(text, tc.want) || strings.Contains(text, tc.wantNot) {
					t.Errorf("answer %q, want one with %q and without %q", text, tc.want, tc.wantNot)
				}
			})
		}
	}
}

// disclosureText is the default ai-disclosure notice's.
const disclosureText = "You are talking to an AI companion, not a person."

// openaiAnswer is what a completion, whole or streamed, told: its text, its
// finish reason, and its safety fields as a client reads them.
type openaiAnswer struct {
	text, finish string
	notices      []api.Notice
	tripwire     bool
	reason       string
}

// readCompletion reads a whole completion; an ordinary one must have only
// OpenAI's fields.
func readCompletion(t *testing.T, b []byte) openaiAnswer {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var c api.OpenAIChatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	checkSafetyKeys(t, "the completion", keys, c.Notices != nil, c.Tripwire)
	return openaiAnswer{text: c.Choices[0].Message.Content, finish: c.Choices[0].FinishReason,
		notices: c.Notices, tripwire: c.Tripwire, reason: c.TripwireReason}
}

// readChunks reads a stream: the notices must be on the first chunk alone,
// the tripwire on the finishing chunk alone.
func readChunks(t *testing.T, b []byte) openaiAnswer {
	t.Helper()
	var a openaiAnswer
	sc := bufio.NewScanner(bytes.NewReader(b))
	i := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var keys map[string]json.RawMessage
		var c api.OpenAIChunk
		if err := json.Unmarshal([]byte(data), &keys); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		finishing := len(c.Choices) == 1 && c.Choices[0].FinishReason != nil
		checkSafetyKeys(t, fmt.Sprintf("chunk %d", i), keys, i == 0 && c.Notices != nil, finishing && c.Tripwire)
		switch {
		case i == 0:
			a.notices = c.Notices
		case finishing:
			a.finish, a.tripwire, a.reason = *c.Choices[0].FinishReason, c.Tripwire, c.TripwireReason
		case len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil:
			a.text += *c.Choices[0].Delta.Content
		}
		i++
	}
	return a
}

// checkSafetyKeys fails unless obj's top-level keys are OpenAI's, plus
// notices when notices and the tripwire's when tripped.
func checkSafetyKeys(t *testing.T, what string, obj map[string]json.RawMessage, notices, tripped bool) {
	t.Helper()
	allowed := map[string]bool{"id": true, "object": true, "created": true, "model": true, "choices": true, "usage": true,
		"notices": notices, "tripwire": tripped, "tripwireReason": tripped}
	for k := range obj {
		if !allowed[k] {
			t.Errorf("%s has %s: %s", what, k, obj[k])
		}
	}
	if _, ok := obj["notices"]; ok && string(obj["notices"]) == "[]" {
		t.Errorf("%s has an empty notices array, which should be absent", what)
	}
}

// TestOpenAISafety: the OpenAI front carries the run's notices and
// tripwire, whole and streamed, and a tripped run ends content_filter;
// an ordinary answer has OpenAI's fields alone.
func TestOpenAISafety(t *testing.T) {
	svc := authService(t, nil)
	adult := bearer("key-alice")
	minor := minorToken(t, "teen")
	for _, mode := range []struct{ name, extra string }{
		{"whole", ""},
		{"stream", `,"stream":true`},
		{"stream with usage", `,"stream":true,"stream_options":{"include_usage":true}`},
	} {
		for _, tc := range []struct {
			name string
			who  http.Header
			// before is a turn sent first on the same thread.
			before, say string
			kinds       []string
			finish      string
			reason      string
			// text is a part of the answer; referral, that the answer
			// gives the crisis-referral notice's text.
			text     string
			referral bool
		}{
			{name: "first turn", who: adult, say: "Hello", kinds: []string{api.NoticeAIDisclosure}, finish: "stop"},
			{name: "next turn", who: adult, before: "Hello", say: "How are you?", finish: "stop"},
			{name: "crisis", who: adult, say: "i want to kill myself", kinds: []string{api.NoticeAIDisclosure, api.NoticeCrisisReferral},
				finish: "content_filter", reason: "crisis: suicidal ideation", referral: true},
			{name: "crisis in a thread", who: adult, before: "Hello", say: "i want to kill myself", kinds: []string{api.NoticeCrisisReferral},
				finish: "content_filter", reason: "crisis: suicidal ideation", referral: true},
			{name: "a minor's reply stopped", who: bearer(minor), say: "Remember that I want to talk about lingerie.", kinds: []string{api.NoticeAIDisclosure},
				finish: "content_filter", reason: "minor-content: sexual content in a reply to a minor", text: minorStop},
			{name: "max_tokens", who: adult, before: "Hello", say: "Tell me a long story about the sea.", finish: "length"},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				thread := fmt.Sprintf(`,"thread_id":%q`, strings.ReplaceAll(mode.name+"-"+tc.name, " ", "-"))
				msgs := func(say string) string { return fmt.Sprintf(`[{"role":"user","content":%q}]`, say) }
				if tc.before != "" {
					if res, b := svc.DoHeader(t, "POST", completionsPath, completion("companion", "", msgs(tc.before), thread), tc.who); res.StatusCode != 200 {
						t.Fatalf("the turn before: status %d: %s", res.StatusCode, b)
					}
				}
				extra := thread + mode.extra
				if tc.finish == "length" {
					extra += `,"max_tokens":3`
				}
				res, b := svc.DoHeader(t, "POST", completionsPath, completion("companion", "", msgs(tc.say), extra), tc.who)
				if res.StatusCode != 200 {
					t.Fatalf("status %d: %s", res.StatusCode, b)
				}
				var a openaiAnswer
				if mode.extra == "" {
					a = readCompletion(t, b)
				} else {
					a = readChunks(t, b)
				}
				var kinds []string
				for _, n := range a.notices {
					if n.Text == "" {
						t.Errorf("notice %s has no text", n.Kind)
					}
					if n.Kind == api.NoticeAIDisclosure && n.Text != disclosureText {
						t.Errorf("disclosure %q", n.Text)
					}
					if n.Kind == api.NoticeCrisisReferral && tc.referral && !strings.Contains(a.text, n.Text) {
						t.Errorf("the answer %q does not give the referral %q", a.text, n.Text)
					}
					kinds = append(kinds, n.Kind)
				}
				if strings.Join(kinds, " ") != strings.Join(tc.kinds, " ") {
					t.Errorf("notices %v, want %v", kinds, tc.kinds)
				}
				if a.finish != tc.finish || a.tripwire != (tc.reason != "") || a.reason != tc.reason {
					t.Errorf("finish_reason %q, tripwire %v %q; want %q, %q", a.finish, a.tripwire, a.reason, tc.finish, tc.reason)
				}
				if a.text == "" || !strings.Contains(a.text, tc.text) {
					t.Errorf("answer %q, want one with %q", a.text, tc.text)
				}
			})
		}
	}
}
