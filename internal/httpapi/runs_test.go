package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/redact"
)

// frame is one SSE frame as read off the wire.
type frame struct {
	id   int64
	data string
}

// openStream starts a stream and returns a reader of its frames and a
// function that drops the connection.
func openStream(t *testing.T, method, url, body string, h http.Header) (*http.Response, func() (frame, bool), func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rd := bufio.NewReader(res.Body)
	next := func() (frame, bool) {
		var f frame
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return f, false
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if f.data != "" {
					return f, true
				}
			case strings.HasPrefix(line, "id: "):
				f.id, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "data: "):
				f.data = line[6:]
			}
		}
	}
	drop := func() {
		cancel()
		res.Body.Close()
	}
	t.Cleanup(drop)
	return res, next, drop
}

func events(t *testing.T, frames []frame) []apitest.Event {
	t.Helper()
	var b strings.Builder
	for _, f := range frames {
		fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", f.id, f.data)
	}
	evs, err := apitest.ReadSSE(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

const slowStory = `{"threadId":"story","resourceId":"reader","messages":[{"role":"user","content":"Tell me a long story about the sea."}]}`

// readUntil reads frames until n have come.
func readUntil(t *testing.T, next func() (frame, bool), n int) []frame {
	t.Helper()
	var out []frame
	for len(out) < n {
		f, ok := next()
		if !ok {
			t.Fatalf("the stream ended after %d frames, want %d", len(out), n)
		}
		out = append(out, f)
	}
	return out
}

// readAll reads frames until the stream ends.
func readAll(next func() (frame, bool)) []frame {
	var out []frame
	for {
		f, ok := next()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

// runIDOf is the runId of a seed frame.
func runIDOf(t *testing.T, f frame) string {
	t.Helper()
	evs := events(t, []frame{f})
	return evs[0].RunID
}

// checkResumed: the frames read before the drop and after the resume are
// every event of the run, once each, in order, ids 1, 2, 3...
func checkResumed(t *testing.T, before, after []frame) {
	t.Helper()
	all := append(append([]frame{}, before...), after...)
	for i, f := range all {
		if f.id != int64(i+1) {
			t.Fatalf("frame %d has id %d: events lost or repeated (%d before the drop, %d after)", i, f.id, len(before), len(after))
		}
	}
	evs := events(t, all)
	if err := apitest.Check(evs); err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != api.EventRunFinish || !strings.Contains(last.Raw, `"finishReason":"stop"`) {
		t.Fatalf("the run ended with %s", last.Raw)
	}
}

// TestResumeAfterADrop: a client that lost its connection resumes with
// Last-Event-ID and gets every event after it, live, then the run's end;
// the run went on meanwhile and its reply is stored.
func TestResumeAfterADrop(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 10 * time.Millisecond })
	_, next, drop := openStream(t, "POST", svc.URL+streamPath, slowStory, nil)
	before := readUntil(t, next, 6)
	runID := runIDOf(t, before[0])
	drop()
	time.Sleep(50 * time.Millisecond) // the run goes on without a reader

	resume := svc.URL + "/api/agents/companionAgent/runs/" + runID + "/stream?resourceId=reader"
	res, next, _ := openStream(t, "GET", resume, "", http.Header{"Last-Event-Id": {"6"}})
	if res.StatusCode != 200 {
		t.Fatalf("resume: %d", res.StatusCode)
	}
	after := readAll(next)
	checkResumed(t, before, after)
	if n := messagesOf(t, svc, "story", "reader"); n != 2 {
		t.Fatalf("the thread holds %d messages, want the turn's 2", n)
	}

	// After the end, for the retention, the whole run can be read again.
	_, next, _ = openStream(t, "GET", resume, "", nil)
	again := readAll(next)
	if len(again) != len(before)+len(after) || again[len(again)-1].data != after[len(after)-1].data {
		t.Fatalf("reading the ended run again gave %d frames, want %d", len(again), len(before)+len(after))
	}
}

// TestResumeRules: the same owner rules as the thread; an unknown run is
// 404; a bad Last-Event-ID is 400.
func TestResumeRules(t *testing.T) {
	svc := apptest.Start(t, nil)
	_, next, _ := openStream(t, "POST", svc.URL+streamPath, slowStory, nil)
	runID := runIDOf(t, readUntil(t, next, 1)[0])
	readAll(next)
	base := "/api/agents/companionAgent/runs/"
	for _, tc := range []struct {
		name, path string
		header     http.Header
		status     int
		error      string
	}{
		{"owner", runID + "/stream?resourceId=reader", nil, 200, ""},
		{"another resource", runID + "/stream?resourceId=thief", nil, 403, `run "` + runID + `" belongs to another resource`},
		{"no resource", runID + "/stream", nil, 403, `run "` + runID + `" belongs to a resource: send its resourceId`},
		{"unknown run", "nope/stream?resourceId=reader", nil, 404, `run "nope" not found: it never ran, or it ended more than 5m0s ago`},
		{"bad Last-Event-ID", runID + "/stream?resourceId=reader", http.Header{"Last-Event-Id": {"x"}}, 400, `Last-Event-ID must be the id of a stream event, a whole number, not "x"`},
		{"cancel as another", runID + "/cancel?resourceId=thief", nil, 403, `run "` + runID + `" belongs to another resource`},
		{"unknown dialect", runID + "/stream?resourceId=reader", http.Header{"X-Stream-Format": {"xml"}}, 400, `X-Stream-Format "xml" is not known: use seed, mastra or ai-sdk`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if strings.HasSuffix(tc.path, "cancel?resourceId=thief") {
				method = "POST"
			}
			res, b := svc.DoHeader(t, method, base+tc.path, "", tc.header)
			if res.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", res.StatusCode, b, tc.status)
			}
			if tc.error != "" && errorOf(t, b) != tc.error {
				t.Fatalf("%s, want %q", b, tc.error)
			}
		})
	}
}

