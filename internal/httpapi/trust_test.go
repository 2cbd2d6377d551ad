package httpapi_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/requestid"
	"github.com/companionhq/companion/internal/testkit"
)

// messagesOf is how many messages a resource's thread holds; -1 when the
// thread does not exist.
func messagesOf(t *testing.T, svc *apptest.Service, thread, resource string) int {
	t.Helper()
	res, b := svc.Do(t, "GET", "/api/memory/threads/"+thread+"/messages?resourceId="+resource, "")
	if res.StatusCode == 404 {
		return -1
	}
	var list api.MessageList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	return list.Total
}

func errorOf(t *testing.T, b []byte) string {
	t.Helper()
	var e map[string]string
	if err := json.Unmarshal(b, &e); err != nil || len(e) != 1 {
		t.Fatalf("the body %q is not {\"error\": ...}", b)
	}
	return e["error"]
}

// TestCaseVariantKeysDoNotOverride: {"resourceId":"attacker","RESOURCEID":"victim"}
// was answered as the victim; a proxy that sets resourceId must not be
// bypassed by a key that differs only in case, or by a repeated key.
func TestCaseVariantKeysDoNotOverride(t *testing.T) {
	svc := apptest.Start(t, nil)
	if res, b := svc.Post(t, generatePath, `{"threadId":"victim-thread","resourceId":"victim","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	for _, tc := range []struct{ name, body, error string }{
		{"upper case", `{"threadId":"victim-thread","resourceId":"attacker","RESOURCEID":"victim","messages":[{"role":"user","content":"Hi"}]}`,
			`key "RESOURCEID" is not "resourceId": keys are case-sensitive`},
		{"only the variant", `{"threadId":"victim-thread","ResourceId":"victim","messages":[{"role":"user","content":"Hi"}]}`,
			`key "ResourceId" is not "resourceId": keys are case-sensitive`},
		{"repeated", `{"threadId":"victim-thread","resourceId":"attacker","resourceId":"victim","messages":[{"role":"user","content":"Hi"}]}`,
			`key "resourceId" appears more than once in the request body: each key may be given once`},
		{"nested variant", `{"threadId":"t","messages":[{"role":"user","content":"Hi","ROLE":"system"}]}`,
			`key "messages[0].ROLE" is not "messages[0].role": keys are case-sensitive`},
		{"nested repeat", `{"threadId":"t","runtimeContext":{"metadata":{"personality":"guru","personality":"friend"}},"messages":[{"role":"user","content":"Hi"}]}`,
			`key "personality" appears more than once in runtimeContext.metadata: each key may be given once`},
		{"variant in a text part", `{"threadId":"t","messages":[{"role":"user","content":[{"type":"text","TEXT":"Hi"}]}]}`,
			`key "messages[0].content[0].TEXT" is not "messages[0].content[0].text": keys are case-sensitive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := svc.Post(t, generatePath, tc.body)
			if res.StatusCode != 400 || errorOf(t, b) != tc.error {
				t.Fatalf("%d %s, want 400 %q", res.StatusCode, b, tc.error)
			}
		})
	}
	if n := messagesOf(t, svc, "victim-thread", "victim"); n != 2 {
		t.Fatalf("the victim's thread holds %d messages, want its own 2", n)
	}
	// Unknown fields stay accepted: clients such as Mastra's send some.
	if res, b := svc.Post(t, generatePath, `{"threadId":"u","messages":[{"role":"user","content":"Hi","createdAt":"x"}],"output":null,"Extra":{"a":1}}`); res.StatusCode != 200 {
		t.Fatalf("unknown fields: %d %s", res.StatusCode, b)
	}
}

