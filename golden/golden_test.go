package golden_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/testkit"
)

// A case is one request, sent to both generate and stream. Its recorded
// output lives in generate/<name>.json and stream/<name>.sse (stream/
// <name>.json when the stream endpoint answers with a JSON error).
type goldenCase struct {
	name   string
	body   string
	status int
	// before are generate requests sent first, on the same thread; their
	// output is not recorded.
	before []string
	// configure, when set, changes the service's configuration.
	configure func(*app.Config)
}

func msg(role, content string) string {
	b, _ := json.Marshal(map[string]string{"role": role, "content": content})
	return string(b)
}

func run(personality, extra string, msgs ...string) string {
	body := `{"threadId":"thread-golden","resourceId":"user-golden","messages":[` + strings.Join(msgs, ",") + `]`
	if personality != "" {
		body += `,"runtimeContext":{"metadata":{"personality":"` + personality + `","userId":"user-golden"}}`
	}
	return body + extra + `}`
}

var cases = []goldenCase{
	// Each personality's plain reply; friend is the default when none is given.
	{name: "guru", status: 200, body: run("guru", "", msg("user", "How can I find more calm in my busy days?"))},
	{name: "wanderer", status: 200, body: run("", `,"tracingOptions":{"metadata":{"personality":"wanderer"}}`, msg("user", "Where should I travel next?"))},
	{name: "friend-default", status: 200, body: run("", "", msg("user", "I had a rough day at work."))},
	{name: "philosopher", status: 200, body: run("philosopher", "", msg("user", "Is it better to be kind or to be right?"))},
	// runtimeContext wins over tracingOptions; a system message adds to the
	// instructions; earlier turns in the request are part of the conversation.
	{name: "history-and-system", status: 200, body: run("guru", `,"tracingOptions":{"metadata":{"personality":"philosopher"}}`,
		msg("system", "Answer in a single paragraph."), msg("user", "My name is Sam."),
		msg("assistant", "Nice to meet you, Sam!"), msg("user", "What is a good hobby for me?"))},
	// Conversation memory: the client sends only its newest message, and
	// the reply recalls the earlier turn stored in the thread.
	{name: "recall", status: 200, before: []string{run("friend", "", msg("user", "My name is Sam."))},
		body: run("friend", "", msg("user", "What is a good hobby for me?"))},
	// What the companion keeps of its user: "Remember ..." makes the
	// model update working memory through its tool; a message of another
	// thread of the same resource is recalled, with its date, and the
	// reply refers to it.
	{name: "remember", status: 200, body: run("friend", "", msg("user", "Remember that my sister is called Ana."))},
	{name: "recall-across-threads", status: 200,
		before: []string{`{"threadId":"thread-golden-earlier","resourceId":"user-golden","messages":[` + msg("user", "My dog Max loves running on the beach.") + `]}`},
		body:   run("wanderer", "", msg("user", "Any ideas for a day out with my dog?"))},
	// The weather tool: one place, two places at once, and its failures.
	{name: "weather", status: 200, body: run("friend", "", msg("user", "What's the weather in Berlin?"))},
	{name: "weather-two-places", status: 200, body: run("guru", "", msg("user", "What's the weather in Paris and Tokyo?"))},
	{name: "tool-error-unknown-place", status: 200, body: run("philosopher", "", msg("user", "What's the weather in Atlantis?"))},
	{name: "tool-error-upstream", status: 200, body: run("wanderer", "", msg("user", "What's the weather in Errorville?"))},
	// A reply cut by the output token limit.
	{name: "length", status: 200, body: run("friend", `,"modelSettings":{"maxOutputTokens":12}`, msg("user", "Tell me a long story about the sea."))},
	// Safety (docs/safety.md). A thread's first reply tells the user they
	// talk to an AI (every case above); a continuing conversation is told
	// again once the disclosure's interval has passed (here a microsecond,
	// for the test); a minor is reminded to take a break as often.
	{name: "disclosure-again", status: 200, before: []string{run("friend", "", msg("user", "Hi there."))},
		body:      run("friend", "", msg("user", "Are you still there?")),
		configure: func(c *app.Config) { c.Safety.DisclosureInterval = time.Microsecond }},
	// The crisis protocol: the reply is the referral, never the model's
	// wording; the run is tripped (finishReason other) in every dialect.
	{name: "crisis", status: 200, body: run("friend", "", msg("user", "I don't want to be here anymore. I keep thinking about ending my life."))},
	{name: "break-reminder", status: 200, before: []string{minor(msg("user", "Hi there."))},
		body:      minor(msg("user", "Can you help me with my homework?")),
		configure: func(c *app.Config) { c.Safety.BreakReminderInterval = time.Microsecond }},
	// Refused requests.
	{name: "missing-threadid", status: 400, body: `{"messages":[{"role":"user","content":"Hello"}]}`},
	{name: "invalid-json", status: 400, body: `{"messages":[{"role":"user","content":"Hello"}],"threadId":`},
	{name: "not-an-object", status: 400, body: `["Hello"]`},
	{name: "empty-messages", status: 400, body: `{"messages":[],"threadId":"t"}`},
	{name: "bad-role", status: 400, body: `{"messages":[{"role":"tool","content":"x"}],"threadId":"t"}`},
	{name: "unknown-personality", status: 400, body: run("pirate", "", msg("user", "Ahoy"))},
}