// TestCancelARun: cancelling stops the run at once; its stream, and a
// resumed one, end with an error event (CANCELLED) and run-finish; the
// user's message stays, pending, and no partial reply is stored.
func TestCancelARun(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 50 * time.Millisecond })
	_, next, _ := openStream(t, "POST", svc.URL+streamPath, slowStory, nil)
	first := readUntil(t, next, 3)
	runID := runIDOf(t, first[0])
	resume := svc.URL + "/api/agents/companionAgent/runs/" + runID + "/stream?resourceId=reader"
	_, next2, _ := openStream(t, "GET", resume, "", http.Header{"Last-Event-Id": {"3"}})

	res, b := svc.Do(t, "POST", "/api/agents/companionAgent/runs/"+runID+"/cancel?resourceId=reader", "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"cancelled":true`) {
		t.Fatalf("cancel: %d %s", res.StatusCode, b)
	}
	for name, frames := range map[string][]frame{"the first stream": append(first, readAll(next)...), "the resumed stream": readAll(next2)} {
		evs := events(t, frames)
		n := len(evs)
		if n < 2 || evs[n-2].Type != api.EventError || evs[n-2].Error.Code != api.CodeCancelled || evs[n-1].Type != api.EventRunFinish {
			t.Fatalf("%s ends with %v", name, apitest.Types(evs))
		}
	}
	_, body := svc.Do(t, "GET", "/api/memory/threads/story/messages?resourceId=reader", "")
	if n := messagesOf(t, svc, "story", "reader"); n != 1 || !strings.Contains(string(body), `"pending":true`) {
		t.Fatalf("after the cancel the thread holds %d messages: %s", n, body)
	}
	// Cancelling a run that ended is not an error.
	if res, b := svc.Do(t, "POST", "/api/agents/companionAgent/runs/"+runID+"/cancel?resourceId=reader", ""); res.StatusCode != 200 {
		t.Fatalf("cancelling again: %d %s", res.StatusCode, b)
	}
}