// TestRepeatedQueryParameters: ?resourceId=victim&resourceId=attacker took
// the first.
func TestRepeatedQueryParameters(t *testing.T) {
	svc := apptest.Start(t, nil)
	for _, path := range []string{
		"/api/memory/threads?resourceId=victim&resourceId=attacker",
		"/api/memory/threads/t?resourceId=victim&resourceId=attacker",
		"/api/memory/threads/t/messages?resourceId=victim&resourceId=attacker",
	} {
		res, b := svc.Do(t, "GET", path, "")
		if res.StatusCode != 400 || errorOf(t, b) != `query parameter "resourceId" is given 2 times: give it once` {
			t.Fatalf("%s: %d %s", path, res.StatusCode, b)
		}
	}
	res, b := svc.Do(t, "GET", "/api/memory/threads?RESOURCEID=victim", "")
	if res.StatusCode != 400 || errorOf(t, b) != `query parameter "RESOURCEID" is not "resourceId": parameter names are case-sensitive` {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

// TestOnlyJSONBodies: a POST with text/plain, a form or no content type was
// stored, so any web page could write into a thread without a preflight.
func TestOnlyJSONBodies(t *testing.T) {
	svc := apptest.Start(t, nil)
	body := `{"threadId":"t","messages":[{"role":"user","content":"Hi"}]}`
	for _, tc := range []struct {
		name, contentType string
		status            int
	}{
		{"text/plain", "text/plain", 415},
		{"form", "application/x-www-form-urlencoded", 415},
		{"multipart", "multipart/form-data; boundary=x", 415},
		{"none", "", 415},
		{"json with charset", "application/json; charset=utf-8", 200},
		{"json in capitals", "Application/JSON", 200},
		{"latin-1", "application/json; charset=latin1", 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{generatePath, streamPath} {
				req, _ := http.NewRequest("POST", svc.URL+path, strings.NewReader(body))
				if tc.contentType != "" {
					req.Header.Set("Content-Type", tc.contentType)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != tc.status {
					t.Fatalf("%s: %d %s, want %d", path, res.StatusCode, b, tc.status)
				}
			}
		})
	}
	// Only the two JSON runs, one generate and one stream each, were stored.
	if n := messagesOf(t, svc, "t", ""); n != 8 {
		t.Fatalf("the thread holds %d messages, want 8", n)
	}
	// PATCH, which a browser always preflights, also takes JSON declared
	// text/plain, as Mastra's client sends it; nothing else.
	for ct, want := range map[string]int{"text/plain;charset=UTF-8": 200, "application/x-www-form-urlencoded": 415, "text/plain; charset=latin1": 415} {
		req, _ := http.NewRequest("PATCH", svc.URL+"/api/memory/threads/t", strings.NewReader(`{"title":"x"}`))
		req.Header.Set("Content-Type", ct)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("PATCH as %s: %d, want %d", ct, res.StatusCode, want)
		}
	}
}

// TestInvalidUTF8IsRefused: threads "alias-\xff" and "alias-\xfe" both
// became "alias-\ufffd", one thread.
func TestInvalidUTF8IsRefused(t *testing.T) {
	svc := apptest.Start(t, nil)
	for _, tc := range []struct{ name, body, error string }{
		{"raw byte in threadId", "{\"threadId\":\"alias-\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}", "request body is not valid UTF-8 (at byte 19)"},
		{"raw byte in content", "{\"threadId\":\"t\",\"messages\":[{\"role\":\"user\",\"content\":\"H\xfei\"}]}", "request body is not valid UTF-8 (at byte 55)"},
		{"lone high surrogate", `{"threadId":"alias-\udcff","messages":[{"role":"user","content":"Hi"}]}`, "request body is not valid UTF-8: the escape at byte 19 is half of a surrogate pair"},
		{"lone low surrogate", `{"threadId":"alias-\ud800x","messages":[{"role":"user","content":"Hi"}]}`, "request body is not valid UTF-8: the escape at byte 19 is half of a surrogate pair"},
		{"in a key", "{\"threadId\":\"t\",\"\xff\":1,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}", "request body is not valid UTF-8 (at byte 17)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := svc.Post(t, generatePath, tc.body)
			if res.StatusCode != 400 || errorOf(t, b) != tc.error {
				t.Fatalf("%d %s, want 400 %q", res.StatusCode, b, tc.error)
			}
		})
	}
	// A pair is a character, not an error.
	if res, b := svc.Post(t, generatePath, `{"threadId":"alias-\ud83d\ude00","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
		t.Fatalf("a surrogate pair: %d %s", res.StatusCode, b)
	}
	// Paths too: /threads/alias-%FF is not /threads/alias-%FE.
	res, b := svc.Do(t, "GET", "/api/memory/threads/alias-%FF", "")
	if res.StatusCode != 400 || errorOf(t, b) != "threadId is not valid UTF-8" {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	res, b = svc.Do(t, "GET", "/api/memory/threads?resourceId=%FE", "")
	if res.StatusCode != 400 || errorOf(t, b) != "resourceId is not valid UTF-8" {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

// TestSlowBodiesAreCut: connections that sent their headers and then a
// body byte every while stayed open for ever.
func TestSlowBodiesAreCut(t *testing.T) {
	srv := apptest.Serve(t, nil, func(c *app.Config) { c.Limits.BodyReadTimeout = 500 * time.Millisecond })
	const conns = 50
	var wg sync.WaitGroup
	results := make(chan string, conns)
	for range conns {
		wg.Go(func() {
			results <- trickle(srv.Addr)
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r != "408" {
			t.Fatalf("a slow body got %q, want a 408 and the connection closed", r)
		}
	}
}

// trickle sends a request's headers and then one body byte every 200 ms
// for up to 10 s, and returns the status it gets back ("" if none).
func trickle(addr string) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	_, _ = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", generatePath)
	answered := make(chan string, 1)
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- err.Error()
			return
		}
		res.Body.Close()
		answered <- fmt.Sprint(res.StatusCode)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-answered:
			return s
		case <-deadline:
			return "still open after 10s"
		case <-tick.C:
			_, _ = c.Write([]byte(" "))
		}
	}
}

// TestLimitsNameTheirFlag: every limit refuses with a 4xx JSON error that
// names it, and nothing is stored.
func TestLimitsNameTheirFlag(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) {
		c.Limits.MaxMessages = 3
		c.Limits.MaxMessageBytes = 100
		c.Limits.MaxIDBytes = 10
	})
	msg := `{"role":"user","content":"Hi"}`
	for _, tc := range []struct{ name, body, error string }{
		{"messages", `{"threadId":"t","messages":[` + strings.Repeat(msg+",", 3) + msg + `]}`,
			"messages holds 4 messages, more than the limit of 3 (-max-messages): send only the new ones, the thread keeps the rest"},
		{"message bytes", `{"threadId":"t","messages":[{"role":"user","content":"` + strings.Repeat("x", 101) + `"}]}`,
			"messages[0].content is 101 bytes, more than the limit of 100 (-max-message-bytes)"},
		{"threadId", `{"threadId":"` + strings.Repeat("x", 11) + `","messages":[` + msg + `]}`, "threadId is longer than 10 bytes, the limit (-max-id-bytes)"},
		{"resourceId", `{"threadId":"t","resourceId":"` + strings.Repeat("x", 11) + `","messages":[` + msg + `]}`, "resourceId is longer than 10 bytes, the limit (-max-id-bytes)"},
		{"message id", `{"threadId":"t","messages":[{"id":"` + strings.Repeat("x", 11) + `","role":"user","content":"Hi"}]}`, "messages[0].id is longer than 10 bytes, the limit (-max-id-bytes)"},
		{"nesting", `{"threadId":"t","messages":[` + msg + `],"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "request body is nested deeper than 32 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{generatePath, streamPath} {
				res, b := svc.Post(t, path, tc.body)
				if res.StatusCode != 400 || errorOf(t, b) != tc.error {
					t.Fatalf("%s: %d %s, want 400 %q", path, res.StatusCode, b, tc.error)
				}
			}
		})
	}
	if n := messagesOf(t, svc, "t", ""); n != -1 {
		t.Fatalf("a refused request stored a thread of %d messages", n)
	}
}

