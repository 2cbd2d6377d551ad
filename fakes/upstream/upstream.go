// Package upstream holds what the fake model providers (fakes/cohere,
// fakes/openai) share: their knobs (pace, injected faults), the record of
// the requests they served (and those of a transport, see Watch), noticing
// a client that went away, writing a paced Server-Sent Events stream, and
// the message and tool shapes both chat requests use, with how their
// content reads. The wire formats themselves live in the fakes.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options tune a fake provider. The zero value answers at once, faultless.
type Options struct {
	// FirstTokenDelay is waited before the first token of an answer, after
	// the headers and the stream's opening event.
	FirstTokenDelay time.Duration
	// TokenDelay is waited before each later token.
	TokenDelay time.Duration
	// Faults are injected into the first requests, one each, in order;
	// later requests are answered normally.
	Faults []Fault
	// APIKey, when set, is the only key accepted; otherwise any non-empty
	// bearer token is.
	APIKey string
}

// FaultKind is what goes wrong.
type FaultKind int

// Fault kinds.
const (
	// FaultStatus answers Status with the provider's error body.
	FaultStatus FaultKind = iota + 1
	// FaultMalformed sends a chunk that is not valid JSON after After tokens.
	FaultMalformed
	// FaultCut closes the connection after After tokens.
	FaultCut
	// FaultHang stops sending after After tokens and waits for the client
	// to go away.
	FaultHang
)

// Fault is one injected failure.
type Fault struct {
	Kind FaultKind
	// Status and RetryAfter (the header's value, e.g. "1") for FaultStatus.
	Status     int
	RetryAfter string
	// After is how many tokens are sent before a stream fault.
	After int
}

// ParseFault reads a fault as the fakes command takes it:
//
//	429  429:retry-after=1  503  500
//	malformed  malformed:after=2
//	cut  cut:after=3
//	hang  hang:after=1
func ParseFault(s string) (Fault, error) {
	name, opts, _ := strings.Cut(strings.TrimSpace(s), ":")
	var f Fault
	switch name {
	case "malformed":
		f.Kind = FaultMalformed
	case "cut":
		f.Kind = FaultCut
	case "hang":
		f.Kind = FaultHang
	default:
		n, err := strconv.Atoi(name)
		if err != nil || n < 400 || n > 599 {
			return f, fmt.Errorf("fault %q: want an HTTP status from 400 to 599, malformed, cut or hang", s)
		}
		f.Kind, f.Status = FaultStatus, n
	}
	if opts == "" {
		return f, nil
	}
	for _, kv := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "retry-after" && f.Kind == FaultStatus:
			f.RetryAfter = v
		case k == "after" && f.Kind != FaultStatus:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return f, fmt.Errorf("fault %q: after= wants a whole number of tokens", s)
			}
			f.After = n
		default:
			return f, fmt.Errorf("fault %q: unknown option %q", s, k)
		}
	}
	return f, nil
}

// Exchange is one request a fake served, as the fake saw it.
type Exchange struct {
	Method, Path string
	// Header is the request's headers without Authorization.
	Header http.Header
	// Authorized tells whether the request carried an acceptable key.
	Authorized bool
	Body       []byte
	Fault      *Fault
	Started    time.Time
	// CancelledAt is when the fake noticed that the client went away before
	// the answer was complete; zero when it did not.
	CancelledAt time.Time
	// Tokens is how many tokens were sent.
	Tokens int
}

// Core keeps a fake's options, hands out faults and records exchanges. It
// is safe for concurrent use.
type Core struct {
	opts Options

	mu        sync.Mutex
	faults    []Fault
	exchanges []*Exchange
	changed   chan struct{} // closed and replaced on every change
}

// NewCore returns a Core for opts.
func NewCore(opts Options) *Core {
	return &Core{opts: opts, faults: slices.Clone(opts.Faults), changed: make(chan struct{})}
}

// Options returns the options the core was made with.
func (c *Core) Options() Options { return c.opts }

// AddFaults queues more faults for the next requests.
func (c *Core) AddFaults(f ...Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, f...)
}

// Exchanges returns copies of the exchanges so far, oldest first.
func (c *Core) Exchanges() []Exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Exchange, len(c.exchanges))
	for i, e := range c.exchanges {
		out[i] = *e
	}
	return out
}

// WaitCancelled waits until the n-th exchange (from 0) saw its client go
// away, and returns when that was; ok is false when ctx ended first.
func (c *Core) WaitCancelled(ctx context.Context, n int) (at time.Time, ok bool) {
	for {
		c.mu.Lock()
		if n < len(c.exchanges) && !c.exchanges[n].CancelledAt.IsZero() {
			at := c.exchanges[n].CancelledAt
			c.mu.Unlock()
			return at, true
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-ch:
		}
	}
}