// TestAbandonedRunIsCancelled: a run nobody resumes within -resume-grace
// is cancelled; one resumed in time goes on.
func TestAbandonedRunIsCancelled(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) {
		c.Model.FakeTokenDelay = 40 * time.Millisecond
		c.Server.ResumeGrace = 200 * time.Millisecond
	})
	_, next, drop := openStream(t, "POST", svc.URL+streamPath, slowStory, nil)
	runID := runIDOf(t, readUntil(t, next, 3)[0])
	drop()
	time.Sleep(600 * time.Millisecond)
	_, next, _ = openStream(t, "GET", svc.URL+"/api/agents/companionAgent/runs/"+runID+"/stream?resourceId=reader", "", http.Header{"Last-Event-Id": {"3"}})
	evs := events(t, readAll(next))
	n := len(evs)
	if n < 2 || evs[n-2].Type != api.EventError || evs[n-2].Error.Code != api.CodeCancelled {
		t.Fatalf("the abandoned run ended with %v", apitest.Types(evs))
	}
}

// TestResumedInTimeGoesOn: a run whose stream broke and was resumed within
// the grace period is not cancelled when the period ends: it finishes.
func TestResumedInTimeGoesOn(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) {
		c.Model.FakeTokenDelay = 40 * time.Millisecond
		c.Server.ResumeGrace = 200 * time.Millisecond
	})
	_, next, drop := openStream(t, "POST", svc.URL+streamPath, slowStory, nil)
	before := readUntil(t, next, 3)
	runID := runIDOf(t, before[0])
	drop()
	_, next, _ = openStream(t, "GET", svc.URL+"/api/agents/companionAgent/runs/"+runID+"/stream?resourceId=reader", "", http.Header{"Last-Event-Id": {"3"}})
	// The story takes far longer than the grace period: the resumed
	// stream outlives it.
	checkResumed(t, before, readAll(next))
}

// TestResumeOnAnotherInstance: with Redis, a stream dropped mid-run on one
// instance resumes on another, with no event lost or repeated; a cancel
// sent to the other instance stops a run on the first.
func TestResumeOnAnotherInstance(t *testing.T) {
	url := redistest.ServerURL()
	redistest.Options(t) // skips, or fails in CI, without Redis
	db := apptest.SQLiteURL(t)
	configure := func(c *app.Config) {
		c.Storage.RedisURL = redact.Secret(url)
		c.Model.FakeTokenDelay = 10 * time.Millisecond
		c.Storage.DatabaseURL = db
	}
	a, b := apptest.Start(t, configure), apptest.Start(t, configure)
	body := strings.Replace(slowStory, `"story"`, `"`+unique("story")+`"`, 1)
	_, next, drop := openStream(t, "POST", a.URL+streamPath, body, nil)
	before := readUntil(t, next, 7)
	runID := runIDOf(t, before[0])
	drop()

	res, next, _ := openStream(t, "GET", b.URL+"/api/agents/companionAgent/runs/"+runID+"/stream?resourceId=reader", "", http.Header{"Last-Event-Id": {"7"}})
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("resume on the other instance: %d %s", res.StatusCode, b)
	}
	checkResumed(t, before, readAll(next))

	// Cancel through the other instance.
	slow := func(c *app.Config) { configure(c); c.Model.FakeTokenDelay = 100 * time.Millisecond }
	a2, b2 := apptest.Start(t, slow), apptest.Start(t, slow)
	_, next, _ = openStream(t, "POST", a2.URL+streamPath, strings.Replace(slowStory, `"story"`, `"`+unique("story")+`"`, 1), nil)
	first := readUntil(t, next, 3)
	runID = runIDOf(t, first[0])
	if res, body := b2.Do(t, "POST", "/api/agents/companionAgent/runs/"+runID+"/cancel?resourceId=reader", ""); res.StatusCode != 200 {
		t.Fatalf("cancel on the other instance: %d %s", res.StatusCode, body)
	}
	evs := events(t, append(first, readAll(next)...))
	if n := len(evs); n < 2 || evs[n-2].Error == nil || evs[n-2].Error.Code != api.CodeCancelled {
		t.Fatalf("the run cancelled from the other instance ended with %v", apitest.Types(evs))
	}
}

