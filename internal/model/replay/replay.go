package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/companionhq/companion/internal/model"
)

// Options tune a Replayer.
type Options struct {
	// Provider is the provider whose cassettes answer; "" picks the one
	// provider the directory holds.
	Provider string
	// Fast delivers every response at once, without the recorded delays
	// (for tests and load tests). A stream whose client left before its
	// end still waits, after its last chunk, for the client to leave.
	Fast bool
}

// Replayer is an http.RoundTripper that answers from the cassettes of a
// directory, without a network. A request is matched on its normalised
// form (method, path and canonical JSON body); the interactions of its
// cassette are replayed in the order they were recorded, then the last one
// again for every later request. The response body arrives in the recorded
// reads at the recorded times (unless Fast), and ends as the recording
// ended: at its end, with the recorded failure, or, when the client had
// stopped reading, by waiting for the client to go. An unmatched request
// fails with a *model.Error that names the closest cassette and where it
// differs. It keeps no record of the requests it served: a service may
// replay for hours. It is safe for concurrent use.
type Replayer struct {
	dir      string
	provider string
	fast     bool
	sources  []Source
	byKey    map[string]*entry
	entries  []*entry // of provider, by name
}

// entry is one cassette file.
type entry struct {
	name         string
	norm         normal
	provider     string
	interactions []*Interaction

	mu   sync.Mutex
	next int // the interaction the next request gets
}

// take returns the interaction that answers the next request: each in the
// order they were recorded, then the last one again.
func (e *entry) take() *Interaction {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.next == len(e.interactions) {
		return e.interactions[e.next-1]
	}
	e.next++
	return e.interactions[e.next-1]
}

// ErrSeveralProviders is the error of Open without Options.Provider on a
// directory that holds the cassettes of several providers.
var ErrSeveralProviders = errors.New("the replay directory holds cassettes of several providers")

// Open loads the cassettes (*.yaml) of dir.
func Open(dir string, opts Options) (*Replayer, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("the replay directory: %w", err)
	}
	r := &Replayer{dir: dir, fast: opts.Fast, byKey: map[string]*entry{}}
	seen := map[Source]bool{}
	var all []*entry
	for _, p := range paths {
		is, err := ReadCassette(p)
		if err != nil {
			return nil, err
		}
		if len(is) == 0 {
			continue
		}
		name := filepath.Base(p)
		src := is[0].Companion.Source
		e := &entry{name: name, provider: src.Provider, interactions: is,
			norm: normalise(is[0].Request.Method, is[0].Request.URL, []byte(is[0].Request.Body))}
		for k, i := range is {
			n := normalise(i.Request.Method, i.Request.URL, []byte(i.Request.Body))
			if !n.same(e.norm) || i.Companion.Provider != src.Provider {
				return nil, fmt.Errorf("cassette %s: interaction %d is another request than interaction 0", name, k)
			}
		}
		k := e.norm.key(src.Provider)
		if other := r.byKey[k]; other != nil {
			return nil, fmt.Errorf("cassettes %s and %s hold the same request", other.name, name)
		}
		r.byKey[k] = e
		all = append(all, e)
		// Sources differ by provider, model and the base URL's path: the
		// same model recorded at another address is the same source.
		src.BaseURL = is[0].Companion.BaseURL
		key := src
		if u, err := url.Parse(src.BaseURL); err == nil {
			key.BaseURL = u.Path
		}
		if !seen[key] {
			seen[key] = true
			r.sources = append(r.sources, src)
		}
	}
	sort.Slice(r.sources, func(a, b int) bool { return r.sources[a].String() < r.sources[b].String() })
	r.provider = opts.Provider
	if r.provider == "" {
		providers := map[string]bool{}
		for _, s := range r.sources {
			providers[s.Provider] = true
		}
		if len(providers) > 1 {
			return nil, fmt.Errorf("%w (%s)", ErrSeveralProviders, r.describe())
		}
		for p := range providers {
			r.provider = p
		}
	}
	for _, e := range all {
		if e.provider == r.provider {
			r.entries = append(r.entries, e)
		}
	}
	sort.Slice(r.entries, func(a, b int) bool { return r.entries[a].name < r.entries[b].name })
	return r, nil
}

