package openapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/openapi"
	"github.com/companionhq/companion/internal/requestid"
	_ "github.com/companionhq/companion/internal/testkit"
)

// Why kin-openapi: it is maintained, loads and validates OpenAPI 3.1
// documents, and validates requests and responses (openapi3filter) with a
// JSON Schema 2020-12 validator for 3.1 documents, so that const, if/then
// and type arrays are checked as 3.1 means them.

const (
	agent       = "/api/agents/companionAgent"
	generate    = agent + "/generate"
	streamPath  = agent + "/stream"
	chatPath    = agent + "/chat"
	threads     = "/api/memory/threads"
	usagePath   = "/api/memory/usage"
	searchPath  = "/api/memory/search"
	savePath    = "/api/memory/save-messages"
	resources   = "/api/memory/resources/"
	referrals   = "/api/safety/referrals"
	safetyOf    = "/api/safety/resources/"
	berlin      = "What's the weather in Berlin?"
	errorville  = "What's the weather in Errorville?"
	story       = "Tell me a long story about the sea."
	resourceOne = "user-1"
	completions = "/v1/chat/completions"
)

var dialects = []string{"seed", "mastra", "ai-sdk"}

// runBody is a run request of one user message on thread, for resourceOne,
// with extra fields (",\"maxSteps\":1") appended.
func runBody(thread, text string, extra ...string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"threadId":%q,"resourceId":%q,"messages":[{"role":"user","content":%s}]%s}`, thread, resourceOne, b, strings.Join(extra, ""))
}

// completionBody is an OpenAI chat completion request of one user message
// for resourceOne on thread (derived when ""), with extra fields.
func completionBody(thread, text string, extra ...string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"model":"companion","user":%q,"thread_id":%q,"messages":[{"role":"user","content":%s}]%s}`, resourceOne, thread, b, strings.Join(extra, ""))
}