// TestResumeInEachDialect: a stream in a dialect that keeps state across
// records (an open text block, the step's messages) resumes as if it had
// never broken. In ai-sdk, the frames before a drop and after the resume
// are the frames of the whole run read at once. Mastra's frames carry no
// ids; resumed after record 8 (as a seed or ai-sdk stream of the run
// would name it), its frames are the end of the whole run's.
func TestResumeInEachDialect(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Model.FakeTokenDelay = 10 * time.Millisecond })
	data := func(fs []frame) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.data)
		}
		return out
	}
	for _, format := range []string{"ai-sdk", "mastra"} {
		t.Run(format, func(t *testing.T) {
			h := http.Header{"X-Stream-Format": {format}}
			body := strings.Replace(slowStory, `"story"`, `"story-`+format+`"`, 1)
			res, next, drop := openStream(t, "POST", svc.URL+streamPath, body, h)
			runID := res.Header.Get("X-Run-Id")
			resume := svc.URL + "/api/agents/companionAgent/runs/" + runID + "/stream?resourceId=reader"
			var before []frame
			if format == "ai-sdk" {
				for len(before) == 0 || before[len(before)-1].id < 8 { // in the middle of the text
					f, ok := next()
					if !ok {
						t.Fatalf("the stream ended after %d frames", len(before))
					}
					before = append(before, f)
				}
				drop()
				time.Sleep(50 * time.Millisecond) // the run goes on without a reader
			} else {
				readAll(next)
			}
			rh := http.Header{"X-Stream-Format": {format}, "Last-Event-Id": {"8"}}
			res, next, _ = openStream(t, "GET", resume, "", rh)
			if res.StatusCode != 200 {
				t.Fatalf("resume: %d", res.StatusCode)
			}
			after := data(readAll(next))
			_, next, _ = openStream(t, "GET", resume, "", h)
			whole := data(readAll(next))
			got, want := append(data(before), after...), whole
			if format == "mastra" {
				if len(after) == 0 || len(after) >= len(whole) {
					t.Fatalf("resumed after record 8: %d frames of the whole run's %d", len(after), len(whole))
				}
				want = whole[len(whole)-len(after):]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read in two parts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// flushCounter is a ResponseWriter that counts its flushes.
type flushCounter struct {
	http.ResponseWriter
	flushes int
}

func (f *flushCounter) Flush() {
	f.flushes++
	f.ResponseWriter.(http.Flusher).Flush()
}

// TestABurstGoesOutInOneWrite: records that are ready together are flushed
// together, not one write each: reading an ended run again is two flushes,
// the headers' (go-sse sends them on their own) and one with every frame.
func TestABurstGoesOutInOneWrite(t *testing.T) {
	svc := apptest.Start(t, nil)
	_, next, _ := openStream(t, "POST", svc.URL+streamPath, body(""), nil)
	frames := readAll(next)
	runID := runIDOf(t, frames[0])

	req := httptest.NewRequest("GET", "/api/agents/companionAgent/runs/"+runID+"/stream?resourceId=u1", nil)
	rec := httptest.NewRecorder()
	w := &flushCounter{ResponseWriter: rec}
	svc.App.Handler().ServeHTTP(w, req)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if got := strings.Count("\n"+rec.Body.String(), "\ndata: "); got != len(frames) {
		t.Fatalf("%d frames read again, want the run's %d", got, len(frames))
	}
	if w.flushes != 2 {
		t.Fatalf("%d flushes for %d frames ready at once, want 2", w.flushes, len(frames))
	}
}
