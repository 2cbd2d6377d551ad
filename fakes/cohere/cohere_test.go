package cohere_test

import (
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

// recorded maps each event type of the recorded streams to the key paths
// its events use.
func recorded(t *testing.T) map[string]map[string]bool {
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

// TestShapesMatchRecordings: every event the fake sends is named by its type
// and uses only keys that recorded events of that type use.
func TestShapesMatchRecordings(t *testing.T) {
	want := recorded(t)
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
				t.Errorf("event type %q is in no recording", fr.event)
				continue
			}
			for _, p := range upstream.Paths([]byte(fr.data)) {
				if !rec[p] {
					t.Errorf("%s: key %s is in no recorded %s event", fr.event, p, fr.event)
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