// describe lists the sources, for messages.
func (r *Replayer) describe() string {
	var names []string
	for _, s := range r.sources {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}

// Sources lists who answered the recorded requests, one entry per
// provider, model and base URL path (the host aside).
func (r *Replayer) Sources() []Source { return append([]Source(nil), r.sources...) }

// Cassettes is how many cassettes answer for the replayed provider.
func (r *Replayer) Cassettes() int { return len(r.entries) }

// RoundTrip implements http.RoundTripper.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := ReadBody(req)
	if err != nil {
		return nil, err
	}
	n := normalise(req.Method, req.URL.String(), body)
	e := r.byKey[n.key(r.provider)]
	if e == nil || !e.norm.same(n) {
		return nil, r.unmatched(n)
	}
	ci := e.take()
	ext := ci.Companion
	ctx := req.Context()
	if d := ci.Response.Duration; !r.fast && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec := ci.Response
	res := &http.Response{
		Status: rec.Status, StatusCode: rec.Code,
		Proto: rec.Proto, ProtoMajor: rec.ProtoMajor, ProtoMinor: rec.ProtoMinor,
		TransferEncoding: rec.TransferEncoding, Trailer: rec.Trailer.Clone(),
		ContentLength: rec.ContentLength, Uncompressed: rec.Uncompressed,
		Header: rec.Headers.Clone(), Close: true, Request: req,
	}
	if res.Header == nil {
		res.Header = http.Header{}
	}
	res.Body = &player{ctx: ctx, body: []byte(ci.Response.Body), chunks: ext.Chunks, end: ext.End, failure: ext.Error,
		fast: r.fast, start: time.Now(), closed: make(chan struct{})}
	return res, nil
}

// unmatched is the error of a request no cassette holds: it names the
// cassette that differs in the fewest places, and the first of them.
func (r *Replayer) unmatched(n normal) error {
	var best *entry
	var diffs []diff
	cost := func(ds []diff) int {
		c := 0
		for _, d := range ds {
			c += d.cost
		}
		return c
	}
	for _, e := range r.entries {
		d := difference(e.norm, n)
		if best == nil || len(d) < len(diffs) || (len(d) == len(diffs) && cost(d) < cost(diffs)) {
			best, diffs = e, d
		}
	}
	msg := "no cassette matches the request: the replay directory holds none for this provider"
	var cause error
	if best != nil {
		at := diffs[0].at
		if len(at) > 120 {
			at = at[:120] + "..."
		}
		msg = fmt.Sprintf("no cassette matches the request; the closest, %s, differs at %s", best.name, at)
		if len(diffs) > 1 {
			msg += fmt.Sprintf(" and %d more places", len(diffs)-1)
		}
		var places []string
		for _, d := range diffs {
			places = append(places, d.at)
		}
		cause = fmt.Errorf("%s %s differs from %s at %s", n.method, n.path, best.name, strings.Join(places, ", "))
	}
	return &model.Error{Kind: model.KindRejected, Provider: r.provider, Message: msg, Err: cause}
}

// errClosed is the error of a read after Close.
var errClosed = errors.New("replay: read on a closed response body")

// player is a response body that delivers the recorded reads.
type player struct {
	ctx     context.Context
	body    []byte
	chunks  []Chunk
	next    int // the next chunk to deliver
	left    int // bytes left of the chunk being delivered
	end     string
	failure string
	fast    bool
	start   time.Time

	mu       sync.Mutex
	closed   chan struct{}
	isClosed bool
}

func (p *player) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	select {
	case <-p.closed:
		return 0, errClosed
	default:
	}
	for p.left == 0 {
		if p.next == len(p.chunks) {
			return 0, p.ending()
		}
		c := p.chunks[p.next]
		if !p.fast {
			if err := p.wait(time.Until(p.start.Add(c.At))); err != nil {
				return 0, err
			}
		}
		p.left = c.Bytes
		p.next++
	}
	n := copy(b, p.body[:p.left])
	p.body, p.left = p.body[n:], p.left-n
	return n, nil
}

// wait waits d, or until the client leaves.
func (p *player) wait(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	case <-p.closed:
		return errClosed
	}
}

// ending is what a read past the last chunk returns.
func (p *player) ending() error {
	switch p.end {
	case EndEOF:
		return io.EOF
	case EndBroken:
		return fmt.Errorf("%s (replayed): %w", p.failure, io.ErrUnexpectedEOF)
	}
	// The client stopped reading here when it was recorded: wait for it
	// to go.
	select {
	case <-p.ctx.Done():
		return p.ctx.Err()
	case <-p.closed:
		return errClosed
	}
}

func (p *player) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isClosed {
		p.isClosed = true
		close(p.closed)
	}
	return nil
}