func (c *Core) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Begin records r (whose body has been read into body) and returns its
// exchange with the fault it must suffer, if any. It also arranges to note
// the moment the client goes away; call the returned done before the
// handler returns.
func (c *Core) Begin(r *http.Request, body []byte) (ex *Exchange, done func()) {
	ex = c.record(r, body, true)
	// The server ends the request's context when the client goes away, or
	// after the handler returned; done runs before that, so a context that
	// ended while the handler ran means the client left. The callback
	// notes the moment; done catches the case where the handler saw the
	// end first and stopped the callback before it could start.
	ctx := r.Context()
	stop := context.AfterFunc(ctx, func() { c.gone(ex) })
	return ex, func() {
		stop()
		if ctx.Err() != nil {
			c.gone(ex)
		}
	}
}

// record notes the exchange of r, whose body is body, and, with faults,
// hands it the next fault.
func (c *Core) record(r *http.Request, body []byte, faults bool) *Exchange {
	h := r.Header.Clone()
	auth := h.Get("Authorization")
	h.Del("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	authorized := ok && strings.TrimSpace(token) != "" && (c.opts.APIKey == "" || token == c.opts.APIKey)

	c.mu.Lock()
	defer c.mu.Unlock()
	ex := &Exchange{Method: r.Method, Path: r.URL.Path, Header: h, Authorized: authorized, Body: body, Started: time.Now()}
	if faults && authorized && len(c.faults) > 0 {
		f := c.faults[0]
		c.faults = c.faults[1:]
		ex.Fault = &f
	}
	c.exchanges = append(c.exchanges, ex)
	c.notify()
	return ex
}

// gone notes that ex's client went away, the first time it is noticed:
// its context ended, or a write to it failed.
func (c *Core) gone(ex *Exchange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ex.CancelledAt.IsZero() {
		ex.CancelledAt = time.Now()
		c.notify()
	}
}

func (c *Core) countToken(ex *Exchange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ex.Tokens++
}

// Stream writes one paced Server-Sent Events answer and applies the
// exchange's stream fault.
type Stream struct {
	core  *Core
	ex    *Exchange
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	fault *Fault
}

// NewStream starts a 200 event stream on w.
func (c *Core) NewStream(w http.ResponseWriter, r *http.Request, ex *Exchange) *Stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &Stream{core: c, ex: ex, w: w, rc: http.NewResponseController(w), ctx: r.Context(), fault: ex.Fault}
	_ = s.rc.Flush()
	return s
}

// Frame writes one frame at once (an opening or closing event).
func (s *Stream) Frame(frame string) error {
	_, err := fmt.Fprint(s.w, frame)
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		// The client is gone, whether or not the server noticed it yet.
		s.core.gone(s.ex)
	}
	return err
}

// Token writes a frame that carries a token: it waits the pace first and
// applies the stream fault when its turn has come. malformed is the frame
// the fault sends instead of a well-formed one.
func (s *Stream) Token(frame, malformed string) error {
	if f := s.fault; f != nil && f.Kind != FaultStatus && s.ex.Tokens == f.After {
		switch f.Kind {
		case FaultMalformed:
			_ = s.Frame(malformed)
			return errFaulted
		case FaultCut:
			// The documented way to drop a connection without finishing
			// the response: the client sees the body end mid-stream.
			panic(http.ErrAbortHandler)
		case FaultHang:
			<-s.ctx.Done()
			return s.ctx.Err()
		}
	}
	d := s.core.opts.TokenDelay
	if s.ex.Tokens == 0 {
		d = s.core.opts.FirstTokenDelay
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-t.C:
		}
	}
	if err := s.Frame(frame); err != nil {
		return err
	}
	s.core.countToken(s.ex)
	return nil
}

// End applies a fault that comes after every token, before the closing
// events: a stream fault whose After is beyond the answer still happens.
func (s *Stream) End(malformed string) error {
	if f := s.fault; f != nil && f.Kind != FaultStatus && s.ex.Tokens <= f.After {
		f.After = s.ex.Tokens
		return s.Token("", malformed)
	}
	return nil
}

var errFaulted = errors.New("fault injected")

// Faulted tells whether err is the end of a stream cut short by a fault.
func Faulted(err error) bool { return err == errFaulted }

// WriteError answers status with body and, when set, Retry-After.
func WriteError(w http.ResponseWriter, status int, retryAfter string, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
