package embed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/companionhq/companion/internal/model"
)

// empty reports whether text has nothing to embed.
func empty(text string) bool { return strings.TrimSpace(text) == "" }

// remote is what the embedders of a provider's API share: the batch's
// bounds, the empty texts, the checks of the answer, the learnt dimensions
// and the normalisation.
type remote struct {
	provider string
	model    string
	maxBatch int
	// dims is the vectors' length: configured, known for the model, or
	// learnt from the first answer (0 until then).
	dims atomic.Int64
}

func (r *remote) Model() string {
	return fmt.Sprintf("%s:%s:%d", r.provider, r.model, r.dims.Load())
}

func (r *remote) Dimensions() int { return int(r.dims.Load()) }

func (r *remote) MaxBatch() int { return r.maxBatch }

// fail is a failure that trying again will not mend.
func (r *remote) fail(format string, args ...any) *Error {
	return &Error{Provider: r.provider, Err: fmt.Errorf(format, args...)}
}

// embed sends the texts that are not empty to call, checks what it
// answers and returns the vectors of all texts.
func (r *remote) embed(ctx context.Context, texts []string, kind Kind,
	call func(ctx context.Context, texts []string, kind Kind) ([][]float32, error)) ([][]float32, error) {
	if len(texts) > r.maxBatch {
		return nil, r.fail("%d texts in one call, more than the %d it may take", len(texts), r.maxBatch)
	}
	if kind != Document && kind != Query {
		return nil, r.fail("unknown kind %d", int(kind))
	}
	var send []string
	var at []int // the position of each text sent in texts
	for i, t := range texts {
		if !empty(t) {
			send, at = append(send, t), append(at, i)
		}
	}
	out := make([][]float32, len(texts))
	if len(send) > 0 {
		got, err := call(ctx, send, kind)
		if err != nil {
			return nil, err
		}
		if len(got) != len(send) {
			return nil, r.fail("the provider answered %d vectors for %d texts", len(got), len(send))
		}
		for i, v := range got {
			if len(v) == 0 {
				return nil, r.fail("the provider answered an empty vector")
			}
			// The first answer fixes the dimensions when nothing did before.
			r.dims.CompareAndSwap(0, int64(len(v)))
			if d := r.dims.Load(); int64(len(v)) != d {
				return nil, r.fail("the provider answered a vector of %d floats, not %d", len(v), d)
			}
			normalise(v)
			out[at[i]] = v
		}
	}
	d := r.dims.Load()
	if d == 0 && len(texts) > 0 {
		return nil, r.fail("every text is empty and the model's dimensions are not known yet: nothing to embed")
	}
	for i := range out {
		if out[i] == nil {
			out[i] = make([]float32, d)
		}
	}
	return out, nil
}

// statusError is the *Error of a non-2xx answer, classified as the chat
// providers classify theirs (model.StatusError); detail is the provider's
// own message, for the log.
func statusError(provider string, status int, header http.Header, detail string) *Error {
	me := model.StatusError(provider, status, header, detail, time.Now())
	e := &Error{Provider: provider, Status: status, Retryable: me.Temporary, RetryAfter: me.RetryAfter, Err: errors.New(me.Message)}
	if me.Err != nil {
		e.Err = fmt.Errorf("%s: %w", me.Message, me.Err)
	}
	return e
}

// transportError is the *Error of a request that could not be sent or
// whose answer could not be read. A call whose context ended wraps the
// context's error: cancelled, it is not retried; out of time, it may be.
func transportError(ctx context.Context, provider string, err error) *Error {
	if cerr := ctx.Err(); cerr != nil {
		return ctxError(provider, cerr)
	}
	var me *model.Error
	if errors.As(model.TransportError(ctx, provider, err, false), &me) {
		return &Error{Provider: provider, Retryable: me.Temporary, Err: fmt.Errorf("%s: %w", me.Message, err)}
	}
	// A cancellation from elsewhere than ctx.
	return &Error{Provider: provider, Err: err}
}

// errTooLarge is an answer larger than the bound of its batch.
var errTooLarge = errors.New("the answer is larger than a batch's vectors can be")

// responseLimit bounds the body of an answer of n vectors of dims floats
// (8192 when not known yet): a float in JSON takes up to about 25 bytes.
func responseLimit(n, dims int) int64 {
	if dims <= 0 {
		dims = 8192
	}
	return 1<<20 + int64(n)*int64(dims)*32
}

// readAll reads r to its end, or fails with errTooLarge past limit bytes.
func readAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}