// chatBody is the AI SDK's chat request of one user message.
func chatBody(chat, text string, extra ...string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"id":%q,"resourceId":%q,"trigger":"submit-message","messages":[{"id":"ui-%s","role":"user","parts":[{"type":"text","text":%s}]}]%s}`,
		chat, resourceOne, chat, b, strings.Join(extra, ""))
}

func format(d string) http.Header { return header("X-Stream-Format", d) }

// crisisText is a message the crisis protocol trips on.
const crisisText = "I can't do this anymore, I want to kill myself."

// owned is a query naming resourceOne.
const owned = "?resourceId=" + resourceOne

// TestDocument: the document is valid OpenAPI 3.1, and GET /openapi.json
// serves it as JSON; other methods get 405.
func TestDocument(t *testing.T) {
	loadDocument(t)
	var v map[string]any
	if err := json.Unmarshal(openapi.Spec(), &v); err != nil || v["openapi"] != "3.1.0" {
		t.Fatalf("Spec is not the document as JSON: %v", err)
	}
	svc := apptest.Start(t, nil)
	res, body := svc.DoHeader(t, http.MethodGet, openapi.Path, "", header("X-Request-Id", "doc-1"))
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("X-Request-Id") != "doc-1" || !bytes.Equal(body, openapi.Spec()) {
		t.Fatalf("GET %s: %d %v", openapi.Path, res.StatusCode, res.Header)
	}
	res, body = svc.Do(t, http.MethodPost, openapi.Path, "")
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET" || !requestid.Valid(res.Header.Get("X-Request-Id")) || !strings.HasPrefix(string(body), `{"error":`) {
		t.Fatalf("POST %s: %d %v %s", openapi.Path, res.StatusCode, res.Header, body)
	}
}

// TestResponsesMatchTheDocument sends real requests to the whole service,
// in every configuration needed to reach the statuses of the document,
// and checks every exchange against it. Then every status the document
// lists for an operation must have been seen (or be in untestable with
// its reason), and every stream event of every dialect too.
func TestResponsesMatchTheDocument(t *testing.T) {
	c := newChecker(t)
	t.Run("main", func(t *testing.T) { mainScenarios(t, c) })
	t.Run("others", func(t *testing.T) {
		t.Run("authentication", func(t *testing.T) { t.Parallel(); authScenarios(t, c) })
		t.Run("rate limit", func(t *testing.T) { t.Parallel(); rateLimitScenarios(t, c) })
		t.Run("headers too large", func(t *testing.T) { t.Parallel(); headerScenarios(t, c) })
		t.Run("slow bodies", func(t *testing.T) { t.Parallel(); slowBodyScenarios(t, c) })
		t.Run("busy thread", func(t *testing.T) { t.Parallel(); busyScenarios(t, c) })
		t.Run("streams full", func(t *testing.T) { t.Parallel(); fullScenarios(t, c) })
		t.Run("cancel", func(t *testing.T) { t.Parallel(); cancelScenarios(t, c) })
		t.Run("run timeout", func(t *testing.T) { t.Parallel(); timeoutScenarios(t, c) })
		t.Run("provider failures", func(t *testing.T) { t.Parallel(); providerScenarios(t, c) })
		t.Run("store failure", func(t *testing.T) { t.Parallel(); storeScenarios(t, c) })
		t.Run("memory", func(t *testing.T) { t.Parallel(); memoryScenarios(t, c) })
	})
	if t.Failed() {
		return
	}
	checkCoverage(t, c)
}

// untestable lists the statuses the document gives operations that no
// test here can cause, and why.
var untestable = []struct {
	ops    []string
	status int
	why    string
}{
	{[]string{"listAgents", "getAgent", "listModels", "chatCompletions", "generate", "stream", "chat", "resumeStream", "cancelRun", "listThreads", "getThread", "updateThread", "deleteThread", "listMessages", "getUsage",
		"getWorkingMemory", "updateWorkingMemory", "listWorkingMemoryVersions", "restoreWorkingMemory", "searchMemory", "saveMessages", "eraseResource", "getReferrals",
		"getResourceSafety", "setResourceSafety", "health", "ready", "metrics"}, 500,
		"only a panic, which the router recovers, answers 500 on these routes: no request can cause one. (A reply that cannot be saved is the store's failure: generate answers 503, tested; a stream reports it in-band, as INTERNAL_ERROR, also tested.)"},
	{[]string{"listAgents", "getAgent", "listModels", "cancelRun", "metrics"}, 503,
		"only when the identity provider's signing keys cannot be fetched (a JWKS server down delays the start by 10 s), or when a run log shared through Redis fails"},
}

func checkCoverage(t *testing.T, c *checker) {
	skip := map[string]string{}
	for _, u := range untestable {
		for _, op := range u.ops {
			skip[op+" "+strconv.Itoa(u.status)] = u.why
		}
	}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code := range op.Responses.Map() {
				key := op.OperationID + " " + code
				_, excused := skip[key]
				switch {
				case c.statuses[key] && excused:
					t.Errorf("%s %s answered %s, which untestable says cannot happen: drop it from the table", method, path, code)
				case !c.statuses[key] && !excused:
					t.Errorf("%s %s: status %s is in the document but no test saw it (test it, or say in untestable why it cannot be)", method, path, code)
				}
				delete(skip, key)
			}
		}
	}
	for key := range skip {
		t.Errorf("untestable names %q, which the document does not list", key)
	}
	if !c.statuses["unrouted 404"] || !c.statuses["unrouted 405"] {
		t.Errorf("the x-unrouted answers were not both seen: %v, %v", c.statuses["unrouted 404"], c.statuses["unrouted 405"])
	}
	// Every event of every dialect, and every error code.
	for _, union := range []string{"SeedEvent", "MastraChunk", "UIMessageChunk"} {
		for _, branch := range c.doc.Components.Schemas[union].Value.OneOf {
			name := strings.TrimPrefix(branch.Ref, "#/components/schemas/")
			if !c.events[name] {
				t.Errorf("no stream sent a %s (%s)", name, union)
			}
		}
	}
	for _, code := range c.doc.Components.Schemas["ErrorCode"].Value.Enum {
		if !c.events[fmt.Sprint("SeedError ", code)] {
			t.Errorf("no seed stream sent an error event with code %v", code)
		}
	}
	mastraCodes := c.doc.Components.Schemas["MastraError"].Value.Properties["payload"].Value.Properties["error"].Value.Properties["code"].Value.Enum
	for _, code := range mastraCodes {
		if !c.events[fmt.Sprint("MastraError ", code)] {
			t.Errorf("no mastra stream sent an error chunk with code %v", code)
		}
	}
}

// mainScenarios: the default configuration (no authentication, no limits
// beyond the defaults).
func mainScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, nil)
	do := func(method, path, body string, status int, kv ...string) {
		t.Helper()
		res, b := c.do(t, svc, method, path, body, header(kv...))
		want(t, res, b, status)
	}

	do("GET", "/health", "", 200)
	do("GET", "/ready", "", 200)
	do("GET", "/openapi.json", "", 200)
	do("GET", "/no/such/route", "", 404)
	do("DELETE", "/health", "", 405)

	// The agent routes, with the query Mastra's client may send.
	do("GET", "/api/agents", "", 200)
	do("GET", "/api/agents?partial=true&runtimeContext=e30%3D", "", 200)
	do("GET", "/api/agents?partial=true&partial=false", "", 400)
	do("GET", agent, "", 200)
	do("GET", agent+"?partial=true&partial=false", "", 400)
	do("GET", "/api/agents/otherAgent", "", 404)

	// generate: each personality and both ways to name one, content as
	// parts, a system message, a message id; the weather tool, its
	// failure, the step limit and the token limit.
	do("POST", generate, `{"threadId":"g-guru","resourceId":"user-1","runtimeContext":{"metadata":{"personality":"guru","userId":"user-1"}},"messages":[{"role":"system","content":"Be brief."},{"id":"m-1","role":"user","content":[{"type":"text","text":"How can I find calm?"}]}]}`, 200)
	do("POST", generate, `{"threadId":"g-wanderer","messages":[{"role":"user","content":"Where next?"}],"tracingOptions":{"metadata":{"personality":"wanderer"}},"someFieldOfAnotherClient":1}`, 200)
	do("POST", generate, runBody("g-philosopher", "Kind or right?", `,"runtimeContext":{"metadata":{"personality":"philosopher"}}`), 200)
	do("POST", generate, runBody("g-weather", berlin), 200)
	do("POST", generate, runBody("g-errorville", errorville), 200)
	do("POST", generate, runBody("g-max-steps", berlin, `,"maxSteps":1`), 200)
	do("POST", generate, runBody("g-length", story, `,"modelSettings":{"maxOutputTokens":12}`), 200)
	// 409: every message of the request is stored and answered.
	do("POST", generate, `{"threadId":"g-guru","resourceId":"user-1","messages":[{"id":"m-1","role":"user","content":"How can I find calm?"}]}`, 409)
	for _, body := range []string{``, `{"messages":[{"role":"user","content":"Hello"}]}`, `{"messages":[{"role":"user","content":"Hello"}],"threadId":`,
		`["Hello"]`, `{"messages":[],"threadId":"t"}`, `{"messages":[{"role":"tool","content":"x"}],"threadId":"t"}`,
		runBody("t", "Ahoy", `,"runtimeContext":{"metadata":{"personality":"pirate"}}`), `{"threadId":"t","threadId":"u","messages":[{"role":"user","content":"Hi"}]}`} {
		do("POST", generate, body, 400)
		do("POST", streamPath, body, 400)
	}
	do("POST", streamPath, runBody("g-weather", berlin), 400, "X-Stream-Format", "carrier-pigeon")
	// 403: another resource's thread; 404: another agent.
	foreign := `{"threadId":"g-weather","resourceId":"user-2","messages":[{"role":"user","content":"Hi"}]}`
	do("POST", generate, foreign, 403)
	do("POST", streamPath, foreign, 403)
	do("POST", chatPath, `{"id":"g-weather","resourceId":"user-2","messages":[{"role":"user","parts":[{"type":"text","text":"Hi"}]}]}`, 403)
	for _, p := range []string{"/api/agents/otherAgent/generate", "/api/agents/otherAgent/stream", "/api/agents/otherAgent/chat"} {
		do("POST", p, runBody("t", "Hi"), 404)
	}
	// 413 and 415, on every route that reads a body.
	huge := runBody("big", strings.Repeat("x", 1<<20))
	for _, p := range []string{generate, streamPath, chatPath, threads + "/g-weather" + owned} {
		method := "POST"
		if strings.HasPrefix(p, threads) {
			method = "PATCH"
		}
		do(method, p, huge, 413)
		do(method, p, `{"title":"x"}`, 415, "Content-Type", "application/xml")
	}

	// A crisis trips the run (docs/safety.md); a user's locale and a minor.
	do("POST", generate, runBody("g-crisis", crisisText, `,"runtimeContext":{"metadata":{"locale":"en-GB","minor":true}}`), 200)
	do("POST", generate, runBody("g-locale", "Hi", `,"runtimeContext":{"metadata":{"locale":"not a locale"}}`), 400)

	// Streams in every dialect: the weather, its failure, the token limit,
	// a crisis.
	var runID string
	for _, d := range dialects {
		for i, q := range []struct{ text, extra string }{{berlin, ""}, {errorville, ""}, {story, `,"modelSettings":{"maxOutputTokens":12}`}, {crisisText, ""}} {
			s := c.open(t, svc, "POST", streamPath, runBody(fmt.Sprintf("s-%s-%d", d, i), q.text, q.extra), format(d))
			frames := s.finish(t)
			if d == "seed" && q.text == berlin {
				var ev struct{ RunID string }
				_ = json.Unmarshal([]byte(frames[0]), &ev)
				runID = ev.RunID
			}
		}
		// 409 on a stream: already stored and answered.
		do("POST", streamPath, `{"threadId":"g-guru","resourceId":"user-1","messages":[{"id":"m-1","role":"user","content":"How can I find calm?"}]}`, 409, "X-Stream-Format", d)
	}
	// The chat endpoint.
	c.open(t, svc, "POST", chatPath, chatBody("chat-1", berlin), nil).finish(t)
	c.open(t, svc, "POST", chatPath, chatBody("chat-2", "Hello there"), header("X-Personality", "guru")).finish(t)
	do("POST", chatPath, `{"id":"chat-1","resourceId":"user-1","trigger":"regenerate-message","messages":[{"role":"user","parts":[{"type":"text","text":"Again"}]}]}`, 409)
	do("POST", chatPath, `{"messages":[{"role":"user","parts":[{"type":"text","text":"Hi"}]}]}`, 400)

	// The OpenAI-compatible front: the model list; completions whole and
	// streamed, with the tool and the token limit; its errors.
	do("GET", "/v1/models", "", 200)
	do("POST", completions, `{"model":"companion-guru","user":"user-1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"How can I find calm?"}]}],"temperature":0.7,"n":1}`, 200)
	do("POST", completions, completionBody("", berlin), 200)
	do("POST", completions, completionBody("o-length", story, `,"max_tokens":12`), 200)
	c.open(t, svc, "POST", completions, completionBody("", "Hello there", `,"stream":true`), nil).finish(t)
	c.open(t, svc, "POST", completions, completionBody("o-stream", story, `,"stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":12`), nil).finish(t)
	// Its safety fields: a crisis trips, whole and streamed, with the
	// referral among the notices; a thread's next turn has no notices.
	do("POST", completions, completionBody("o-crisis", crisisText), 200)
	c.open(t, svc, "POST", completions, completionBody("o-crisis-stream", crisisText, `,"stream":true,"stream_options":{"include_usage":true}`), nil).finish(t)
	do("POST", completions, completionBody("o-length", "Hello again"), 200)
	do("POST", completions, `{"model":`, 400)
	do("POST", completions, `{"model":"companion","messages":[{"role":"tool","content":"x"}]}`, 400)
	do("POST", completions, `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`, 404)
	do("POST", completions, `{"model":"companion","user":"user-2","thread_id":"g-weather","messages":[{"role":"user","content":"Hi"}]}`, 403)
	do("POST", completions, huge, 413)
	do("POST", completions, `{}`, 415, "Content-Type", "application/xml")

	// Resuming and cancelling a run.
	if runID == "" {
		t.Fatal("no run id from the seed stream")
	}
	runs := agent + "/runs/" + runID
	for _, d := range dialects {
		c.open(t, svc, "GET", runs+"/stream"+owned, "", header("X-Stream-Format", d, "Last-Event-ID", "3")).finish(t)
	}
	frames := c.open(t, svc, "GET", runs+"/stream"+owned, "", nil).finish(t)
	if !strings.Contains(frames[0], `"type":"start"`) {
		t.Errorf("a resume without Last-Event-ID does not start from the first event: %s", frames[0])
	}
	do("GET", runs+"/stream"+owned, "", 400, "Last-Event-ID", "three")
	do("GET", runs+"/stream"+owned, "", 400, "X-Stream-Format", "smoke-signals")
	do("GET", runs+"/stream?resourceId=user-2", "", 403)
	do("GET", agent+"/runs/no-such-run/stream"+owned, "", 404)
	do("GET", "/api/agents/otherAgent/runs/"+runID+"/stream"+owned, "", 404)
	do("POST", runs+"/cancel"+owned, "", 200)
	do("POST", runs+"/cancel?resourceId=user-1&resourceId=user-1", "", 400)
	do("POST", runs+"/cancel", "", 403)
	do("POST", agent+"/runs/no-such-run/cancel"+owned, "", 404)

	// The threads API, in both shapes.
	do("GET", threads+owned+"&agentId=companionAgent&perPage=2&orderBy=updatedAt&sortDirection=ASC", "", 200)
	do("GET", threads+owned, "", 200, "X-Stream-Format", "mastra")
	do("GET", threads, "", 400)
	do("GET", threads+owned+"&perPage=0", "", 400)
	do("GET", threads+owned+"&agentId=otherAgent", "", 404)
	do("GET", threads+"/g-errorville"+owned, "", 200)
	do("GET", threads+"/g-errorville?resourceId=a&resourceId=b", "", 400)
	do("GET", threads+"/g-errorville?resourceId=user-2", "", 403)
	do("GET", threads+"/no-such-thread"+owned, "", 404)
	for _, th := range []string{"g-errorville", "g-max-steps", "g-guru", "s-seed-0", "chat-1"} {
		do("GET", threads+"/"+th+"/messages"+owned, "", 200)
		do("GET", threads+"/"+th+"/messages?resourceid="+resourceOne, "", 200, "X-Stream-Format", "mastra")
	}
	do("GET", threads+"/g-weather/messages"+owned+"&perPage=1001", "", 400)
	do("GET", threads+"/g-weather/messages", "", 403)
	do("GET", threads+"/no-such-thread/messages"+owned, "", 404)
	do("PATCH", threads+"/g-weather"+owned, `{"title":"Weather in Berlin","metadata":{"topic":"weather"}}`, 200)
	do("PATCH", threads+"/g-weather"+owned, `{"title":"Berlin"}`, 200, "Content-Type", "text/plain;charset=UTF-8")
	do("PATCH", threads+"/g-weather"+owned, `{}`, 400)
	do("PATCH", threads+"/g-weather?resourceId=user-2", `{"title":"Mine"}`, 403)
	do("PATCH", threads+"/no-such-thread"+owned, `{"title":"x"}`, 404)
	do("DELETE", threads+"/g-length"+owned, "", 200)
	do("DELETE", threads+"/g-length?resourceId=a&resourceId=b", "", 400)
	do("DELETE", threads+"/g-weather?resourceId=user-2", "", 403)
	do("DELETE", threads+"/g-length"+owned, "", 404)
	// What the runs above cost, per day and thread.
	do("GET", usagePath+owned+"&days=30", "", 200)
	do("GET", usagePath+"?resourceid="+resourceOne, "", 200)
	do("GET", usagePath, "", 400)
	do("GET", usagePath+owned+"&days=0", "", 400)
	do("GET", referrals, "", 200)
	do("GET", referrals+"?from=2027-01-01&to=2027-12-31", "", 200)
	do("GET", referrals+"?from=2027-12-31&to=2027-01-01", "", 400)
	do("GET", referrals+"?from=July", "", 400)
	// A resource's mark as a minor: none yet, set, cleared (anyone may
	// without authentication); a body without it, of another type, too
	// large or not JSON; a query that does not parse.
	do("GET", safetyOf+resourceOne, "", 200)
	do("PUT", safetyOf+resourceOne, `{"minor":true}`, 200)
	do("GET", safetyOf+resourceOne, "", 200)
	do("PUT", safetyOf+resourceOne, `{"minor":false}`, 200)
	do("PUT", safetyOf+resourceOne, `{}`, 400)
	do("PUT", safetyOf+resourceOne, `{"minor":"yes"}`, 400)
	do("PUT", safetyOf+resourceOne, `{"minor":`+strings.Repeat(" ", 1<<20)+`true}`, 413)
	do("PUT", safetyOf+resourceOne, `{"minor":true}`, 415, "Content-Type", "text/plain")
	do("GET", safetyOf+resourceOne+"?a=1;b=2", "", 400)
	do("GET", "/metrics", "", 200)
}

// authScenarios: with an API key for user-1, every route but the probes
// wants a credential.
func authScenarios(t *testing.T, c *checker) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("k3y-for-user-1 user-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Auth.APIKeysFile = keys })
	bearer := header("Authorization", "Bearer k3y-for-user-1")
	res, b := c.do(t, svc, "POST", generate, `{"threadId":"a-1","messages":[{"role":"user","content":"Hi"}]}`, bearer)
	want(t, res, b, 200)
	for _, r := range everyOperation("a-1", "no-run") {
		if r.path == "/health" || r.path == "/ready" || r.path == openapi.Path {
			continue
		}
		res, b := c.do(t, svc, r.method, r.path, r.body, nil)
		want(t, res, b, 401)
		res, b = c.do(t, svc, r.method, r.path, r.body, header("Authorization", "Bearer not-a-key"))
		want(t, res, b, 401)
	}
	res, b = c.do(t, svc, "GET", threads+"?resourceId=user-2", "", bearer)
	want(t, res, b, 403)
	res, b = c.do(t, svc, "GET", usagePath+"?resourceId=user-2", "", bearer)
	want(t, res, b, 403)
	res, b = c.do(t, svc, "GET", usagePath, "", bearer)
	want(t, res, b, 200)
	// The crisis referrals are of no resource: for a credential of every one.
	res, b = c.do(t, svc, "GET", referrals, "", bearer)
	want(t, res, b, 403)
	// A resource's own credential may read and set its mark as a minor,
	// not clear it; another resource's is refused.
	for _, r := range []struct {
		operation
		status int
	}{{operation{"GET", safetyOf + "user-1", ""}, 200}, {operation{"PUT", safetyOf + "user-1", `{"minor":true}`}, 200},
		{operation{"PUT", safetyOf + "user-1", `{"minor":false}`}, 403}, {operation{"GET", safetyOf + "user-2", ""}, 403},
		{operation{"PUT", safetyOf + "user-2", `{"minor":true}`}, 403}} {
		res, b = c.do(t, svc, r.method, r.path, r.body, bearer)
		want(t, res, b, r.status)
	}
	// The memory routes: another resource's working memory, search,
	// import and erasure are refused.
	for _, r := range []operation{{"GET", threads + "/a-2/working-memory?resourceId=user-2", ""},
		{"POST", threads + "/a-2/working-memory?resourceId=user-2", `{"workingMemory":"- Mine"}`},
		{"GET", threads + "/a-2/working-memory/versions?resourceId=user-2", ""},
		{"POST", threads + "/a-2/working-memory/restore?resourceId=user-2", `{"version":1}`},
		{"GET", searchPath + "?resourceId=user-2&searchQuery=sister", ""},
		{"POST", savePath, saveBody("a-2", "user-2", "Hi")},
		{"DELETE", resources + "user-2", ""}} {
		res, b = c.do(t, svc, r.method, r.path, r.body, bearer)
		want(t, res, b, 403)
	}
	res, b = c.do(t, svc, "GET", searchPath+"?searchQuery=hi", "", bearer)
	want(t, res, b, 200)
	res, b = c.do(t, svc, "GET", "/health", "", nil)
	want(t, res, b, 200)
}

// operation is one request per documented operation, with path
// parameters filled in.
type operation struct{ method, path, body string }

func everyOperation(thread, run string) []operation {
	return []operation{
		{"GET", "/api/agents", ""},
		{"GET", agent, ""},
		{"POST", generate, runBody(thread, "Hi")},
		{"POST", streamPath, runBody(thread, "Hi")},
		{"POST", chatPath, chatBody(thread, "Hi")},
		{"GET", "/v1/models", ""},
		{"POST", completions, completionBody(thread, "Hi")},
		{"GET", agent + "/runs/" + run + "/stream" + owned, ""},
		{"POST", agent + "/runs/" + run + "/cancel" + owned, ""},
		{"GET", threads + owned, ""},
		{"GET", threads + "/" + thread + owned, ""},
		{"PATCH", threads + "/" + thread + owned, `{"title":"x"}`},
		{"DELETE", threads + "/" + thread + owned, ""},
		{"GET", threads + "/" + thread + "/messages" + owned, ""},
		{"GET", usagePath + owned, ""},
		{"GET", threads + "/" + thread + "/working-memory" + owned, ""},
		{"POST", threads + "/" + thread + "/working-memory" + owned, `{"workingMemory":"- Sister: Ana"}`},
		{"GET", threads + "/" + thread + "/working-memory/versions" + owned, ""},
		{"POST", threads + "/" + thread + "/working-memory/restore" + owned, `{"version":1}`},
		{"GET", searchPath + owned + "&searchQuery=sister", ""},
		{"POST", savePath, saveBody(thread, resourceOne, "Hi")},
		{"DELETE", resources + resourceOne, ""},
		{"GET", referrals, ""},
		{"GET", safetyOf + resourceOne, ""},
		{"PUT", safetyOf + resourceOne, `{"minor":true}`},
		{"GET", "/health", ""},
		{"GET", "/ready", ""},
		{"GET", "/metrics", ""},
		{"GET", openapi.Path, ""},
	}
}

// rateLimitScenarios: one request a minute per address: the second gets
// 429 on every rate-limited route.
func rateLimitScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Limits.RateLimit = 1 })
	res, b := c.do(t, svc, "GET", threads+owned, "", nil)
	want(t, res, b, 200)
	for _, r := range everyOperation("r-1", "no-run") {
		status := 429
		if r.path == "/health" || r.path == "/ready" || r.path == openapi.Path {
			status = 200
		}
		res, b := c.do(t, svc, r.method, r.path, r.body, nil)
		want(t, res, b, status)
	}
}

