package upstream

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/companionhq/companion/internal/model/replay"
)

// Watch returns a transport that sends each request on through next and
// records it as an exchange of c, the way a fake records the requests it
// serves: when it started, and when its client went away before the answer
// ended (its context ended, or it closed the body, before the body's end or
// failure was read). Tests watch a transport that answers without a server,
// such as a replay.Replayer, with the Exchanges and WaitCancelled they use on
// the fakes. c's faults are not applied, and no token is counted.
func (c *Core) Watch(next http.RoundTripper) http.RoundTripper {
	return &watched{core: c, next: next}
}

type watched struct {
	core *Core
	next http.RoundTripper
}

func (w *watched) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := replay.ReadBody(req)
	if err != nil {
		return nil, err
	}
	ex := w.core.record(req, body, false)
	ctx := req.Context()
	res, err := w.next.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			w.core.gone(ex)
		}
		return nil, err
	}
	b := &watchedBody{core: w.core, ex: ex, ctx: ctx, body: res.Body}
	b.stop = context.AfterFunc(ctx, b.left)
	res.Body = b
	return res, nil
}

// watchedBody notes a client that goes away before the body's end.
type watchedBody struct {
	core *Core
	ex   *Exchange
	ctx  context.Context
	body io.ReadCloser
	stop func() bool

	mu    sync.Mutex
	ended bool // the body's end, or its failure, was read
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	// io.EOF, or a read that fails while the client is still there, is the
	// body's own end; one that fails because the client left is noted by
	// left.
	if err == io.EOF || (err != nil && b.ctx.Err() == nil) {
		b.mu.Lock()
		b.ended = true
		b.mu.Unlock()
		b.stop()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.left()
	b.stop()
	return b.body.Close()
}

// left notes that the client went away, unless the body had ended.
func (b *watchedBody) left() {
	b.mu.Lock()
	ended := b.ended
	b.mu.Unlock()
	if !ended {
		b.core.gone(b.ex)
	}
}
