package moderation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/safety/moderation"
	_ "github.com/companionhq/companion/internal/testkit"
)

const key = "sk-test-0123456789abcdef"

// server answers every request with status and body, after checking the
// path, the key and the request's JSON; the request body it saw is sent
// on seen.
func server(t *testing.T, path string, status int, body string) (url string, seen <-chan map[string]any) {
	t.Helper()
	ch := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			t.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization %q", got)
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		select {
		case ch <- req:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

func categories(on ...string) string {
	all := []string{"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent", "self-harm",
		"self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors", "violence", "violence/graphic"}
	var b strings.Builder
	for i, c := range all {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%t", c, slices.Contains(on, c))
	}
	return "{" + b.String() + "}"
}

func moderationAnswer(flagged bool, on ...string) string {
	return fmt.Sprintf(`{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":%t,"categories":%s,"category_scores":{"self-harm":0.9}}]}`,
		flagged, categories(on...))
}

func TestOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name           string
		answer         string
		want           moderation.Verdict
		reason         string
		base, basePath string
	}{
		{name: "not flagged", answer: moderationAnswer(false), want: moderation.Verdict{}},
		{name: "self-harm", answer: moderationAnswer(true, "self-harm/intent", "self-harm"),
			want:   moderation.Verdict{Flagged: true, Categories: []string{"self-harm", "self-harm/intent"}, SelfHarm: true},
			reason: "moderation: self-harm, self-harm/intent"},
		{name: "sexual and violence", answer: moderationAnswer(true, "violence", "sexual/minors"),
			want:   moderation.Verdict{Flagged: true, Categories: []string{"sexual/minors", "violence"}, Sexual: true},
			reason: "moderation: sexual/minors, violence"},
		{name: "flagged without categories", answer: `{"results":[{"flagged":true,"categories":{}}]}`,
			want: moderation.Verdict{Flagged: true}, reason: "moderation: flagged"},
		{name: "a category without the flag", answer: `{"results":[{"flagged":false,"categories":{"hate":true,"violence":false}}]}`,
			want: moderation.Verdict{Flagged: true, Categories: []string{"hate"}}},
		{name: "several results", answer: `{"results":[{"flagged":true,"categories":{"hate":true}},{"flagged":true,"categories":{"hate":true,"sexual":true}}]}`,
			want: moderation.Verdict{Flagged: true, Categories: []string{"hate", "sexual"}, Sexual: true}},
		{name: "base URL with /v1", base: "/v1/", answer: moderationAnswer(false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, seen := server(t, "/v1/moderations", 200, tc.answer)
			c := moderation.NewOpenAI(moderation.Config{BaseURL: url + tc.base, APIKey: key, Model: "omni-moderation-latest"})
			v, err := c.Check(context.Background(), "some text")
			if err != nil {
				t.Fatal(err)
			}
			if !equal(v, tc.want) {
				t.Errorf("verdict %+v, want %+v", v, tc.want)
			}
			if tc.reason != "" && v.Reason() != tc.reason {
				t.Errorf("reason %q, want %q", v.Reason(), tc.reason)
			}
			if req := <-seen; req["model"] != "omni-moderation-latest" || req["input"] != "some text" {
				t.Errorf("request %v", req)
			}
		})
	}
}

func equal(a, b moderation.Verdict) bool {
	return a.Flagged == b.Flagged && a.SelfHarm == b.SelfHarm && a.Sexual == b.Sexual && slices.Equal(a.Categories, b.Categories)
}

// TestOpenAIWithoutModel: no model leaves the choice to the server.
func TestOpenAIWithoutModel(t *testing.T) {
	url, seen := server(t, "/v1/moderations", 200, moderationAnswer(false))
	if _, err := moderation.NewOpenAI(moderation.Config{BaseURL: url, APIKey: key}).Check(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if req := <-seen; len(req) != 1 || req["input"] != "x" {
		t.Errorf("request %v, want the input alone", req)
	}
}

func TestGuard(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   moderation.Verdict
		reason string
	}{
		{answer: "safe", want: moderation.Verdict{}},
		{answer: "\n\nsafe\n", want: moderation.Verdict{}},
		{answer: "unsafe\nS11", want: moderation.Verdict{Flagged: true, Categories: []string{"self-harm"}, SelfHarm: true}, reason: "moderation: self-harm"},
		{answer: "unsafe\nS4,S12", want: moderation.Verdict{Flagged: true, Categories: []string{"sexual", "sexual/minors"}, Sexual: true},
			reason: "moderation: sexual, sexual/minors"},
		{answer: "Unsafe\n s1, s10 ", want: moderation.Verdict{Flagged: true, Categories: []string{"hate", "violent-crimes"}}},
		{answer: "unsafe\nS11,S11", want: moderation.Verdict{Flagged: true, Categories: []string{"self-harm"}, SelfHarm: true}},
		{answer: "unsafe", want: moderation.Verdict{Flagged: true}, reason: "moderation: flagged"},
		{answer: "unsafe\nS15", want: moderation.Verdict{Flagged: true, Categories: []string{"S15"}}},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			url, seen := server(t, "/v1/chat/completions", 200, chatAnswer(tc.answer))
			v, err := moderation.NewGuard(moderation.Config{BaseURL: url, APIKey: key, Model: "llama-guard3"}).Check(context.Background(), "some text")
			if err != nil {
				t.Fatal(err)
			}
			if !equal(v, tc.want) {
				t.Errorf("verdict %+v, want %+v", v, tc.want)
			}
			if tc.reason != "" && v.Reason() != tc.reason {
				t.Errorf("reason %q, want %q", v.Reason(), tc.reason)
			}
			req := <-seen
			msgs, _ := req["messages"].([]any)
			if req["model"] != "llama-guard3" || req["stream"] != false || len(msgs) != 1 ||
				fmt.Sprint(msgs[0]) != "map[content:some text role:user]" {
				t.Errorf("request %v", req)
			}
		})
	}
}