// headerScenarios: headers past -max-header-bytes get 431 on every route
// of the API.
func headerScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, nil)
	big := header("X-Padding", strings.Repeat("p", 70<<10))
	for _, r := range everyOperation("h-1", "no-run") {
		res, b := c.do(t, svc, r.method, r.path, r.body, big)
		want(t, res, b, 431)
	}
}

// slowBodyScenarios: a body that does not arrive within
// -body-read-timeout gets 408, on every route that reads one.
func slowBodyScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Limits.BodyReadTimeout = 200 * time.Millisecond })
	addr := strings.TrimPrefix(svc.URL, "http://")
	for _, r := range []operation{{"POST", generate, ""}, {"POST", streamPath, ""}, {"POST", chatPath, ""}, {"POST", completions, ""}, {"PATCH", threads + "/slow" + owned, ""},
		{"POST", threads + "/slow/working-memory" + owned, ""}, {"POST", threads + "/slow/working-memory/restore" + owned, ""}, {"POST", savePath, ""},
		{"PUT", safetyOf + resourceOne, ""}} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", r.method, r.path, addr)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		req, _ := http.NewRequest(r.method, svc.URL+r.path, nil)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatalf("%s %s with a slow body: %v", r.method, r.path, err)
		}
		b, _ := io.ReadAll(res.Body)
		conn.Close()
		want(t, res, b, 408)
		c.check(t, req, nil, res, b)
	}
}