// TestThreadStorageIsBounded: a thread of twenty 0.9 MB messages made each
// generate body 20 MB and nothing bounded what a thread stored. Now a
// thread may store -max-thread-bytes, and a run sees -history-max-bytes of
// its history, so the generate body's request.body stays bounded.
func TestThreadStorageIsBounded(t *testing.T) {
	const big = 900 << 10
	svc := apptest.Start(t, func(c *app.Config) {
		c.Limits.MaxBodyBytes = 2 << 20
		c.Limits.MaxMessageBytes = 1 << 20
		c.Storage.HistoryBytes = 256 << 10
		c.Limits.MaxThreadBytes = 12 << 20
	})
	turn := func(i int) (*http.Response, []byte) {
		return svc.Post(t, generatePath, fmt.Sprintf(`{"threadId":"big","messages":[{"role":"user","content":"%d %s"}]}`, i, strings.Repeat("x", big)))
	}
	// The fake model quotes the message, so a turn stores about 4 MB.
	turns := 0
	for i := range 20 {
		res, b := turn(i)
		if res.StatusCode == 413 {
			if !strings.Contains(errorOf(t, b), "(-max-thread-bytes)") {
				t.Fatalf("the turn past the thread's limit: %.300s", b)
			}
			break
		}
		if res.StatusCode != 200 {
			t.Fatalf("turn %d: %d %.200s", i, res.StatusCode, b)
		}
		turns++
		var g struct {
			Request struct {
				Body struct {
					Messages []struct{ Content string } `json:"messages"`
				} `json:"body"`
			} `json:"request"`
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		// The instructions, what fits of the history, the new message.
		size := 0
		for _, m := range g.Request.Body.Messages {
			size += len(m.Content)
		}
		if size > big+256<<10+4<<10 {
			t.Fatalf("turn %d: request.body holds %d bytes of messages, more than the new message and the history budget", i, size)
		}
	}
	if turns < 2 || turns == 20 {
		t.Fatalf("%d turns were stored before the limit refused one", turns)
	}
	if n := messagesOf(t, svc, "big", ""); n != 2*turns {
		t.Fatalf("the thread holds %d messages, want the %d of its %d turns", n, 2*turns, turns)
	}
}

// TestRequestIDs: every response carries X-Request-Id, the client's own
// when it is well-formed; error bodies stay {"error": ...}.
func TestRequestIDs(t *testing.T) {
	svc := apptest.Start(t, nil)
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"none", "", false},
		{"well-formed", "req-1234.abc:5_6", true},
		{"a uuid", "6e674979-f14f-4fd0-85f3-09e7c13194b3", true},
		{"with a space", "a b", false},
		{"with a newline escape", "a%0Ab", false},
		{"too long", strings.Repeat("a", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.sent != "" {
				h.Set(requestid.Header, tc.sent)
			}
			for _, r := range []struct{ method, path, body string }{
				{"GET", "/health", ""},
				{"GET", "/nowhere", ""},
				{"POST", generatePath, `{"messages":[]}`},
				{"POST", generatePath, `{"threadId":"t","messages":[{"role":"user","content":"Hi"}]}`},
			} {
				res, _ := svc.DoHeader(t, r.method, r.path, r.body, h)
				got := res.Header.Get(requestid.Header)
				if !requestid.Valid(got) || (tc.kept && got != tc.sent) || (!tc.kept && got == tc.sent) {
					t.Fatalf("%s %s: X-Request-Id %q for %q", r.method, r.path, got, tc.sent)
				}
			}
		})
	}
}