func chatAnswer(content string) string {
	b, _ := json.Marshal(content)
	return `{"id":"chatcmpl-1","object":"chat.completion","model":"llama-guard3","choices":[{"index":0,"message":{"role":"assistant","content":` +
		string(b) + `},"finish_reason":"stop"}]}`
}

// TestGuardUnreadable: an answer that is neither safe nor unsafe is an
// error, never a verdict of safe.
func TestGuardUnreadable(t *testing.T) {
	for _, answer := range []string{"", "I cannot help with that.", "safe\nS1", "sAfE-ish", "unsafe\nthis text talks about things at length",
		"yes", strings.Repeat("x", 500)} {
		url, _ := server(t, "/v1/chat/completions", 200, chatAnswer(answer))
		v, err := moderation.NewGuard(moderation.Config{BaseURL: url, APIKey: key, Model: "g"}).Check(context.Background(), "x")
		if err == nil || !strings.Contains(err.Error(), "moderation: guard") || len(err.Error()) > 300 {
			t.Errorf("answer %q: verdict %+v, error %v", answer, v, err)
		}
	}
	for _, body := range []string{`{"choices":[]}`, `not json`, `{"choices":[{"message":{"content":3}}]}`} {
		url, _ := server(t, "/v1/chat/completions", 200, body)
		if _, err := moderation.NewGuard(moderation.Config{BaseURL: url, APIKey: key, Model: "g"}).Check(context.Background(), "x"); err == nil {
			t.Errorf("body %s: no error", body)
		}
	}
	if _, err := moderation.NewGuard(moderation.Config{BaseURL: "http://127.0.0.1:1", APIKey: key}).Check(context.Background(), "x"); err == nil ||
		!strings.Contains(err.Error(), "no guard model") {
		t.Errorf("without a model: %v", err)
	}
}

// TestStatus: a non-2xx answer is an error with the status and the
// provider's message, without the key even when the body echoes it.
func TestStatus(t *testing.T) {
	body := `{"error":{"message":"The server had an error (key ` + key + `)","type":"server_error"}}`
	for _, c := range []moderation.Checker{
		moderation.NewOpenAI(moderation.Config{BaseURL: must(server(t, "/v1/moderations", 500, body)), APIKey: key}),
		moderation.NewGuard(moderation.Config{BaseURL: must(server(t, "/v1/chat/completions", 500, body)), APIKey: key, Model: "g"}),
	} {
		_, err := c.Check(context.Background(), "x")
		var se *moderation.StatusError
		if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "HTTP 500") ||
			!strings.Contains(err.Error(), "The server had an error (key [redacted])") {
			t.Errorf("error %v", err)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	url, _ := server(t, "/v1/moderations", 200, `{"results":[]}`)
	if _, err := moderation.NewOpenAI(moderation.Config{BaseURL: url, APIKey: key}).Check(context.Background(), "x"); err == nil {
		t.Error("no result: no error")
	}
}

func must(url string, _ <-chan map[string]any) string { return url }

// TestTimeout: Timeout bounds a check, and the caller's context does too;
// neither waits for a server that does not answer.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	_, err := moderation.NewOpenAI(moderation.Config{BaseURL: srv.URL, APIKey: key, Timeout: 50 * time.Millisecond}).Check(context.Background(), "x")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 50ms") || time.Since(start) > 5*time.Second {
		t.Errorf("after %s: %v", time.Since(start), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = moderation.NewGuard(moderation.Config{BaseURL: srv.URL, APIKey: key, Model: "g"}).Check(ctx, "x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the caller's deadline: %v", err)
	}
}

// TestLargeAnswer: an answer beyond the bound is an error, not read whole.
func TestLargeAnswer(t *testing.T) {
	url, _ := server(t, "/v1/moderations", 200, `{"results":[{"flagged":false,"categories":{}}],"pad":"`+strings.Repeat("x", 2<<20)+`"}`)
	if _, err := moderation.NewOpenAI(moderation.Config{BaseURL: url, APIKey: key}).Check(context.Background(), "x"); err == nil ||
		!strings.Contains(err.Error(), "larger than") {
		t.Errorf("error %v", err)
	}
}

// TestKeyNotShown: the configuration prints without its key, and so do
// the errors of a server that cannot be reached.
func TestKeyNotShown(t *testing.T) {
	cfg := moderation.Config{BaseURL: "http://user:pass@127.0.0.1:1", APIKey: key}
	if s := fmt.Sprintf("%v %+v", cfg, cfg); strings.Contains(s, key) {
		t.Errorf("the configuration prints its key: %s", s)
	}
	_, err := moderation.NewOpenAI(cfg).Check(context.Background(), "x")
	if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "pass") {
		t.Errorf("error %v", err)
	}
}