// busyScenarios: with -lock-wait 0, a turn on a thread another turn holds
// is refused with 409, and so is deleting the thread.
func busyScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Storage.LockWait = 0; cfg.Model.FakeTokenDelay = 50 * time.Millisecond })
	s := c.open(t, svc, "POST", streamPath, runBody("busy", story), nil)
	s.until(t, `"type":"text"`)
	for _, r := range []operation{{"POST", generate, runBody("busy", "Hi")}, {"POST", streamPath, runBody("busy", "Hi")},
		{"POST", chatPath, chatBody("busy", "Hi")}, {"POST", completions, completionBody("busy", "Hi")}, {"DELETE", threads + "/busy" + owned, ""}} {
		res, b := c.do(t, svc, r.method, r.path, r.body, nil)
		want(t, res, b, 409)
	}
	s.finish(t)
}

// fullScenarios: with -max-streams 1 and one stream open, another stream
// gets 503 with Retry-After.
func fullScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Limits.MaxStreams = 1; cfg.Model.FakeTokenDelay = 50 * time.Millisecond })
	s := c.open(t, svc, "POST", streamPath, runBody("full", story), nil)
	f, _ := s.next()
	var ev struct{ RunID string }
	_ = json.Unmarshal([]byte(f.data), &ev)
	for _, r := range []operation{{"POST", streamPath, runBody("full-2", "Hi")}, {"POST", chatPath, chatBody("full-3", "Hi")},
		{"POST", completions, completionBody("full-4", "Hi", `,"stream":true`)},
		{"GET", agent + "/runs/" + ev.RunID + "/stream" + owned, ""}} {
		res, b := c.do(t, svc, r.method, r.path, r.body, nil)
		want(t, res, b, 503)
		if res.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: Retry-After %q, want 1", r.method, r.path, res.Header.Get("Retry-After"))
		}
	}
	s.finish(t)
}

