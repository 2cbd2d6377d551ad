package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/run"
	_ "github.com/companionhq/companion/internal/testkit"
)

// FuzzDecodeRun feeds arbitrary bodies to the run request decoder. A body
// is either refused with a 400-class error whose message is valid UTF-8
// and bounded, or accepted as an input that keeps every rule: a thread id,
// one to MaxMessages messages with content within MaxMessageBytes, a user
// among them, a known personality; and an accepted body is valid UTF-8
// JSON whose objects repeat no key.
func FuzzDecodeRun(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","messages":[{"role":"user","content":"Hi"}]}`,
		`{"threadId":"t","resourceId":"u","messages":[{"id":"m1","role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"system","content":"Be brief."}],"runtimeContext":{"metadata":{"personality":"guru","userId":"u"}},"tracingOptions":{"metadata":{"personality":"friend"}},"modelSettings":{"maxOutputTokens":10},"maxSteps":2}`,
		`{"threadId":"t","RESOURCEID":"x","messages":[{"role":"user","content":"Hi"}]}`,
		`{"threadId":"t","threadId":"u","messages":[{"role":"user","content":"Hi"}]}`,
		"{\"threadId\":\"alias-\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}",
		`{"threadId":"\ud800","messages":[{"role":"user","content":"Hi"}]}`,
		`{"threadId":"\ud83d\ude00","messages":[{"role":"user","content":"Hi"}]}`,
		`{"threadId":"t","messages":[{"role":"user","content":"Hi"}],"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"threadId":7}`, `[]`, `null`, ``, `{"threadId":"t","messages":[{"role":"user","content":"Hi"}]} {}`,
	} {
		f.Add([]byte(s))
	}
	lim := DefaultLimits()
	lim.MaxMessages = 8
	lim.MaxMessageBytes = 256
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := decodeRun(body, lim)
		if err != nil {
			var ae *apperr.Error
			if !errors.As(err, &ae) || (ae.Code != apperr.Invalid && ae.Code != apperr.TooLarge) {
				t.Fatalf("refused with %T %v, want an invalid-request error", err, err)
			}
			if !utf8.ValidString(ae.Message) || len(ae.Message) > 400 {
				t.Fatalf("the error message is not short, valid text: %q", ae.Message)
			}
			return
		}
		if !utf8.Valid(body) || !json.Valid(bytes.TrimSpace(body)) {
			t.Fatalf("accepted a body that is not valid UTF-8 JSON: %q", body)
		}
		if dup := repeatedKey(body); dup != "" {
			t.Fatalf("accepted a body that repeats key %q", dup)
		}
		if in.ThreadID == "" || len(in.ThreadID) > lim.MaxIDBytes || len(in.ResourceID) > lim.MaxIDBytes {
			t.Fatalf("accepted ids %q, %q", in.ThreadID, in.ResourceID)
		}
		if len(in.Messages) == 0 || len(in.Messages) > lim.MaxMessages {
			t.Fatalf("accepted %d messages", len(in.Messages))
		}
		users := 0
		for _, m := range in.Messages {
			if strings.TrimSpace(m.Content) == "" || len(m.Content) > lim.MaxMessageBytes {
				t.Fatalf("accepted content of %d bytes", len(m.Content))
			}
			switch m.Role {
			case api.RoleUser:
				users++
			case api.RoleAssistant, api.RoleSystem:
			default:
				t.Fatalf("accepted role %q", m.Role)
			}
		}
		if users == 0 {
			t.Fatal("accepted messages without a user message")
		}
		if _, err := agent.ParsePersonality(string(in.Personality)); err != nil || in.Personality == "" {
			t.Fatalf("accepted personality %q", in.Personality)
		}
	})
}

// repeatedKey is a key some object of body gives twice, found by an
// independent reading: decoding each object into a list of its keys.
func repeatedKey(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var walk func() string
	walk = func() string {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key, _ := k.(string)
				if seen[key] {
					return key
				}
				seen[key] = true
				if d := walk(); d != "" {
					return d
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if d := walk(); d != "" {
					return d
				}
			}
			_, _ = dec.Token()
		}
		return ""
	}
	return walk()
}

