package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/turn"
	"github.com/companionhq/companion/internal/turn/turntest"
)

const (
	generatePath = "/api/agents/companionAgent/generate"
	streamPath   = "/api/agents/companionAgent/stream"
)

// scenario is one request and what must come back.
type scenario struct {
	name   string
	method string
	path   string
	body   string
	status int
	// want are substrings the body must contain; error is the exact error
	// message of a JSON error body.
	want  []string
	error string
}

func body(extra string) string {
	return `{"threadId":"t1","resourceId":"u1","messages":[{"role":"user","content":"Hello"}]` + extra + `}`
}

func TestScenarios(t *testing.T) {
	svc := apptest.Start(t, nil)
	scenarios := []scenario{
		{name: "health", method: "GET", path: "/health", status: 200, want: []string{`"status":"ok"`}},
		{name: "generate", method: "POST", path: generatePath, body: body(""), status: 200, want: []string{`"finishReason":"stop"`, `"threadId":"t1"`}},
		{name: "content as text parts", method: "POST", path: generatePath, status: 200,
			body: `{"threadId":"t","messages":[{"role":"user","content":[{"type":"text","text":"Hello "},{"type":"text","text":"parts"}]}]}`, want: []string{`\"Hello parts\"`}},
		{name: "missing threadId", method: "POST", path: generatePath, status: 400,
			body:  `{"messages":[{"role":"user","content":"Hello"}]}`,
			error: `threadId is required: name the conversation thread, e.g. "threadId": "thread-1"`},
		{name: "missing threadId on stream", method: "POST", path: streamPath, status: 400,
			body:  `{"messages":[{"role":"user","content":"Hello"}]}`,
			error: `threadId is required: name the conversation thread, e.g. "threadId": "thread-1"`},
		{name: "blank threadId", method: "POST", path: streamPath, status: 400, body: `{"threadId":"  ","messages":[{"role":"user","content":"Hello"}]}`,
			error: `threadId is required: name the conversation thread, e.g. "threadId": "thread-1"`},
		{name: "threadId not a string", method: "POST", path: generatePath, status: 400, body: `{"threadId":7,"messages":[{"role":"user","content":"Hello"}]}`,
			error: `threadId must be a string, not a number`},
		{name: "invalid JSON", method: "POST", path: generatePath, status: 400, body: `{"threadId":`,
			error: `request body is not valid JSON: unexpected end of JSON input (at byte 12)`},
		{name: "empty body", method: "POST", path: streamPath, status: 400, body: ``, error: `request body is empty: send a JSON object`},
		{name: "body not an object", method: "POST", path: generatePath, status: 400, body: `"hi"`, error: `request body must be a JSON object, not a string`},
		{name: "messages missing", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t"}`,
			error: `messages is required: send at least one message, e.g. [{"role": "user", "content": "Hello"}]`},
		{name: "messages not an array", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":"Hello"}`,
			error: `messages must be an array of messages, e.g. [{"role": "user", "content": "Hello"}]`},
		{name: "message without content", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":[{"role":"user"}]}`,
			error: `messages[0].content is required and must not be empty`},
		{name: "message with blank content", method: "POST", path: streamPath, status: 400, body: `{"threadId":"t","messages":[{"role":"user","content":" "}]}`,
			error: `messages[0].content is required and must not be empty`},
		{name: "message content of a wrong type", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":[{"role":"user","content":5}]}`,
			error: `messages[0]: content must be a string or an array of text parts`},
		{name: "image part", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":[{"role":"user","content":[{"type":"image","image":"x"}]}]}`,
			error: `messages[0]: content part of type "image" is not supported: only text parts are`},
		{name: "message not an object", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":["Hello"]}`,
			error: `messages[0]: must be an object with role and content`},
		{name: "tool role", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":[{"role":"tool","content":"x"}]}`,
			error: `messages[0].role must be "user", "assistant" or "system", not "tool"`},
		{name: "missing role", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":[{"content":"x"}]}`,
			error: `messages[0].role is required: "user", "assistant" or "system"`},
		{name: "only a system message", method: "POST", path: generatePath, status: 400, body: `{"threadId":"t","messages":[{"role":"system","content":"x"}]}`,
			error: `messages must include at least one user message`},
		{name: "unknown personality", method: "POST", path: generatePath, status: 400, body: body(`,"runtimeContext":{"metadata":{"personality":"pirate"}}`),
			error: `runtimeContext.metadata.personality: "pirate" is not a personality: use one of guru, wanderer, friend, philosopher`},
		{name: "unknown personality in tracingOptions", method: "POST", path: streamPath, status: 400, body: body(`,"tracingOptions":{"metadata":{"personality":"Guru"}}`),
			error: `tracingOptions.metadata.personality: "Guru" is not a personality: use one of guru, wanderer, friend, philosopher`},
		{name: "runtimeContext wins", method: "POST", path: generatePath, status: 200,
			body: body(`,"runtimeContext":{"metadata":{"personality":"guru"}},"tracingOptions":{"metadata":{"personality":"philosopher"}}`), want: []string{`"personality":"guru"`}},
		{name: "tracingOptions alone", method: "POST", path: generatePath, status: 200,
			body: body(`,"tracingOptions":{"metadata":{"personality":"philosopher"}}`), want: []string{`"personality":"philosopher"`}},
		{name: "negative maxSteps", method: "POST", path: generatePath, status: 400, body: body(`,"maxSteps":-1`), error: `maxSteps must not be negative`},
		{name: "negative maxOutputTokens", method: "POST", path: generatePath, status: 400, body: body(`,"modelSettings":{"maxOutputTokens":-5}`),
			error: `modelSettings.maxOutputTokens must not be negative`},
		{name: "threadId too long", method: "POST", path: generatePath, status: 400, body: `{"threadId":"` + strings.Repeat("x", 300) + `","messages":[{"role":"user","content":"Hi"}]}`,
			error: `threadId is longer than 256 bytes, the limit (-max-id-bytes)`},
		{name: "body too large", method: "POST", path: generatePath, status: 413, body: `{"threadId":"t","messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`,
			error: `request body is larger than 1048576 bytes, the limit (-max-body-bytes)`},
		{name: "unknown agent", method: "POST", path: "/api/agents/otherAgent/generate", status: 404, body: body(""),
			error: `agent "otherAgent" not found: the only agent is companionAgent`},
		{name: "unknown agent on stream", method: "POST", path: "/api/agents/otherAgent/stream", status: 404, body: body(""),
			error: `agent "otherAgent" not found: the only agent is companionAgent`},
		{name: "unknown route", method: "GET", path: "/api/nothing", status: 404, error: `no route for GET /api/nothing`},
		{name: "wrong method", method: "GET", path: generatePath, status: 405, error: `method GET is not allowed on /api/agents/companionAgent/generate: use POST`},
		{name: "wrong method on stream", method: "PUT", path: streamPath, status: 405, error: `method PUT is not allowed on /api/agents/companionAgent/stream: use POST`},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			res, b := svc.Do(t, sc.method, sc.path, sc.body)
			if res.StatusCode != sc.status {
				t.Fatalf("status %d, want %d\n%s", res.StatusCode, sc.status, b)
			}
			if sc.error != "" {
				if ct := res.Header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("content type %q, want application/json", ct)
				}
				var e map[string]any
				if err := json.Unmarshal(b, &e); err != nil {
					t.Fatal(err)
				}
				if len(e) != 1 || e["error"] != sc.error {
					t.Fatalf("body %s\nwant {\"error\": %q}", b, sc.error)
				}
			}
			if sc.status == 405 && res.Header.Get("Allow") != "POST" {
				t.Fatalf("Allow %q, want POST", res.Header.Get("Allow"))
			}
			for _, w := range sc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("body lacks %s\n%s", w, b)
				}
			}
		})
	}
}

