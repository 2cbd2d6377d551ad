package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"
)

// DefaultFakeDimensions is the length of the fake's vectors by default.
const DefaultFakeDimensions = 256

// DefaultFakeMaxBatch is the most texts one call of the fake takes, until
// SetMaxBatch says otherwise.
const DefaultFakeMaxBatch = 256

// ErrInjected is the cause of the failures FailNext asks for.
var ErrInjected = errors.New("a failure asked for by FailNext")

// Fake is a deterministic embedder that needs no network, for tests and
// the demo. A text's vector is the feature hashing of its words: each
// lower-cased run of letters and digits, cut to a crude English stem (so
// "dogs" and "dog", "loved" and "loving" land together), adds ±1 at a
// place its hash picks, and each of its character trigrams ±0.3 at
// another, so that words that share a root but not a stem still come
// close. Common English words ("the", "and", "is") count only in a text
// that has nothing else. A text without a letter or a digit gets a zero
// vector. Documents and queries are embedded alike.
//
// It counts what it is asked (Calls, Texts, Count) and can be told to fail
// (FailNext, SetHook), for the tests of what calls it. It is safe for
// concurrent use.
type Fake struct {
	dims int

	mu       sync.Mutex
	maxBatch int
	failN    int
	failRetr bool
	hook     func(ctx context.Context, texts []string, kind Kind) error
	calls    int
	texts    int
	counts   map[string]int
}

var _ Embedder = (*Fake)(nil)

// NewFake returns a fake embedder of vectors of dims floats;
// DefaultFakeDimensions when dims is 0 or less.
func NewFake(dims int) *Fake {
	if dims <= 0 {
		dims = DefaultFakeDimensions
	}
	return &Fake{dims: dims, maxBatch: DefaultFakeMaxBatch, counts: map[string]int{}}
}

// Model implements Embedder: "fake:<dims>".
func (f *Fake) Model() string { return fmt.Sprintf("fake:%d", f.dims) }

// Dimensions implements Embedder.
func (f *Fake) Dimensions() int { return f.dims }

// MaxBatch implements Embedder.
func (f *Fake) MaxBatch() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxBatch
}

// SetMaxBatch sets how many texts one call takes (n > 0), so that a test
// can make its caller split its work into small batches.
func (f *Fake) SetMaxBatch(n int) {
	if n <= 0 {
		panic(fmt.Sprintf("embed: Fake.SetMaxBatch(%d)", n))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxBatch = n
}

// FailNext makes the next n calls fail with an *Error wrapping
// ErrInjected: retryable ones with status 503, others with 400.
func (f *Fake) FailNext(n int, retryable bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failN, f.failRetr = n, retryable
}

// SetHook has h called with each call's texts before they are embedded
// (after the failures FailNext asked for), nil to stop. An error of h
// fails the call: an *Error as it is, another wrapped in a non-retryable
// *Error. h may block, e.g. until ctx ends.
func (f *Fake) SetHook(h func(ctx context.Context, texts []string, kind Kind) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// Calls is the number of Embed calls, failed ones included.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Texts is the number of texts embedded by the calls that succeeded.
func (f *Fake) Texts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.texts
}

// Count is the number of times text was embedded by the calls that
// succeeded.
func (f *Fake) Count(text string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[text]
}

// Embed implements Embedder.
func (f *Fake) Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	f.mu.Lock()
	f.calls++
	maxBatch, hook := f.maxBatch, f.hook
	fail := f.failN > 0
	if fail {
		f.failN--
	}
	retryable := f.failRetr
	f.mu.Unlock()

	if fail {
		status := 400
		if retryable {
			status = 503
		}
		return nil, &Error{Provider: ProviderFake, Status: status, Retryable: retryable, Err: ErrInjected}
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ProviderFake, err)
	}
	if len(texts) > maxBatch {
		return nil, &Error{Provider: ProviderFake, Err: fmt.Errorf("%d texts in one call, more than the %d it may take", len(texts), maxBatch)}
	}
	if kind != Document && kind != Query {
		return nil, &Error{Provider: ProviderFake, Err: fmt.Errorf("unknown kind %d", int(kind))}
	}
	if hook != nil {
		if err := hook(ctx, texts, kind); err != nil {
			var e *Error
			switch {
			case errors.As(err, &e):
				return nil, e
			case ctx.Err() != nil:
				return nil, ctxError(ProviderFake, err)
			}
			return nil, &Error{Provider: ProviderFake, Err: err}
		}
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = f.vector(t)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.texts += len(texts)
	for _, t := range texts {
		f.counts[t]++
	}
	return out, nil
}

// Weights of a word and of each of its trigrams.
const (
	wordWeight    = 1.0
	trigramWeight = 0.3
)

// vector is the fake's embedding of text.
func (f *Fake) vector(text string) []float32 {
	acc := make([]float64, f.dims)
	words := fakeWords(text)
	for _, w := range words {
		f.add(acc, 'w', stem(w), wordWeight)
		r := []rune("<" + w + ">")
		for i := 0; i+3 <= len(r); i++ {
			f.add(acc, 't', string(r[i:i+3]), trigramWeight)
		}
	}
	v := make([]float32, f.dims)
	var s float64
	for _, x := range acc {
		s += x * x
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// add adds weight, with the sign and at the place the hash of feature
// picks: signs make collisions cancel out on average rather than add up.
func (f *Fake) add(acc []float64, space byte, feature string, weight float64) {
	h := fnv1a(space, feature)
	if h>>63 == 1 {
		weight = -weight
	}
	acc[h%uint64(f.dims)] += weight
}

// fnv1a is the 64-bit FNV-1a hash of space and s.
func fnv1a(space byte, s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	h = (h ^ uint64(space)) * prime
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	return h
}

// fakeWords are the lower-cased runs of letters and digits of text, but
// the common words unless there is nothing else.
func fakeWords(text string) []string {
	all := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	words := all[:0:0]
	for _, w := range all {
		if !stopWords[w] {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return all
	}
	return words
}

// stopWords are common English words, which say little of what a text is
// about. Read only.
var stopWords = wordSet(`a an the and or but if of to in on at by for with from as into about
	is are was were be been being am do does did have has had will would can could should
	i me my you your he him his she her it its we us our they them their this that these those
	not no so than then there here what which who whom when where why how all any some just very`)

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// stem cuts a crude English suffix off a lower-cased word: a plural's s
// (ies to y), then ing or ed with a doubled consonant undone, then a final
// e. It is good enough to bring a word's forms together most of the time,
// which is all the fake needs.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		w = w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	}
	for _, suffix := range []string{"ing", "ed"} {
		if rest, ok := strings.CutSuffix(w, suffix); ok && len(rest) >= 3 && strings.ContainsAny(rest, "aeiouy") {
			w = rest
			if k := len(w); w[k-1] == w[k-2] && strings.IndexByte("bdfgmnprt", w[k-1]) >= 0 {
				w = w[:k-1]
			}
			break
		}
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}
