package openapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/openapi"
	"github.com/companionhq/companion/internal/requestid"
)

// The checker validates real exchanges with the service against the
// document, with kin-openapi: the request of every 2xx exchange, the
// status, headers and body of every response, and, for a stream, every
// frame's data against the event schema its dialect names in the
// response's x-events. It counts what it saw, so that a test can require
// every documented status and event to have been seen.

// formats asserts the formats the document uses: date-time is built in,
// uuid is added.
var formats = []openapi3.SchemaValidationOption{
	openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562)),
}

// sseDecoderOnce registers a body decoder for text/event-stream: the body
// is a string to the document's media type schema; x-events describes its
// frames, which the checker validates itself.
var sseDecoderOnce sync.Once

type checker struct {
	doc    *openapi3.T
	router routers.Router

	mu sync.Mutex
	// statuses holds "<operationId> <status>" for every exchange checked,
	// and "unrouted <status>" for those no operation matched.
	statuses map[string]bool
	// events holds the component names of the stream events checked (such
	// as SeedError), and "<component> <code>" for error events.
	events map[string]bool
}

// loadDocument loads and validates the document as the service embeds it.
func loadDocument(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Spec())
	if err != nil {
		t.Fatalf("loading the document: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("the document is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3.1: %v", err)
	}
	return doc
}

func newChecker(t *testing.T) *checker {
	t.Helper()
	sseDecoderOnce.Do(func() { openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder) })
	doc := loadDocument(t)
	// Any host: the services under test listen on ports of their own.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &checker{doc: doc, router: router, statuses: map[string]bool{}, events: map[string]bool{}}
}

// header builds request headers from name, value pairs.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// newRequest is a request to svc; a POST or PATCH, or a body, is declared
// JSON unless h names a Content-Type.
func newRequest(ctx context.Context, t *testing.T, svc *apptest.Service, method, path, body string, h http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, svc.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || method == http.MethodPost || method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	return req
}

// do sends a request to svc, reads the whole answer and checks the
// exchange against the document.
func (c *checker) do(t *testing.T, svc *apptest.Service, method, path, body string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req := newRequest(context.Background(), t, svc, method, path, body, h)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	c.check(t, req, []byte(body), res, b)
	return res, b
}

// want fails the test unless res has status.
func want(t *testing.T, res *http.Response, body []byte, status int) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", res.Request.Method, res.Request.URL.Path, res.StatusCode, body, status)
	}
}

// check validates one exchange: req (whose body was reqBody) and res (whose
// body was body).
func (c *checker) check(t *testing.T, req *http.Request, reqBody []byte, res *http.Response, body []byte) {
	t.Helper()
	what := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.RequestURI(), res.StatusCode)
	route, params, err := c.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		c.checkUnrouted(t, what, req, res, body, "unknownPath", http.StatusNotFound)
		return
	case errors.Is(err, routers.ErrMethodNotAllowed):
		c.checkUnrouted(t, what, req, res, body, "otherMethod", http.StatusMethodNotAllowed)
		return
	case err != nil:
		t.Fatalf("%s: finding the operation: %v", what, err)
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, SchemaValidationOptions: formats}}
	if res.StatusCode < 300 {
		// The service took the request: the document must too.
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s: the request the service took does not match the document: %v\nbody: %s", what, err, clip(reqBody))
		}
	}
	c.checkResponse(t, what, in, res, body)
	c.mu.Lock()
	c.statuses[route.Operation.OperationID+" "+strconv.Itoa(res.StatusCode)] = true
	c.mu.Unlock()
	if res.StatusCode == http.StatusOK && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		c.checkEvents(t, what, route.Operation, req, body)
	}
}

// checkUnrouted validates an answer to a request no operation matches
// against the document's x-unrouted responses.
func (c *checker) checkUnrouted(t *testing.T, what string, req *http.Request, res *http.Response, body []byte, kind string, status int) {
	t.Helper()
	if res.StatusCode != status {
		t.Errorf("%s: no operation of the document matches, so the answer must be %d", what, status)
		return
	}
	unrouted, _ := c.doc.Extensions["x-unrouted"].(map[string]any)
	ref, _ := unrouted[kind].(map[string]any)["$ref"].(string)
	resp := c.doc.Components.Responses[strings.TrimPrefix(ref, "#/components/responses/")]
	if resp == nil {
		t.Fatalf("x-unrouted.%s names no response of components: %q", kind, ref)
	}
	route := &routers.Route{Spec: c.doc, Method: req.Method,
		Operation: &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(status, resp))}}
	in := &openapi3filter.RequestValidationInput{Request: req, Route: route}
	if req.Method == http.MethodHead {
		// No body to check, and kin-openapi skips HEAD: the headers by hand.
		if !requestid.Valid(res.Header.Get("X-Request-Id")) || (status == 405 && res.Header.Get("Allow") == "") {
			t.Errorf("%s: headers %v", what, res.Header)
		}
	}
	c.checkResponse(t, what, in, res, body)
	c.mu.Lock()
	c.statuses["unrouted "+strconv.Itoa(status)] = true
	c.mu.Unlock()
}