// TestEveryRequestIsAnswered checks both endpoints for all personalities
// and the weather tool: generate bodies carry every field; streams obey the
// rules and agree with generate.
func TestEveryRequestIsAnswered(t *testing.T) {
	svc := apptest.Start(t, nil)
	for _, p := range []string{"guru", "wanderer", "friend", "philosopher"} {
		for i, q := range []string{"How are you?", "What's the weather in London and Atlantis?"} {
			// Generate and stream each start a thread of their own, so that
			// both answer the same conversation.
			b := func(endpoint string) string {
				return `{"threadId":"t-` + p + `-` + fmt.Sprint(i) + `-` + endpoint + `","resourceId":"r","messages":[{"role":"user","content":"` + q + `"}],"runtimeContext":{"metadata":{"personality":"` + p + `"}}}`
			}
			res, gen := svc.Post(t, generatePath, b("generate"))
			if res.StatusCode != 200 {
				t.Fatalf("%s %q: %d %s", p, q, res.StatusCode, gen)
			}
			if err := apitest.CheckGenerateBody(gen); err != nil {
				t.Fatalf("%s %q: %v", p, q, err)
			}
			var g api.GenerateResponse
			if err := json.Unmarshal(gen, &g); err != nil {
				t.Fatal(err)
			}
			res, stream := svc.Post(t, streamPath, b("stream"))
			if res.StatusCode != 200 {
				t.Fatalf("%s %q: %d", p, q, res.StatusCode)
			}
			events, err := apitest.ReadSSE(strings.NewReader(string(stream)))
			if err != nil {
				t.Fatal(err)
			}
			if err := apitest.Check(events); err != nil {
				t.Fatalf("%s %q: %v", p, q, err)
			}
			if err := apitest.CheckAgainst(events, g); err != nil {
				t.Fatalf("%s %q: %v", p, q, err)
			}
		}
	}
	if svc.OpenMeteo.Requests("/v1/search") == 0 {
		t.Fatal("the weather tool never reached Open-Meteo")
	}
}

// stubRunner lets a test decide what a run does.
type stubRunner func(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error)

func (f stubRunner) Run(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
	return f(ctx, in, emit)
}