// cancelScenarios: a run cancelled mid-stream ends every stream that
// reads it, in each dialect, with its error (CANCELLED) and terminal
// frames. The run is started in the seed dialect, whose events carry its
// id, and read in the others by resuming it.
func cancelScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Model.FakeTokenDelay = 50 * time.Millisecond })
	seed := c.open(t, svc, "POST", streamPath, runBody("cancel", story), nil)
	f, _ := seed.next()
	var ev struct{ RunID string }
	if err := json.Unmarshal([]byte(f.data), &ev); err != nil || ev.RunID == "" {
		t.Fatalf("the first frame names no run: %q", f.data)
	}
	readers := []*stream{seed}
	for _, d := range []string{"mastra", "ai-sdk"} {
		s := c.open(t, svc, "GET", agent+"/runs/"+ev.RunID+"/stream"+owned, "", format(d))
		s.until(t, "text-delta")
		readers = append(readers, s)
	}
	res, b := c.do(t, svc, "POST", agent+"/runs/"+ev.RunID+"/cancel"+owned, "", nil)
	want(t, res, b, 200)
	for _, s := range readers {
		if all := strings.Join(s.finish(t), "\n"); !strings.Contains(all, "cancelled") {
			t.Errorf("the cancelled run's stream does not say so:\n%s", all)
		}
	}
}