// TestRequestIDsInLogs: every log line of a request names its id.
func TestRequestIDsInLogs(t *testing.T) {
	logs := &testkit.Buffer{}
	svc := apptest.StartLogged(t, slog.New(slog.NewJSONHandler(logs, nil)), nil)
	res, _ := svc.DoHeader(t, "POST", generatePath, `{"threadId":"t","messages":[{"role":"user","content":"Hi"}]}`, http.Header{requestid.Header: {"trace-me-42"}})
	if res.StatusCode != 200 {
		t.Fatal(res.StatusCode)
	}
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec["msg"] == "run" || rec["msg"] == "request" {
			lines++
			if rec["request_id"] != "trace-me-42" {
				t.Fatalf("a log line of the request lacks its id: %s", line)
			}
		}
	}
	if lines != 2 {
		t.Fatalf("saw %d run and request lines, want 2:\n%s", lines, logs.String())
	}
}

// TestTooManyStreams: beyond -max-streams a stream gets 503 with
// Retry-After, and the streams already open go on.
func TestTooManyStreams(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) {
		c.Limits.MaxStreams = 2
		c.Model.FakeTokenDelay = 30 * time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open []*http.Response
	for i := range 2 {
		req, _ := http.NewRequestWithContext(ctx, "POST", svc.URL+streamPath, strings.NewReader(fmt.Sprintf(`{"threadId":"s%d","messages":[{"role":"user","content":"Tell me a story."}]}`, i)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("stream %d: %v %v", i, res, err)
		}
		open = append(open, res)
	}
	res, b := svc.Post(t, streamPath, `{"threadId":"s3","messages":[{"role":"user","content":"Hi"}]}`)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" || errorOf(t, b) != "the service has 2 streams open, its limit (-max-streams): try again shortly" {
		t.Fatalf("the third stream: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	for _, r := range open {
		events, err := apitest.ReadSSE(r.Body)
		r.Body.Close()
		if err != nil || apitest.Check(events) != nil {
			t.Fatalf("an open stream broke: %v", err)
		}
	}
	// The slots are free again.
	if res, b := svc.Post(t, streamPath, `{"threadId":"s4","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
		t.Fatalf("after the streams ended: %d %s", res.StatusCode, b)
	}
}

// TestRunDuration: a run longer than -max-run-duration ends its stream
// with an error event (RUN_TIMEOUT) and run-finish; generate gets 504.
func TestRunDuration(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) {
		c.Limits.MaxRunDuration = 300 * time.Millisecond
		c.Model.FakeTokenDelay = 50 * time.Millisecond
	})
	res, b := svc.Post(t, streamPath, `{"threadId":"slow","messages":[{"role":"user","content":"Tell me a long story."}]}`)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	events, err := apitest.ReadSSE(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := apitest.Check(events); err != nil {
		t.Fatal(err)
	}
	n := len(events)
	if n < 2 || events[n-2].Type != api.EventError || events[n-2].Error.Code != api.CodeRunTimeout || events[n-1].Type != api.EventRunFinish {
		t.Fatalf("the stream ends with %+v", events[max(0, n-2):])
	}
	res, b = svc.Post(t, generatePath, `{"threadId":"slow-2","messages":[{"role":"user","content":"Tell me a long story."}]}`)
	if res.StatusCode != 504 || errorOf(t, b) != "the run took longer than the longest a run may take (-max-run-duration), and was stopped" {
		t.Fatalf("generate: %d %s", res.StatusCode, b)
	}
	// The user's message stays, pending, for a retry.
	if n := messagesOf(t, svc, "slow-2", ""); n != 1 {
		t.Fatalf("the thread holds %d messages, want the user's 1", n)
	}
}

// TestTokenQuota: once a resource's runs used its tokens for the day, its
// runs get 429 with Retry-After until midnight UTC; others go on.
func TestTokenQuota(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Limits.Quota.Tokens = 200 })
	run := func(resource string) (*http.Response, []byte) {
		return svc.Post(t, generatePath, fmt.Sprintf(`{"threadId":"q-%s","resourceId":%q,"messages":[{"role":"user","content":"Hello there"}]}`, resource, resource))
	}
	used := 0
	for used < 200 {
		res, b := run("alice")
		if res.StatusCode != 200 {
			t.Fatalf("after %d tokens: %d %s", used, res.StatusCode, b)
		}
		var g api.GenerateResponse
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		used += g.TotalUsage.TotalTokens
	}
	res, b := run("alice")
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("over the quota: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	want := fmt.Sprintf(`resource "alice" has used %d tokens today, its quota of 200 (-token-quota): it resets at 00:00 UTC`, used)
	if errorOf(t, b) != want {
		t.Fatalf("%s\nwant %q", b, want)
	}
	if res, b := run("bob"); res.StatusCode != 200 {
		t.Fatalf("another resource: %d %s", res.StatusCode, b)
	}
}

// TestReadyDuringShutdown: /ready answered ok until the listener closed;
// now it turns 503 at the start of shutdown while the listener still
// serves, for -shutdown-delay.
func TestReadyDuringShutdown(t *testing.T) {
	logs := &testkit.Buffer{}
	srv := apptest.Serve(t, jsonLog(logs), func(c *app.Config) { c.Server.ShutdownDelay = 700 * time.Millisecond })
	if res, _ := srv.Do(t, "GET", "/ready", ""); res.StatusCode != 200 {
		t.Fatal(res.StatusCode)
	}
	srv.Stop()
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		res, b := srv.Do(t, "GET", "/ready", "")
		if res.StatusCode == 503 {
			if errorOf(t, b) != "not ready: the service is shutting down" {
				t.Fatalf("%s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/ready never turned 503 while the listener served")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Requests are still served meanwhile.
	if res, _ := srv.Do(t, "GET", "/health", ""); res.StatusCode != 200 {
		t.Fatal(res.StatusCode)
	}
	<-srv.Done
	// A draining service's 503 is expected: information, not an error
	// logged at every probe while a pod drains.
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"path":"/ready"`) && !strings.Contains(line, `"level":"INFO"`) {
			t.Errorf("the draining /ready is logged as %s", line)
		}
	}
	if !strings.Contains(logs.String(), `"status":503`) {
		t.Error("the draining /ready's 503 is not logged at all")
	}
}