func serve(t *testing.T, r httpapi.Runner, log *slog.Logger) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Runner: r, Logger: log}))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, b string) (*http.Response, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res, string(out)
}

func TestInternalErrorsStayInTheLog(t *testing.T) {
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	secret := "database password is hunter2"
	tests := []struct {
		name string
		run  stubRunner
	}{
		{"error", func(context.Context, agent.Input, agent.Emit) (*turn.Outcome, error) {
			return nil, io.ErrUnexpectedEOF
		}},
		{"panic", func(context.Context, agent.Input, agent.Emit) (*turn.Outcome, error) { panic(secret) }},
	}
	for _, tc := range tests {
		for _, path := range []string{generatePath, streamPath} {
			srv := serve(t, tc.run, log)
			res, b := post(t, srv.URL+path, body(""))
			if res.StatusCode != 500 || b != `{"error":"internal server error: the details are in the server log"}`+"\n" {
				t.Fatalf("%s %s: %d %s", tc.name, path, res.StatusCode, b)
			}
		}
	}
	if !strings.Contains(logs.String(), secret) {
		t.Fatal("the panic's detail is not in the log")
	}
}

// TestPanicAfterStreamStarted: a stream already under way still ends with an
// error event and run-finish.
func TestPanicAfterStreamStarted(t *testing.T) {
	srv := serve(t, stubRunner(func(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
		_ = emit(agent.RunStarted{RunID: "r1"})
		_ = emit(agent.StepStarted{})
		_ = emit(agent.TextDelta{Text: "Hel"})
		panic("boom")
	}), nil)
	res, b := post(t, srv.URL+streamPath, body(""))
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	events, err := apitest.ReadSSE(strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(apitest.Types(events), ",")
	if got != "start,step-start,text,error,run-finish" || events[3].Error.Code != api.CodeInternal || events[4].RunID != "r1" {
		t.Fatalf("events %s\n%s", got, b)
	}
}

// failingModel fails before its first part.
type failingModel struct{ err error }

func (failingModel) Provider() string { return "up" }
func (failingModel) ID() string       { return "up-1" }
func (m failingModel) Stream(context.Context, model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) { yield(model.Part{}, m.err) }
}

// TestUpstreamFailureBeforeFirstToken: the stream endpoint answers a real
// status, like generate, when the model fails before producing anything.
func TestUpstreamFailureBeforeFirstToken(t *testing.T) {
	tests := []struct {
		kind   model.ErrorKind
		status int
	}{
		{model.KindUpstream, 502}, {model.KindRejected, 502}, {model.KindUnavailable, 503}, {model.KindTimeout, 504},
	}
	for _, tc := range tests {
		a, err := agent.New(agent.Config{Model: failingModel{&model.Error{Kind: tc.kind, Provider: "up", Message: "it broke (HTTP 500)"}}})
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, turntest.Unstored{Agent: a}, nil)
		for _, path := range []string{generatePath, streamPath} {
			res, b := post(t, srv.URL+path, body(""))
			if res.StatusCode != tc.status || b != `{"error":"up model failed: it broke (HTTP 500)"}`+"\n" {
				t.Fatalf("%s %s: %d %s", tc.kind, path, res.StatusCode, b)
			}
		}
	}
}

// TestStreamFlushesEachEvent reads events while the run is still going.
func TestStreamFlushesEachEvent(t *testing.T) {
	next := make(chan struct{})
	srv := serve(t, stubRunner(func(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
		_ = emit(agent.RunStarted{RunID: "r"})
		_ = emit(agent.StepStarted{})
		for _, s := range []string{"a", "b"} {
			if err := emit(agent.TextDelta{Text: s}); err != nil {
				return nil, err
			}
			select {
			case <-next:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		_ = emit(agent.StepFinished{Kind: agent.StepInitial, FinishReason: "stop"})
		return &turn.Outcome{Result: &agent.Result{FinishReason: "stop"}}, nil
	}), nil)
	res, err := http.Post(srv.URL+streamPath, "application/json", strings.NewReader(body("")))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	readData := func() string {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				return line
			}
		}
	}
	for _, want := range []string{`"start"`, `"step-start"`, `"text":"a"`} {
		if got := readData(); !strings.Contains(got, want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	// "a" arrived while the run waits: it was flushed on its own.
	close(next)
	if got := readData(); !strings.Contains(got, `"text":"b"`) {
		t.Fatalf("got %s", got)
	}
}

// TestClientDisconnectCancelsRun: closing the connection cancels the run's
// context, and through it the model call.
func TestClientDisconnectCancelsRun(t *testing.T) {
	cancelled := make(chan struct{})
	srv := serve(t, stubRunner(func(ctx context.Context, in agent.Input, emit agent.Emit) (*turn.Outcome, error) {
		_ = emit(agent.RunStarted{RunID: "r"})
		_ = emit(agent.TextDelta{Text: "a"})
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+streamPath, strings.NewReader(body("")))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = bufio.NewReader(res.Body).ReadString('\n')
	cancel()
	res.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the run was not cancelled when the client went away")
	}
}