// timeoutScenarios: a run past -max-run-duration ends its stream with
// RUN_TIMEOUT in every dialect; generate answers 504.
func timeoutScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) {
		cfg.Limits.MaxRunDuration = 300 * time.Millisecond
		cfg.Model.FakeTokenDelay = 30 * time.Millisecond
	})
	for _, d := range dialects {
		frames := c.open(t, svc, "POST", streamPath, runBody("timeout-"+d, story), format(d)).finish(t)
		if all := strings.Join(frames, "\n"); !strings.Contains(all, "RUN_TIMEOUT") && !strings.Contains(all, "took longer") {
			t.Errorf("%s: the stream does not end with the run's timeout:\n%s", d, all)
		}
	}
	res, b := c.do(t, svc, "POST", generate, runBody("timeout-generate", story), nil)
	want(t, res, b, 504)
}

// providerScenarios: a real provider (OpenAI's API, faked) that fails gets
// 502, 503 or 504 before the stream starts, and MODEL_ERROR after.
func providerScenarios(t *testing.T, c *checker) {
	start := func(faults ...upstream.Fault) *apptest.Service {
		fake := httptest.NewServer(fakeopenai.New(upstream.Options{Faults: faults}))
		t.Cleanup(fake.Close)
		return apptest.Start(t, func(cfg *app.Config) {
			cfg.Model.Model, cfg.Model.BaseURL, cfg.Model.OpenAIAPIKey = "openai/gpt-4o-mini", fake.URL+"/v1", "sk-test-0123456789abcdef"
			cfg.Model.RetryDelay, cfg.Model.RetryBudget, cfg.Model.FirstTokenTimeout = 5*time.Millisecond, 2*time.Second, 300*time.Millisecond
		})
	}
	times := func(n int, f upstream.Fault) []upstream.Fault { return slices.Repeat([]upstream.Fault{f}, n) }
	for _, tc := range []struct {
		name   string
		faults []upstream.Fault
		status int
	}{
		// Three attempts per request, four requests.
		{"server error", times(12, upstream.Fault{Kind: upstream.FaultStatus, Status: 500}), 502},
		// A provider that asks to wait longer than the retry budget: no retry.
		{"overloaded", times(4, upstream.Fault{Kind: upstream.FaultStatus, Status: 503, RetryAfter: "30"}), 503},
		// No first token in time: no retry.
		{"no first token", times(4, upstream.Fault{Kind: upstream.FaultHang}), 504},
	} {
		svc := start(tc.faults...)
		for _, r := range []operation{{"POST", generate, runBody("p-1", "Hello")}, {"POST", streamPath, runBody("p-2", "Hello")}, {"POST", chatPath, chatBody("p-3", "Hello")},
			{"POST", completions, completionBody("p-4", "Hello")}} {
			res, b := c.do(t, svc, r.method, r.path, r.body, nil)
			want(t, res, b, tc.status)
			if tc.status == 503 && res.Header.Get("Retry-After") != "30" {
				t.Errorf("%s: %s %s: Retry-After %q, want the provider's 30", tc.name, r.method, r.path, res.Header.Get("Retry-After"))
			}
		}
	}
	// Cut in the middle of the answer: in-band, in every dialect.
	svc := start(times(3, upstream.Fault{Kind: upstream.FaultCut, After: 3})...)
	for _, d := range dialects {
		frames := c.open(t, svc, "POST", streamPath, runBody("cut-"+d, "Hello"), format(d)).finish(t)
		if all := strings.Join(frames, "\n"); !strings.Contains(all, "model failed") {
			t.Errorf("%s: the stream does not report the model's failure:\n%s", d, all)
		}
	}
}