// TestHeaderLimit: headers past -max-header-bytes get 431 and a JSON error
// naming the limit; far past it the HTTP server refuses them itself.
func TestHeaderLimit(t *testing.T) {
	srv := apptest.Serve(t, nil, func(c *app.Config) { c.Limits.MaxHeaderBytes = 8 << 10 })
	for _, tc := range []struct {
		size   int
		status int
		json   bool
	}{{1 << 10, 200, true}, {10 << 10, 431, true}, {200 << 10, 431, false}} {
		res, b := srv.DoHeader(t, "GET", "/health", "", http.Header{"X-Big": {strings.Repeat("x", tc.size)}})
		if res.StatusCode != tc.status {
			t.Fatalf("%d bytes of headers: %d %.200s", tc.size, res.StatusCode, b)
		}
		if tc.status == 431 && tc.json && !strings.Contains(errorOf(t, b), "(-max-header-bytes)") {
			t.Fatalf("%d bytes of headers: %s", tc.size, b)
		}
	}
}

// TestToolFailureLeaksNoAddress: a weather failure sent "dial tcp
// 127.0.0.1:1: connect: connection refused" to the client and the model.
// Now both get a sentence; the cause is in the log.
func TestToolFailureLeaksNoAddress(t *testing.T) {
	logs := &testkit.Buffer{}
	svc := apptest.StartLogged(t, slog.New(slog.NewJSONHandler(logs, nil)), func(c *app.Config) {
		c.Tools.Weather.GeocodingURL = "http://127.0.0.1:1"
		c.Tools.Weather.ForecastURL = "http://127.0.0.1:1"
	})
	body := `{"threadId":"w","messages":[{"role":"user","content":"What's the weather in Berlin?"}]}`
	res, stream := svc.Post(t, streamPath, body)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, stream)
	}
	res, gen := svc.Post(t, generatePath, strings.Replace(body, `"w"`, `"w2"`, 1))
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, gen)
	}
	if !strings.Contains(string(stream), "weatherTool failed: the geocoding service could not be reached") {
		t.Fatalf("the stream does not say the tool failed:\n%s", stream)
	}
	for what, b := range map[string][]byte{"stream": stream, "generate body (and what the model was sent)": gen} {
		for _, leak := range []string{"127.0.0.1", ":1/", "dial", "tcp", "connection refused", "http://"} {
			if strings.Contains(string(b), leak) {
				t.Fatalf("the %s carries %q:\n%s", what, leak, b)
			}
		}
	}
	if !strings.Contains(logs.String(), `"msg":"tool call failed"`) || !strings.Contains(logs.String(), "connection refused") {
		t.Fatalf("the log does not keep the cause:\n%s", logs.String())
	}
}

