package model_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/model"
	_ "github.com/companionhq/companion/internal/testkit"
)

// script is a model whose attempts follow a script: each entry fails before
// its first part with err, or streams parts (and then fails with err when
// set), or hangs after `hangAfter` parts.
type script struct {
	attempts []step
	n        atomic.Int32
}

type step struct {
	err       error
	parts     int
	hangAfter int // -1: never
}

func (s *script) Provider() string { return "scripted" }
func (s *script) ID() string       { return "s1" }
func (s *script) Stream(ctx context.Context, _ model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		i := int(s.n.Add(1)) - 1
		st := s.attempts[min(i, len(s.attempts)-1)]
		for k := 0; k < st.parts; k++ {
			if st.hangAfter == k {
				<-ctx.Done()
				yield(model.Part{}, ctx.Err())
				return
			}
			if !yield(model.Part{Kind: model.PartText, Text: "x"}, nil) {
				return
			}
		}
		if st.hangAfter == st.parts {
			<-ctx.Done()
			yield(model.Part{}, ctx.Err())
			return
		}
		if st.err != nil {
			yield(model.Part{}, st.err)
			return
		}
		yield(model.Part{Kind: model.PartFinish, Finish: &model.Finish{Reason: model.FinishStop}}, nil)
	}
}

func fast() model.Policy {
	return model.Policy{MaxAttempts: 3, RetryBudget: time.Second, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond,
		CallTimeout: 5 * time.Second, FirstTokenTimeout: time.Second, Rand: func() float64 { return 0.5 }}
}

func collect(m model.Model, ctx context.Context) (texts int, finished bool, err error) {
	for p, perr := range m.Stream(ctx, model.Request{}) {
		if perr != nil {
			return texts, finished, perr
		}
		switch p.Kind {
		case model.PartText:
			texts++
		case model.PartFinish:
			finished = true
		}
	}
	return
}

func status(code int, retryAfter string) error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return model.StatusError("scripted", code, h, "", time.Now())
}

func TestResilient(t *testing.T) {
	never := -1
	tests := []struct {
		name       string
		steps      []step
		policy     func(*model.Policy)
		wantTries  int32
		wantKind   model.ErrorKind // 0: success
		wantInMsg  string
		wantTexts  int
		maxElapsed time.Duration
	}{
		{name: "success", steps: []step{{parts: 2, hangAfter: never}}, wantTries: 1, wantTexts: 2},
		{name: "429 then success", steps: []step{{err: status(429, ""), hangAfter: never}, {parts: 1, hangAfter: never}}, wantTries: 2, wantTexts: 1},
		{name: "503, 500, success", steps: []step{{err: status(503, ""), hangAfter: never}, {err: status(500, ""), hangAfter: never}, {parts: 1, hangAfter: never}}, wantTries: 3, wantTexts: 1},
		{name: "retries bounded", steps: []step{{err: status(503, ""), hangAfter: never}}, wantTries: 3, wantKind: model.KindUnavailable, wantInMsg: "gave up after 3 attempts"},
		{name: "400 not retried", steps: []step{{err: status(400, ""), hangAfter: never}}, wantTries: 1, wantKind: model.KindRejected},
		{name: "retry-after honoured", steps: []step{{err: status(429, "0.05"), hangAfter: never}, {parts: 1, hangAfter: never}}, wantTries: 2, wantTexts: 1},
		{name: "retry-after beyond budget", steps: []step{{err: status(429, "5"), hangAfter: never}}, wantTries: 1, wantKind: model.KindUnavailable, maxElapsed: 500 * time.Millisecond},
		{name: "connection error retried", steps: []step{{err: model.TransportError(context.Background(), "scripted", errors.New("dial: connection refused"), false), hangAfter: never}, {parts: 1, hangAfter: never}}, wantTries: 2, wantTexts: 1},
		{name: "no retry after the first part", steps: []step{{parts: 2, err: status(503, ""), hangAfter: never}}, wantTries: 1, wantKind: model.KindUnavailable, wantTexts: 2},
		{name: "first-token timeout", steps: []step{{hangAfter: 0}}, policy: func(p *model.Policy) { p.FirstTokenTimeout = 20 * time.Millisecond },
			wantTries: 1, wantKind: model.KindTimeout, wantInMsg: "first-token timeout"},
		{name: "call timeout mid-stream", steps: []step{{parts: 3, hangAfter: 2}}, policy: func(p *model.Policy) { p.CallTimeout = 50 * time.Millisecond },
			wantTries: 1, wantKind: model.KindTimeout, wantInMsg: "call timeout", wantTexts: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{attempts: tc.steps}
			p := fast()
			if tc.policy != nil {
				tc.policy(&p)
			}
			start := time.Now()
			texts, finished, err := collect(model.Resilient(s, p), context.Background())
			if tc.maxElapsed > 0 && time.Since(start) > tc.maxElapsed {
				t.Errorf("took %v", time.Since(start))
			}
			if got := s.n.Load(); got != tc.wantTries {
				t.Errorf("attempts = %d, want %d", got, tc.wantTries)
			}
			if texts != tc.wantTexts {
				t.Errorf("texts = %d, want %d", texts, tc.wantTexts)
			}
			if tc.wantKind == 0 {
				if err != nil || !finished {
					t.Fatalf("err = %v, finished = %v", err, finished)
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Kind != tc.wantKind || !strings.Contains(me.Message, tc.wantInMsg) {
				t.Fatalf("err = %#v, want kind %v with %q", err, tc.wantKind, tc.wantInMsg)
			}
		})
	}
}

func TestResilientRetryAfterWait(t *testing.T) {
	s := &script{attempts: []step{{err: status(429, "0.1"), hangAfter: -1}, {parts: 1, hangAfter: -1}}}
	var waits []time.Duration
	p := fast()
	p.OnRetry = func(r model.Retry) { waits = append(waits, r.Wait) }
	start := time.Now()
	if _, _, err := collect(model.Resilient(s, p), context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] != 100*time.Millisecond || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("waits %v after %v", waits, time.Since(start))
	}
}