// storeScenarios: the database closes under runs in progress: their
// replies cannot be saved (streams: INTERNAL_ERROR; generate: 503); then
// every route that needs the database answers 503.
func storeScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, func(cfg *app.Config) { cfg.Model.FakeTokenDelay = 50 * time.Millisecond })
	res, b := c.do(t, svc, "POST", generate, runBody("kept", "Hi"), nil)
	want(t, res, b, 200)
	var streams []*stream
	for _, d := range dialects {
		s := c.open(t, svc, "POST", streamPath, runBody("lost-"+d, story), format(d))
		s.until(t, "text")
		streams = append(streams, s)
	}
	generated := make(chan struct{})
	go func() {
		defer close(generated)
		res, b := c.do(t, svc, "POST", generate, runBody("lost-generate", story), nil)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("generate whose reply cannot be saved: %d %s, want 503 with Retry-After", res.StatusCode, b)
		}
	}()
	// The generate run has stored its message (pending) once the thread
	// lists it; then the store goes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, b := c.do(t, svc, "GET", threads+"/lost-generate/messages"+owned, "", nil)
		if res.StatusCode == 200 && strings.Contains(string(b), `"pending":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the generate run did not start: %d %s", res.StatusCode, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := svc.App.Close(); err != nil {
		t.Logf("closing the app: %v", err)
	}
	for _, s := range streams {
		if all := strings.Join(s.finish(t), "\n"); !strings.Contains(all, "could not be saved") {
			t.Errorf("the stream does not say the reply could not be saved:\n%s", all)
		}
	}
	<-generated
	for _, r := range []operation{{"GET", "/ready", ""}, {"POST", generate, runBody("new", "Hi")},
		{"GET", threads + owned, ""}, {"GET", threads + "/kept" + owned, ""}, {"GET", threads + "/kept/messages" + owned, ""},
		{"PATCH", threads + "/kept" + owned, `{"title":"x"}`}, {"DELETE", threads + "/kept" + owned, ""},
		{"GET", usagePath + owned, ""},
		{"GET", threads + "/kept/working-memory" + owned, ""}, {"POST", threads + "/kept/working-memory" + owned, `{"workingMemory":"- Sister: Ana"}`},
		{"GET", threads + "/kept/working-memory/versions" + owned, ""}, {"POST", threads + "/kept/working-memory/restore" + owned, `{"version":1}`},
		{"GET", searchPath + owned + "&searchQuery=hi", ""}, {"POST", savePath, saveBody("kept", resourceOne, "Hi")},
		{"DELETE", resources + resourceOne, ""}, {"GET", referrals, ""},
		{"GET", safetyOf + resourceOne, ""}, {"PUT", safetyOf + resourceOne, `{"minor":true}`}} {
		res, b := c.do(t, svc, r.method, r.path, r.body, nil)
		want(t, res, b, 503)
	}
}

// saveBody is a save-messages request of one user message on thread, for
// resource.
func saveBody(thread, resource, text string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"messages":[{"threadId":%q,"resourceId":%q,"role":"user","content":%s}]}`, thread, resource, b)
}