// TestCORS: preflights from the allowed origins get CORS headers, never
// with credentials; from any other origin 403; without origins configured,
// every preflight 403.
func TestCORS(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Server.CORSOrigins = []string{"https://chat.example.com"} })
	preflight := func(svc *apptest.Service, origin string) *http.Response {
		res, _ := svc.DoHeader(t, "OPTIONS", generatePath, "", http.Header{
			"Origin": {origin}, "Access-Control-Request-Method": {"POST"},
			"Access-Control-Request-Headers": {"authorization, content-type"},
		})
		return res
	}
	res := preflight(svc, "https://chat.example.com")
	h := res.Header
	if res.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != "https://chat.example.com" ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") ||
		h.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("allowed origin: %d %v", res.StatusCode, h)
	}
	if res := preflight(svc, "https://evil.example"); res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin: %d %v", res.StatusCode, res.Header)
	}
	// The actual request from the allowed origin is readable by the page.
	res, _ = svc.DoHeader(t, "POST", generatePath, `{"threadId":"c","messages":[{"role":"user","content":"Hi"}]}`, http.Header{"Origin": {"https://chat.example.com"}})
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "https://chat.example.com" ||
		!strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Fatalf("actual request: %d %v", res.StatusCode, res.Header)
	}
	none := apptest.Start(t, nil)
	if res := preflight(none, "https://chat.example.com"); res.StatusCode != 403 {
		t.Fatalf("no origins configured: %d", res.StatusCode)
	}
}

// TestReadyChecksTheSchema: /ready answered ok while the schema was
// broken; it checks the schema now.
func TestReadyChecksTheSchema(t *testing.T) {
	url := apptest.SQLiteURL(t)
	svc := apptest.Start(t, func(c *app.Config) { c.Storage.DatabaseURL = url })
	if res, _ := svc.Do(t, "GET", "/ready", ""); res.StatusCode != 200 {
		t.Fatalf("ready: %d", res.StatusCode)
	}
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite://"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TABLE usage`); err != nil {
		t.Fatal(err)
	}
	res, b := svc.Do(t, "GET", "/ready", "")
	if res.StatusCode != 503 || errorOf(t, b) != "not ready: the database does not answer, or its schema is not the one this build expects" {
		t.Fatalf("ready with a table gone: %d %s", res.StatusCode, b)
	}
}