// FuzzSSEWriter writes events whose texts and ids are arbitrary bytes, and
// reads the stream back as a client would: every event is one data line
// that decodes to the event written (invalid UTF-8 read as U+FFFD), in
// order, and nothing a text holds (newlines, "data:", "event:") can forge
// a frame.
func FuzzSSEWriter(f *testing.F) {
	f.Add("Hello", "world", "run-1")
	f.Add("line\nbreak", "\r\ndata: {\"type\":\"run-finish\"}\n\n", "id\r")
	f.Add("\xff\xfe", "event: x\nid: 7", "")
	f.Add("", "\u2028\u2029</script>", "r")
	f.Fuzz(func(t *testing.T, a, b, runID string) {
		rec := httptest.NewRecorder()
		w, err := newFrameWriter(rec, httptest.NewRequest("POST", "/", nil), newDialect(FormatSeed, runID), runID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		records := []run.Record{
			{Start: &agent.RunStarted{RunID: runID, ThreadID: a, ResourceID: b}},
			{Text: &agent.TextDelta{Text: a}},
			{InputDelta: &agent.ToolInputDelta{Delta: b, CallID: a, Tool: "weatherTool"}},
			{Text: &agent.TextDelta{Text: b}},
			{Failed: &run.Failed{Message: a + b, Code: api.CodeModelError}},
			{Finished: &run.Finished{Reason: "error"}},
		}
		sent := []string{api.EventStart, api.EventText, api.EventToolCallDelta, api.EventText, api.EventError, api.EventRunFinish}
		for i := range records {
			if err := w.write(int64(i+1), &records[i], false); err != nil {
				t.Fatal(err)
			}
		}
		got, err := apitest.ReadSSE(rec.Body)
		if err != nil {
			t.Fatalf("the stream does not read back: %v", err)
		}
		if len(got) != len(sent) {
			t.Fatalf("read %d events, wrote %d", len(got), len(sent))
		}
		// encoding/json writes each byte of invalid UTF-8 as one U+FFFD.
		valid := func(s string) string {
			var b strings.Builder
			for s != "" {
				r, n := utf8.DecodeRuneInString(s)
				if r == utf8.RuneError && n == 1 {
					b.WriteRune(utf8.RuneError)
				} else {
					b.WriteString(s[:n])
				}
				s = s[n:]
			}
			return b.String()
		}
		for i, ev := range got {
			if ev.Type != sent[i] || ev.RunID != valid(runID) {
				t.Fatalf("event %d is %s of run %q, wrote %s of %q", i, ev.Type, ev.RunID, sent[i], runID)
			}
		}
		if apitest.Text(got) != valid(a)+valid(b) {
			t.Fatalf("the texts read back as %q, wrote %q", apitest.Text(got), a+b)
		}
		var delta api.ToolCallDeltaPayload
		if err := json.Unmarshal(got[2].Payload, &delta); err != nil || delta.ArgsTextDelta != valid(b) {
			t.Fatalf("the delta read back as %q (%v), wrote %q", delta.ArgsTextDelta, err, b)
		}
	})
}

// FuzzUnmarshal holds api.Unmarshal, which decodes request bodies on the
// jsonv2 engine, to encoding/json: for any data and each type a request
// body or a part of one decodes into, the same value and the same error.
// The inner types are those Message.UnmarshalJSON decodes into, so that
// the method, which uses api.Unmarshal too, is held to encoding/json piece
// by piece.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","resourceId":"u","messages":[{"id":"m1","role":"user","content":[{"type":"text","text":"a"}]},{"role":"system","content":"Be brief."}],"runtimeContext":{"metadata":{"personality":"guru","userId":"u"}},"tracingOptions":{"metadata":{"personality":"friend"}},"modelSettings":{"maxOutputTokens":10},"maxSteps":2}`,
		`{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"Hi"}]}],"trigger":"submit-message","messageId":"m","resourceId":"u","personality":"guru"}`,
		`{"title":"T","metadata":{"a":[1,{"b":null}]},"resourceId":null}`,
		// encoding/json's rules that another decoder could break: names in
		// any case, a repeated name, null over a value, a value of the
		// wrong type, numbers out of range, escapes, bad UTF-8, trailing data.
		`{"THREADID":"a","Messages":[{"ROLE":"user","Content":"x"}]}`,
		`{"threadId":"a","threadId":"b","maxSteps":1,"maxSteps":null}`,
		`{"threadId":7,"maxSteps":"2","modelSettings":{"maxOutputTokens":1.5}}`,
		`{"maxSteps":1e400,"threadId":"x"}`,
		`{"maxSteps":-0,"modelSettings":null,"runtimeContext":{"metadata":null}}`,
		`{"id":"\u00e9\ud83d\ude00\u0000","role":"\ud800","content":"\/"}`,
		"{\"id\":\"\xff\xfe\",\"role\":\"user\",\"content\":\"\xc3\"}",
		`{"role":"user","content":[{"type":"image","text":"a"}]}`,
		`{"role":"user","content":[null,{"type":"text","text":null}]}`,
		`{"content":{"type":"text"}}`, `{"content":7}`, `{"id":null,"role":null,"content":null}`,
		`[{"role":"user"},null,"x",{}]`, `[]`, `null`, `"s"`, `"\u00e9"`, `7`, `true`,
		`{"threadId":"a"} {}`, `{"threadId":`, ``, ` {"threadId":"a"} `, `[1,]`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	type wire struct {
		api.GenerateRequest
		Messages json.RawMessage `json:"messages"`
	}
	type rawMessage struct {
		ID      *json.RawMessage `json:"id"`
		Role    *json.RawMessage `json:"role"`
		Content *json.RawMessage `json:"content"`
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsStd[wire](t, data)
		sameAsStd[[]json.RawMessage](t, data)
		sameAsStd[api.Message](t, data)
		sameAsStd[rawMessage](t, data)
		sameAsStd[string](t, data)
		sameAsStd[[]part](t, data)
		sameAsStd[api.ChatRequest](t, data)
		sameAsStd[api.ThreadUpdate](t, data)
	})
}

// sameAsStd fails t unless api.Unmarshal and encoding/json decode data
// into a T alike: the same value, and the same error or none.
func sameAsStd[T any](t *testing.T, data []byte) {
	t.Helper()
	var got, want T
	gotErr, wantErr := api.Unmarshal(data, &got), json.Unmarshal(data, &want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%T from %q: error %v, encoding/json: %v", got, data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T from %q:\n got  %#v\n want %#v", got, data, got, want)
	}
}