func (c *checker) checkResponse(t *testing.T, what string, in *openapi3filter.RequestValidationInput, res *http.Response, body []byte) {
	t.Helper()
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.StatusCode, Header: res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: formats}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s: the response does not match the document: %v\nheaders: %v\nbody: %s", what, err, res.Header, clip(body))
	}
}

// frame is one SSE frame.
type frame struct {
	id    string
	hasID bool
	data  string
}

// parseFrames splits an event stream into its frames.
func parseFrames(t *testing.T, body []byte) []frame {
	t.Helper()
	var out []frame
	for _, block := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if block == "" {
			continue
		}
		var f frame
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "id: "):
				f.id, f.hasID = line[len("id: "):], true
			case strings.HasPrefix(line, "data: "):
				if f.data != "" {
					t.Fatalf("a frame with two data lines: %q", block)
				}
				f.data = line[len("data: "):]
			default:
				t.Fatalf("a frame line the service does not write: %q", line)
			}
		}
		out = append(out, f)
	}
	return out
}

// dialectSpec is an entry of a stream's x-events.
type dialectSpec struct {
	// name is the schema's component name.
	name   string
	schema *openapi3.SchemaRef
	// ids is every-frame, none or last-frame-of-event.
	ids string
	// done is the frame after the run's end, or "".
	done string
}

func (c *checker) dialects(t *testing.T, op *openapi3.Operation) map[string]dialectSpec {
	t.Helper()
	media := op.Responses.Status(http.StatusOK).Value.Content.Get("text/event-stream")
	if media == nil {
		t.Fatalf("%s: no text/event-stream answer in the document", op.OperationID)
	}
	raw, ok := media.Extensions["x-events"].(map[string]any)
	if !ok || len(raw) == 0 {
		t.Fatalf("%s: the text/event-stream answer has no x-events", op.OperationID)
	}
	out := map[string]dialectSpec{}
	for name, v := range raw {
		m, _ := v.(map[string]any)
		ref, _ := m["schema"].(map[string]any)["$ref"].(string)
		schema := c.doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
		ids, _ := m["ids"].(string)
		done, _ := m["done"].(string)
		if schema == nil || !slices.Contains([]string{"every-frame", "none", "last-frame-of-event"}, ids) {
			t.Fatalf("%s: x-events.%s: schema %q, ids %q", op.OperationID, name, ref, ids)
		}
		out[name] = dialectSpec{name: strings.TrimPrefix(ref, "#/components/schemas/"), schema: schema, ids: ids, done: done}
	}
	return out
}