// minor is a run of a user the operator's app marks a minor.
func minor(msgs ...string) string {
	return `{"threadId":"thread-golden","resourceId":"user-golden","messages":[` + strings.Join(msgs, ",") +
		`],"runtimeContext":{"metadata":{"minor":true}}}`
}

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	traceRE = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	timeRE  = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	// dayRE is a day as recall writes it for the model ("On 2 May 2026").
	dayRE = regexp.MustCompile(`\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b`)
)

// normalize replaces what differs between runs: ids become <id-N> and trace
// ids <trace-N>, numbered by first appearance so that equal ids stay equal,
// and times become the fixed, still valid, 2000-01-01T00:00:00Z.
func normalize(b []byte) []byte {
	number := func(re *regexp.Regexp, label string, b []byte) []byte {
		seen := map[string]string{}
		return re.ReplaceAllFunc(b, func(m []byte) []byte {
			if r, ok := seen[string(m)]; ok {
				return []byte(r)
			}
			r := fmt.Sprintf("<%s-%d>", label, len(seen)+1)
			seen[string(m)] = r
			return []byte(r)
		})
	}
	b = number(uuidRE, "id", b)
	b = number(traceRE, "trace", b)
	b = dayRE.ReplaceAll(b, []byte("1 January 2000"))
	return timeRE.ReplaceAll(b, []byte("2000-01-01T00:00:00Z"))
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return append(buf.Bytes(), '\n')
}

func TestGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each request runs on a service of its own, with a fresh
			// database: no case recalls the turns of another, and generate
			// and stream see the same history.
			postAs := func(path string, h http.Header) (*http.Response, []byte) {
				// Without titles: one made after a request before the case
				// would show in what the case recalls, or not, by a race.
				svc := apptest.Start(t, func(c *app.Config) {
					c.Memory.Titles = false
					if tc.configure != nil {
						tc.configure(c)
					}
				})
				for _, b := range tc.before {
					if res, body := svc.Post(t, "/api/agents/companionAgent/generate", b); res.StatusCode != http.StatusOK {
						t.Fatalf("request before the case: %d %s", res.StatusCode, body)
					}
				}
				return svc.DoHeader(t, http.MethodPost, path, tc.body, h)
			}
			post := func(path string) (*http.Response, []byte) { return postAs(path, nil) }
			res, body := post("/api/agents/companionAgent/generate")
			if res.StatusCode != tc.status || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("generate: %d %s, want %d JSON\n%s", res.StatusCode, res.Header.Get("Content-Type"), tc.status, body)
			}
			gen := indent(t, body)
			testkit.Golden(t, filepath.Join("generate", tc.name+".json"), normalize(gen))

			res, body = post("/api/agents/companionAgent/stream")
			if res.StatusCode != tc.status {
				t.Fatalf("stream: %d, want %d\n%s", res.StatusCode, tc.status, body)
			}
			if tc.status != http.StatusOK {
				if ct := res.Header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("stream error answered %s, want a JSON body", ct)
				}
				testkit.Golden(t, filepath.Join("stream", tc.name+".json"), normalize(indent(t, body)))
				return
			}
			for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
				if got := res.Header.Get(h); got != want {
					t.Errorf("stream header %s: %q, want %q", h, got, want)
				}
			}
			testkit.Golden(t, filepath.Join("stream", tc.name+".sse"), normalize(body))
			// The live output obeys the rules too, before normalising.
			events, err := apitest.ReadSSE(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if err := apitest.Check(events); err != nil {
				t.Fatalf("live stream breaks the rules: %v", err)
			}
			var g api.GenerateResponse
			if err := json.Unmarshal(gen, &g); err != nil {
				t.Fatal(err)
			}
			if err := apitest.CheckAgainst(events, g); err != nil {
				t.Fatalf("live stream and generate disagree: %v", err)
			}
			// The same run in the other dialects.
			for _, d := range dialects {
				res, body := postAs("/api/agents/companionAgent/stream", http.Header{"X-Stream-Format": {d.format}})
				if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("%s stream: %d %s", d.format, res.StatusCode, res.Header.Get("Content-Type"))
				}
				testkit.Golden(t, filepath.Join(d.dir, tc.name+".sse"), normalize(body))
				if err := d.check(body, g); err != nil {
					t.Fatalf("%s stream: %v\n%s", d.format, err, body)
				}
			}
		})
	}
}

