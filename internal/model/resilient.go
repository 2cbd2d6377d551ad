package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"
)

// Policy is how a model call is retried and bounded in time. Every provider
// runs under one (see Resilient), so the rules are written once.
type Policy struct {
	// MaxAttempts bounds the tries of one call, the first included.
	MaxAttempts int
	// RetryBudget bounds the time from the start of a call until the last
	// retry may begin, waits included. A wait that would end past it is not
	// taken: the call fails with the last error at once.
	RetryBudget time.Duration
	// BaseDelay is the wait before the first retry; it doubles with every
	// further retry, up to MaxDelay. Each wait is jittered: it is drawn
	// between half the value and the value.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// CallTimeout bounds a whole call, retries and streaming included;
	// 0 means no bound.
	CallTimeout time.Duration
	// FirstTokenTimeout bounds the wait for the first part of the answer in
	// each attempt; 0 means no bound.
	FirstTokenTimeout time.Duration
	// Rand returns a number in [0, 1) for the jitter; nil uses math/rand/v2.
	Rand func() float64
	// OnRetry, when set, is told about each retry before its wait.
	OnRetry func(Retry)
}

// Retry describes one retry, for logs.
type Retry struct {
	Provider string
	// Attempt is the attempt that failed, from 1.
	Attempt int
	Wait    time.Duration
	Err     error
}

// DefaultPolicy is the policy the service runs providers with unless
// configured otherwise.
func DefaultPolicy() Policy {
	return Policy{
		MaxAttempts:       3,
		RetryBudget:       30 * time.Second,
		BaseDelay:         500 * time.Millisecond,
		MaxDelay:          8 * time.Second,
		CallTimeout:       5 * time.Minute,
		FirstTokenTimeout: 60 * time.Second,
	}
}

// Sentinel causes of the contexts Resilient cancels, to tell its own
// timeouts from the caller's cancellation.
var (
	errFirstToken = errors.New("first-token timeout")
	errCallTime   = errors.New("call timeout")
)

// Resilient runs m under p: failures that may pass (rate limits, overload,
// 5xx, connection errors) are retried with exponential backoff and jitter,
// honouring Retry-After, while the answer has not begun; once a part has
// been passed on, a failure ends the stream with its error. Its timeouts
// fail with KindTimeout. Cancelling the caller's context cancels the
// upstream request at once.
func Resilient(m Model, p Policy) Model {
	if p.MaxAttempts < 1 {
		p.MaxAttempts = 1
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return &resilient{m: m, p: p}
}

type resilient struct {
	m Model
	p Policy
}

var _ Model = (*resilient)(nil)

func (r *resilient) Provider() string { return r.m.Provider() }
func (r *resilient) ID() string       { return r.m.ID() }

func (r *resilient) Stream(ctx context.Context, req Request) iter.Seq2[Part, error] {
	return func(yield func(Part, error) bool) {
		start := time.Now()
		cctx := ctx
		if r.p.CallTimeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeoutCause(ctx, r.p.CallTimeout, errCallTime)
			defer cancel()
		}
		for attempt := 1; ; attempt++ {
			began, stopped, err := r.attempt(cctx, req, yield)
			if stopped || err == nil {
				return
			}
			err = r.explain(ctx, cctx, err)
			wait, retry := r.retryable(err, began, attempt, time.Since(start))
			if !retry {
				var me *Error
				if attempt > 1 && !began && errors.As(err, &me) && me.Temporary {
					// Retrying stopped at its limits: say how hard we tried.
					err = withAttempts(err, attempt, time.Since(start))
				}
				yield(Part{}, err)
				return
			}
			if r.p.OnRetry != nil {
				r.p.OnRetry(Retry{Provider: r.m.Provider(), Attempt: attempt, Wait: wait, Err: err})
			}
			if werr := sleep(cctx, wait); werr != nil {
				yield(Part{}, r.explain(ctx, cctx, werr))
				return
			}
		}
	}
}

// attempt runs one try. began tells whether a part was passed on; stopped
// whether the consumer stopped; err is the failure, nil when the inner
// stream ended on its own.
func (r *resilient) attempt(cctx context.Context, req Request, yield func(Part, error) bool) (began, stopped bool, err error) {
	actx, cancel := context.WithCancelCause(cctx)
	defer cancel(nil)
	var timer *time.Timer
	if r.p.FirstTokenTimeout > 0 {
		timer = time.AfterFunc(r.p.FirstTokenTimeout, func() { cancel(errFirstToken) })
		defer timer.Stop()
	}
	for part, perr := range r.m.Stream(actx, req) {
		if perr != nil {
			if cause := context.Cause(actx); errors.Is(cause, errFirstToken) && !began {
				return began, false, fmt.Errorf("%w: %w", errFirstToken, perr)
			}
			return began, false, perr
		}
		if !began {
			began = true
			if timer != nil && !timer.Stop() && errors.Is(context.Cause(actx), errFirstToken) {
				// The timer fired as the part arrived: the attempt is over.
				return false, false, errFirstToken
			}
		}
		if !yield(part, nil) {
			return began, true, nil
		}
	}
	return began, false, nil
}

// explain turns r's own timeouts into model errors and leaves the caller's
// cancellation as it is.
func (r *resilient) explain(ctx, cctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errFirstToken):
		return &Error{Kind: KindTimeout, Provider: r.m.Provider(), Err: err,
			Message: fmt.Sprintf("the model sent nothing within %s (first-token timeout)", r.p.FirstTokenTimeout)}
	case errors.Is(context.Cause(cctx), errCallTime):
		return &Error{Kind: KindTimeout, Provider: r.m.Provider(), Err: err,
			Message: fmt.Sprintf("the model did not finish within %s (call timeout)", r.p.CallTimeout)}
	}
	var me *Error
	if errors.As(err, &me) {
		return err
	}
	return &Error{Kind: KindUpstream, Provider: r.m.Provider(), Message: "the model failed", Err: err}
}

// retryable decides whether err after attempt may be retried, and after
// how long.
func (r *resilient) retryable(err error, began bool, attempt int, elapsed time.Duration) (time.Duration, bool) {
	var me *Error
	if began || !errors.As(err, &me) || !me.Temporary || attempt >= r.p.MaxAttempts {
		return 0, false
	}
	wait := me.RetryAfter
	if wait <= 0 {
		d := r.p.BaseDelay << (attempt - 1)
		if d > r.p.MaxDelay || d <= 0 {
			d = r.p.MaxDelay
		}
		wait = d/2 + time.Duration(r.p.Rand()*float64(d/2))
	}
	if elapsed+wait > r.p.RetryBudget {
		return 0, false
	}
	return wait, true
}

// withAttempts adds to a model error how hard we tried.
func withAttempts(err error, attempts int, took time.Duration) error {
	var me *Error
	if !errors.As(err, &me) {
		return err
	}
	c := *me
	c.Message = fmt.Sprintf("%s; gave up after %d attempts in %s", me.Message, attempts, took.Round(time.Millisecond))
	return &c
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
