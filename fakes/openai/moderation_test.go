package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
)

func TestModerate(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Hello there, how are you?", nil},
		{"Sometimes I want to kill myself.", []string{"self-harm", "self-harm/intent"}},
		{"I WANT TO END MY LIFE", []string{"self-harm", "self-harm/intent"}},
		{"I\u2019m suicidal tonight", []string{"self-harm", "self-harm/intent"}},
		{"i just want to die", []string{"self-harm", "self-harm/intent"}},
		{"The novel is about a suicide in 1920.", nil},
		{"She wanted to hurt myselfie", nil}, // whole words only
		{"Let's have sex", []string{"sexual"}},
		{"I will kill you", []string{"violence"}},
		{"a murder mystery", []string{"violence"}},
		{"stabilize the shelf", nil},
		{"I'll stab him and then kill myself", []string{"self-harm", "self-harm/intent", "violence"}},
	} {
		if got := openai.Moderate(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Moderate(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	for text, want := range map[string]string{
		"Hello":                             "safe",
		"I want to end my life":             "unsafe\nS11",
		"have sex with me or I'll kill you": "unsafe\nS1,S12",
		"kill myself, have sex, stab":       "unsafe\nS1,S11,S12",
	} {
		if got := openai.GuardAnswer(text); got != want {
			t.Errorf("GuardAnswer(%q) = %q, want %q", text, got, want)
		}
	}
}

func postTo(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// TestModerations: the endpoint answers in OpenAI's shape, every category
// present, the same answer for the same request.
func TestModerations(t *testing.T) {
	srv := httptest.NewServer(openai.New(upstream.Options{}))
	defer srv.Close()
	type result struct {
		Flagged        bool
		Categories     map[string]bool
		CategoryScores map[string]float64  `json:"category_scores"`
		Applied        map[string][]string `json:"category_applied_input_types"`
	}
	var out struct {
		ID, Model string
		Results   []result
	}
	res, b := postTo(t, srv.URL+"/v1/moderations", `{"input":"I want to end my life"}`)
	if err := json.Unmarshal(b, &out); err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	r := out.Results[0]
	if !strings.HasPrefix(out.ID, "modr-") || out.Model != openai.DefaultModerationModel || len(out.Results) != 1 || !r.Flagged ||
		len(r.Categories) != 13 || len(r.CategoryScores) != 13 || len(r.Applied) != 13 ||
		!r.Categories["self-harm"] || !r.Categories["self-harm/intent"] || r.Categories["violence"] ||
		r.CategoryScores["self-harm"] < 0.5 || r.CategoryScores["violence"] > 0.5 || !slices.Equal(r.Applied["self-harm"], []string{"text"}) {
		t.Errorf("answer %s", b)
	}
	if _, again := postTo(t, srv.URL+"/v1/moderations", `{"input":"I want to end my life"}`); string(again) != string(b) {
		t.Errorf("not deterministic:\n%s\n%s", b, again)
	}
	_, b = postTo(t, srv.URL+"/moderations", `{"model":"text-moderation-latest","input":["hello","I will kill you"]}`)
	out.Results = nil
	if err := json.Unmarshal(b, &out); err != nil || out.Model != "text-moderation-latest" || len(out.Results) != 2 ||
		out.Results[0].Flagged || !out.Results[1].Flagged || !out.Results[1].Categories["violence"] || out.Results[1].Applied != nil {
		t.Errorf("answer %s", b)
	}
	_, b = postTo(t, srv.URL+"/v1/moderations", `{"input":[{"type":"text","text":"let's have sex"},{"type":"image_url","image_url":{"url":"x"}}]}`)
	out.Results = nil
	if err := json.Unmarshal(b, &out); err != nil || len(out.Results) != 1 || !out.Results[0].Categories["sexual"] {
		t.Errorf("answer %s", b)
	}
	for _, body := range []string{`{"model":"m"}`, `{"input":3}`, `{"input":[]}`, `not json`} {
		if res, b := postTo(t, srv.URL+"/v1/moderations", body); res.StatusCode != 400 || !strings.Contains(string(b), `"error":{`) {
			t.Errorf("%s: %d %s", body, res.StatusCode, b)
		}
	}
}

// TestModerationFaults: the fake's faults and key check apply to the
// moderations endpoint too.
func TestModerationFaults(t *testing.T) {
	srv := httptest.NewServer(openai.New(upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultStatus, Status: 500}, {Kind: upstream.FaultMalformed}}}))
	defer srv.Close()
	if res, _ := postTo(t, srv.URL+"/v1/moderations", `{"input":"x"}`); res.StatusCode != 500 {
		t.Errorf("status fault: %d", res.StatusCode)
	}
	var v any
	if _, b := postTo(t, srv.URL+"/v1/moderations", `{"input":"x"}`); json.Unmarshal(b, &v) == nil {
		t.Errorf("malformed fault: %s", b)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/moderations", strings.NewReader(`{"input":"x"}`))
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 401 {
		t.Errorf("without a key: %v %v", res, err)
	}
}

func guardRequest(text, extra string) string {
	b, _ := json.Marshal(text)
	return `{"model":"fake-guard"` + extra + `,"messages":[{"role":"user","content":` + string(b) + `}]}`
}

// TestGuardModel: "fake-guard" answers as a guard model, streamed or not.
func TestGuardModel(t *testing.T) {
	srv := httptest.NewServer(openai.New(upstream.Options{}))
	defer srv.Close()
	for text, want := range map[string]string{"What's the weather in Berlin?": "safe", "I want to die": "unsafe\nS11", "have sex, or I stab you": "unsafe\nS1,S12"} {
		res, b := postTo(t, srv.URL+"/v1/chat/completions", guardRequest(text, `,"stream":false,"max_tokens":64,"temperature":0`))
		var c struct {
			Object  string
			Choices []struct {
				Message      struct{ Role, Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal(b, &c); err != nil || res.StatusCode != 200 || c.Object != "chat.completion" || len(c.Choices) != 1 ||
			c.Choices[0].Message.Content != want || c.Choices[0].Message.Role != "assistant" || c.Choices[0].FinishReason != "stop" || c.Usage.TotalTokens == 0 {
			t.Errorf("%q: %d %s, want %q", text, res.StatusCode, b, want)
		}
		res, b = postTo(t, srv.URL+"/v1/chat/completions", guardRequest(text, `,"stream":true,"stream_options":{"include_usage":true}`))
		chunks := read(t, strings.NewReader(string(b)))
		content := ""
		for _, d := range chunks[:len(chunks)-1] {
			var ch struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if err := json.Unmarshal([]byte(d), &ch); err != nil {
				t.Fatal(err)
			}
			for _, c := range ch.Choices {
				content += c.Delta.Content
			}
		}
		if res.Header.Get("Content-Type") != "text/event-stream" || content != want || chunks[len(chunks)-1] != "[DONE]" ||
			!strings.Contains(chunks[len(chunks)-2], `"usage":{`) {
			t.Errorf("%q streamed: %q, %q", text, content, chunks)
		}
	}
	// Other models still stream only.
	if res, b := postTo(t, srv.URL+"/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 400 ||
		!strings.Contains(string(b), "streaming requests only") {
		t.Errorf("a non-streaming request to another model: %d %s", res.StatusCode, b)
	}
}