// checkEvents validates every frame of a stream against the event schema
// of the dialect the request asked for, and the framing x-events states.
func (c *checker) checkEvents(t *testing.T, what string, op *openapi3.Operation, req *http.Request, body []byte) {
	t.Helper()
	specs := c.dialects(t, op)
	dialect := strings.ToLower(strings.TrimSpace(req.Header.Get("X-Stream-Format")))
	if dialect == "" {
		dialect = "seed"
	}
	if len(specs) == 1 {
		for name := range specs {
			dialect = name
		}
	}
	spec, ok := specs[dialect]
	if !ok {
		t.Fatalf("%s: x-events has no dialect %q", what, dialect)
	}
	frames := parseFrames(t, body)
	if spec.done != "" {
		if n := len(frames); n == 0 || frames[n-1].data != spec.done || frames[n-1].hasID {
			t.Errorf("%s: the %s stream does not end with a data: %s frame without id", what, dialect, spec.done)
		} else {
			frames = frames[:n-1]
		}
	}
	if len(frames) == 0 {
		t.Errorf("%s: the %s stream has no events", what, dialect)
		return
	}
	last := int64(-1)
	for i, f := range frames {
		switch spec.ids {
		case "none":
			if f.hasID {
				t.Errorf("%s: %s frame %d has an id", what, dialect, i)
			}
		case "every-frame":
			if !f.hasID {
				t.Errorf("%s: %s frame %d has no id", what, dialect, i)
			}
		case "last-frame-of-event":
			if !f.hasID && i == len(frames)-1 {
				t.Errorf("%s: the last %s frame has no id", what, dialect)
			}
		}
		if f.hasID {
			id, err := strconv.ParseInt(f.id, 10, 64)
			switch {
			case err != nil || id < 1:
				t.Errorf("%s: frame id %q", what, f.id)
			case spec.ids == "every-frame" && last >= 0 && id != last+1:
				t.Errorf("%s: %s frame ids go from %d to %d", what, dialect, last, id)
			case id <= last:
				t.Errorf("%s: %s frame ids go from %d to %d", what, dialect, last, id)
			}
			last = id
		}
		var v any
		if err := json.Unmarshal([]byte(f.data), &v); err != nil {
			t.Errorf("%s: %s frame %d is not JSON: %q", what, dialect, i, f.data)
			continue
		}
		opts := append([]openapi3.SchemaValidationOption{openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse(), openapi3.MultiErrors()}, formats...)
		if err := spec.schema.Value.VisitJSON(v, opts...); err != nil {
			t.Errorf("%s: %s frame %d does not match %s: %v\n%s", what, dialect, i, spec.name, err, f.data)
			continue
		}
		c.sawEvent(t, spec.name, spec.schema, v)
	}
}

// sawEvent counts the component event v is, by its discriminator.
func (c *checker) sawEvent(t *testing.T, unionName string, union *openapi3.SchemaRef, v any) {
	t.Helper()
	d := union.Value.Discriminator
	obj, _ := v.(map[string]any)
	typ, _ := obj[d.PropertyName].(string)
	ref, ok := d.Mapping[typ]
	if !ok {
		t.Errorf("%s: type %q is not in the discriminator's mapping", unionName, typ)
		return
	}
	name := strings.TrimPrefix(ref.Ref, "#/components/schemas/")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events[name] = true
	// Error codes: the seed's error.code, Mastra's payload.error.code.
	e, _ := obj["error"].(map[string]any)
	if p, ok := obj["payload"].(map[string]any); ok && e == nil {
		e, _ = p["error"].(map[string]any)
	}
	if code, ok := e["code"].(string); ok {
		c.events[name+" "+code] = true
	}
}

// stream is an event stream being read: the frames as they come, then the
// whole exchange checked once it ends.
type stream struct {
	c      *checker
	req    *http.Request
	body   string
	res    *http.Response
	rd     *bufio.Reader
	buf    bytes.Buffer
	cancel context.CancelFunc
}

// open starts a request whose answer is an event stream (200 required).
func (c *checker) open(t *testing.T, svc *apptest.Service, method, path, body string, h http.Header) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := newRequest(ctx, t, svc, method, path, body, h)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() {
		cancel()
		res.Body.Close()
	})
	s := &stream{c: c, req: req, body: body, res: res, cancel: cancel}
	s.rd = bufio.NewReader(io.TeeReader(res.Body, &s.buf))
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(s.rd)
		t.Fatalf("%s %s: %d %s, want a stream", method, path, res.StatusCode, b)
	}
	return s
}

// next reads the next frame; false at the end of the stream.
func (s *stream) next() (frame, bool) {
	var f frame
	for {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			return f, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return f, true
		case strings.HasPrefix(line, "id: "):
			f.id, f.hasID = line[len("id: "):], true
		case strings.HasPrefix(line, "data: "):
			f.data = line[len("data: "):]
		}
	}
}

// until reads frames until one's data contains s.
func (s *stream) until(t *testing.T, sub string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f, ok := s.next()
		if !ok {
			t.Fatalf("the stream ended before a frame with %q:\n%s", sub, s.buf.String())
		}
		if strings.Contains(f.data, sub) {
			return
		}
	}
	t.Fatalf("no frame with %q in 10s", sub)
}

// finish reads the stream to its end and checks the whole exchange. It
// returns the frames' data.
func (s *stream) finish(t *testing.T) []string {
	t.Helper()
	if _, err := io.Copy(io.Discard, s.rd); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	s.cancel()
	s.c.check(t, s.req, []byte(s.body), s.res, s.buf.Bytes())
	var out []string
	for _, f := range parseFrames(t, s.buf.Bytes()) {
		out = append(out, f.data)
	}
	return out
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}