// dialects are the stream formats besides the seed's, each recorded in a
// folder of its own and checked by its own reader.
var dialects = []struct {
	format, dir string
	check       func(body []byte, g api.GenerateResponse) error
}{
	{"mastra", "mastra", apitest.CheckMastra},
	{"ai-sdk", "aisdk", apitest.CheckUIMessageStream},
}

// TestTranscriptsObeyRules checks every recorded transcript on its own,
// independently of how it was made: each stream obeys the spec's four rules
// and agrees with the generate body of the same request; each generate body
// has every field of the spec; each error body is {"error": "..."}.
func TestTranscriptsObeyRules(t *testing.T) {
	if testkit.Updating() {
		t.Skip("the transcripts are being rewritten")
	}
	streams, _ := filepath.Glob(filepath.Join("stream", "*.sse"))
	generates, _ := filepath.Glob(filepath.Join("generate", "*.json"))
	if len(streams) == 0 || len(generates) == 0 {
		t.Fatal("no transcripts found")
	}
	for _, path := range streams {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			events, err := apitest.ReadSSE(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if err := apitest.Check(events); err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(path), ".sse")
			gb, err := os.ReadFile(filepath.Join("generate", name+".json"))
			if err != nil {
				t.Fatalf("no generate transcript for %s: %v", name, err)
			}
			var g api.GenerateResponse
			if err := json.Unmarshal(gb, &g); err != nil {
				t.Fatal(err)
			}
			if err := apitest.CheckAgainst(events, g); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, path := range generates {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var e map[string]any
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			if msg, ok := e["error"].(string); ok {
				if len(e) != 1 || msg == "" {
					t.Fatalf("error body %s: want exactly one non-empty string field error", b)
				}
				return
			}
			if err := apitest.CheckGenerateBody(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGoldenMemory records what the memory routes show after a first
// exchange that asked the companion to remember something: the thread
// list with the title made after it (the seed's shape and Mastra's), and
// working memory (Mastra's shape).
func TestGoldenMemory(t *testing.T) {
	svc := apptest.Start(t, nil)
	if res, body := svc.Post(t, "/api/agents/companionAgent/generate", run("guru", "", msg("user", "Remember that I am learning to play the cello."))); res.StatusCode != http.StatusOK {
		t.Fatalf("generate: %d %s", res.StatusCode, body)
	}
	const list = "/api/memory/threads?resourceId=user-golden&agentId=companionAgent"
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := svc.Do(t, http.MethodGet, list, "")
		if !strings.Contains(string(body), `"title":""`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread got no title: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, g := range []struct {
		name, path string
		h          http.Header
	}{
		{"title", list, nil},
		{"title-mastra", list, http.Header{"X-Stream-Format": {"mastra"}}},
		{"working-memory", "/api/memory/threads/thread-golden/working-memory?resourceId=user-golden&agentId=companionAgent", http.Header{"X-Stream-Format": {"mastra"}}},
	} {
		res, body := svc.DoHeader(t, http.MethodGet, g.path, "", g.h)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", g.name, res.StatusCode, body)
		}
		testkit.Golden(t, filepath.Join("memory", g.name+".json"), normalize(indent(t, body)))
	}
}