// memoryScenarios: what the companion knows of its user (working memory,
// its versions), search over past conversations, an imported history and
// the erasure of a resource, in the default configuration.
func memoryScenarios(t *testing.T, c *checker) {
	svc := apptest.Start(t, nil)
	do := func(method, path, body string, status int, kv ...string) {
		t.Helper()
		res, b := c.do(t, svc, method, path, body, header(kv...))
		want(t, res, b, status)
	}
	wm := threads + "/m-1/working-memory"

	// Working memory: before anything is kept, on a thread that does not
	// exist yet; the model's update ("Remember ..."); a person's edit,
	// also as Mastra's client sends it (text/plain); the versions; a
	// restore.
	do("GET", wm+owned, "", 200)
	do("POST", generate, runBody("m-1", "Remember that my sister is called Ana."), 200)
	do("GET", wm+owned+"&agentId=companionAgent", "", 200)
	do("GET", wm+"?resourceid="+resourceOne, "", 200)
	do("POST", wm+owned, `{"workingMemory":"# About the user\n- People who matter to them: Ana, her sister\n"}`, 200)
	do("POST", wm, `{"workingMemory":"# About the user\n- Sister: Ana\n","resourceId":"user-1"}`, 200, "Content-Type", "text/plain;charset=UTF-8")
	do("GET", wm+"/versions"+owned, "", 200)
	do("POST", wm+"/restore"+owned, `{"version":1}`, 200)
	do("POST", wm+"/restore", `{"version":2,"resourceId":"user-1"}`, 200)

	// Working memory refused: a malformed query or body, another
	// resource's thread, another agent, a version not kept, a block past
	// its limit, a body too large or not JSON.
	for _, p := range []string{wm, wm + "/versions"} {
		do("GET", p+"?resourceId=a&resourceId=b", "", 400)
		do("GET", p+"?resourceId=user-2", "", 403)
		do("GET", p+owned+"&agentId=otherAgent", "", 404)
	}
	do("POST", wm+owned, `{}`, 400)
	do("POST", wm+owned, `{"workingMemory":"x","resourceId":"user-2"}`, 400)
	do("POST", wm+"?resourceId=user-2", `{"workingMemory":"- Mine"}`, 403)
	do("POST", wm+owned+"&agentId=otherAgent", `{"workingMemory":"- Ana"}`, 404)
	do("POST", wm+owned, fmt.Sprintf(`{"workingMemory":%q}`, strings.Repeat("- Ana\n", 4<<10)), 413)
	do("POST", wm+"/restore"+owned, `{"version":0}`, 400)
	do("POST", wm+"/restore?resourceId=user-2", `{"version":1}`, 403)
	do("POST", wm+"/restore"+owned, `{"version":99}`, 404)
	huge := fmt.Sprintf(`{"workingMemory":%q}`, strings.Repeat("x", 1<<20))
	for _, p := range []string{wm + owned, wm + "/restore" + owned, savePath} {
		do("POST", p, huge, 413)
		do("POST", p, `{"version":1}`, 415, "Content-Type", "application/xml")
	}

	// A history moved in from elsewhere, with its dates; saved again, it
	// is not stored twice.
	history := `{"messages":[{"id":"h-1","threadId":"m-old","resourceId":"user-1","role":"user","content":"My sister Ana moved to Lisbon.","createdAt":"2026-01-02T10:00:00Z"},` +
		`{"id":"h-2","threadId":"m-old","resourceId":"user-1","role":"assistant","content":[{"type":"text","text":"Lisbon is lovely."}],"createdAt":"2026-01-02T10:00:05Z"}]}`
	do("POST", savePath, history, 200)
	do("POST", savePath+"?agentId=companionAgent", history, 200)
	do("POST", savePath, `{"messages":[]}`, 400)
	do("POST", savePath, saveBody("m-1", "user-2", "Mine now"), 403)
	do("POST", savePath+"?agentId=otherAgent", history, 404)

	// Search: the imported history and the turns, with a thread and a
	// limit, in Mastra's lower-case spelling; refused without words, with
	// a limit out of range, for another agent.
	do("GET", searchPath+owned+"&searchQuery=Lisbon", "", 200)
	do("GET", searchPath+"?resourceid="+resourceOne+"&searchQuery=sister&threadId=m-1&limit=5&agentId=companionAgent", "", 200)
	do("GET", searchPath+owned, "", 400)
	do("GET", searchPath+owned+"&searchQuery=sister&limit=0", "", 400)
	do("GET", searchPath+owned+"&searchQuery=sister&agentId=otherAgent", "", 404)

	// The erasure of everything kept about a resource, and of one that
	// has nothing kept.
	do("DELETE", resources+resourceOne, "", 200)
	do("DELETE", resources+"nobody?agentId=companionAgent", "", 200)
	do("DELETE", resources+resourceOne+"?agentId=a&agentId=b", "", 400)
	do("DELETE", resources+resourceOne+"?agentId=otherAgent", "", 404)
}