func TestResilientBackoffGrowsWithJitter(t *testing.T) {
	s := &script{attempts: []step{{err: status(503, ""), hangAfter: -1}}}
	var waits []time.Duration
	p := fast()
	p.MaxAttempts, p.BaseDelay, p.MaxDelay = 4, 2*time.Millisecond, 5*time.Millisecond
	p.Rand = func() float64 { return 0.99 }
	p.OnRetry = func(r model.Retry) { waits = append(waits, r.Wait) }
	_, _, _ = collect(model.Resilient(s, p), context.Background())
	// Draws between half and all of 2ms, 4ms, then the 5ms cap.
	want := []time.Duration{1990 * time.Microsecond, 3980 * time.Microsecond, 4975 * time.Microsecond}
	if len(waits) != 3 {
		t.Fatalf("waits %v", waits)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("wait %d = %v, want %v", i, waits[i], want[i])
		}
	}
}

func TestResilientCancel(t *testing.T) {
	s := &script{attempts: []step{{hangAfter: 0}}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	_, _, err := collect(model.Resilient(s, fast()), ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"2": 2 * time.Second, "0.5": 500 * time.Millisecond, "": 0, "soon": 0, "-1": 0,
		"Wed, 01 Jan 2025 00:00:03 GMT": 3 * time.Second,
	} {
		h := http.Header{}
		h.Set("Retry-After", v)
		if got := model.RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", v, got, want)
		}
	}
	h := http.Header{}
	h.Set("Retry-After-Ms", "250")
	if got := model.RetryAfter(h, now); got != 250*time.Millisecond {
		t.Errorf("retry-after-ms: %v", got)
	}
}

func TestStatusErrorKinds(t *testing.T) {
	for code, want := range map[int]model.ErrorKind{
		429: model.KindUnavailable, 503: model.KindUnavailable, 500: model.KindUpstream, 502: model.KindUpstream,
		504: model.KindTimeout, 401: model.KindRejected, 404: model.KindRejected, 400: model.KindRejected,
	} {
		e := model.StatusError("p", code, nil, "secret sk-123456 echoed", time.Now())
		if e.Kind != want {
			t.Errorf("%d: kind %v, want %v", code, e.Kind, want)
		}
		if strings.Contains(e.Message, "sk-") {
			t.Errorf("%d: message %q shows the body", code, e.Message)
		}
		if e.Temporary != (code >= 500 || code == 429) {
			t.Errorf("%d: temporary %v", code, e.Temporary)
		}
	}
}

// TestResilientFailureAfterRetry: a retried call that then fails mid-answer
// reports that failure, not retries that ran out.
func TestResilientFailureAfterRetry(t *testing.T) {
	s := &script{attempts: []step{{err: status(429, ""), hangAfter: -1}, {parts: 2, err: status(502, ""), hangAfter: -1}}}
	texts, _, err := collect(model.Resilient(s, fast()), context.Background())
	var me *model.Error
	if texts != 2 || !errors.As(err, &me) || me.Status != 502 || strings.Contains(me.Message, "gave up") {
		t.Fatalf("texts %d, err %v", texts, err)
	}
}
