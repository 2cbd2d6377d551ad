package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Recorder is an http.RoundTripper that sends each request on and writes
// the exchange to a cassette in its directory as the response body is read:
// the client gets the stream as it arrives, and the cassette is written when
// the body ends or is closed. It is safe for concurrent use.
//
// go-vcr's own recorder reads a response whole before handing it on, which
// would hold a stream back until it ends; this one keeps go-vcr's cassette
// format.
type Recorder struct {
	dir    string
	source Source
	next   http.RoundTripper
	scrub  func(*Interaction)
	// secrets are scrubbed from the base URL too.
	secrets []string
	// OnError, when set, is told about a cassette that could not be written.
	OnError func(error)

	mu sync.Mutex
	// written holds the interactions of the cassettes written by this
	// recorder, by file name: a request sent again (a retry) adds to its
	// cassette, while one recorded in an earlier run is replaced.
	written map[string][]*Interaction
}

// NewRecorder records the exchanges of the model source through next to
// cassettes in dir, which it creates. secrets (the API keys) are scrubbed
// from every cassette, with the headers that carry credentials.
func NewRecorder(dir string, source Source, next http.RoundTripper, secrets ...string) (*Recorder, error) {
	if dir == "" {
		return nil, errors.New("no record directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the record directory: %w", err)
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &Recorder{dir: dir, source: source, next: next, scrub: Scrub(secrets...), secrets: secrets,
		written: map[string][]*Interaction{}}, nil
}

// RoundTrip implements http.RoundTripper. A request that fails before any
// response (a refused connection, say) leaves no cassette: nothing answered.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := ReadBody(req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	i := &Interaction{
		Request: Request{
			Proto: req.Proto, ProtoMajor: req.ProtoMajor, ProtoMinor: req.ProtoMinor,
			ContentLength: req.ContentLength, Host: req.Host,
			Body: string(body), Headers: req.Header.Clone(), URL: req.URL.String(), Method: req.Method,
		},
		Response: Response{
			Status: res.Status, Code: res.StatusCode, Proto: res.Proto, ProtoMajor: res.ProtoMajor, ProtoMinor: res.ProtoMinor,
			TransferEncoding: res.TransferEncoding, ContentLength: res.ContentLength, Uncompressed: res.Uncompressed,
			Headers: res.Header.Clone(), Duration: time.Since(start),
		},
	}
	res.Body = &tee{r: r, ctx: req.Context(), body: res.Body, i: i, start: time.Now(),
		name: CassetteName(r.source.Provider, req.Method, req.URL.String(), body)}
	return res, nil
}

// save adds i to its cassette and writes the cassette.
func (r *Recorder) save(name string, i *Interaction) {
	r.scrub(i)
	i.Companion.BaseURL = scrubURL(i.Companion.BaseURL, r.secrets)
	r.mu.Lock()
	defer r.mu.Unlock()
	i.ID = len(r.written[name])
	r.written[name] = append(r.written[name], i)
	data, err := marshal(r.written[name])
	if err == nil {
		err = writeFile(filepath.Join(r.dir, name), data)
	}
	if err != nil {
		r.fail(fmt.Errorf("writing cassette %s: %w", name, err))
	}
}

func (r *Recorder) fail(err error) {
	if r.OnError != nil {
		r.OnError(err)
	}
}

// tee is a response body that keeps what the client reads, and when.
type tee struct {
	r     *Recorder
	ctx   context.Context
	body  io.ReadCloser
	i     *Interaction
	name  string
	start time.Time

	mu     sync.Mutex
	buf    []byte
	chunks []Chunk
	done   bool
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return n, err
	}
	if n > 0 {
		t.buf = append(t.buf, p[:n]...)
		t.chunks = append(t.chunks, Chunk{At: time.Since(t.start), Bytes: n})
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		t.finish(EndEOF, "")
	case t.ctx.Err() != nil:
		// The client's own cancellation or deadline.
		t.finish(EndClient, "")
	default:
		t.finish(EndBroken, err.Error())
	}
	return n, err
}

func (t *tee) Close() error {
	t.mu.Lock()
	if !t.done {
		t.finish(EndClient, "")
	}
	t.mu.Unlock()
	return t.body.Close()
}

// finish writes the exchange to its cassette; t.mu is held.
func (t *tee) finish(end, failure string) {
	t.done = true
	t.i.Response.Body = string(t.buf)
	t.i.Companion = Extension{Source: t.r.source, Chunks: t.chunks, End: end, Error: failure}
	if t.i.Companion.Chunks == nil {
		t.i.Companion.Chunks = []Chunk{}
	}
	t.r.save(t.name, t.i)
}
