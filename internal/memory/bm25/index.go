// Package bm25 ranks one resource's history in process: an inverted index
// of its messages' words, kept up to date as messages are stored, scored
// by BM25 as the PostgreSQL store's search statement scores its documents
// (each message with its neighbours' text, a word counted once in the
// message and once in the neighbours). A store holds the indexes of the
// resources it searched lately in a Cache; ranking a history of a thousand
// messages takes tens of microseconds, where SQLite's bm25() over its
// full-text index took milliseconds a search.
package bm25

import (
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/memory"
)

// Doc is one message as the index takes it: the index keeps what a
// search shows of it (its Model, Pending and RunID are not kept), so that
// a search reads nothing more to show it and the messages around it.
type Doc struct {
	// Row orders messages by when they were stored: higher is newer.
	Row      int64
	ThreadID string
	Message  memory.Message
	// ThreadTitle is the thread's title as of the write that stored the
	// message, Version's (see Retitle); a thread the index holds keeps
	// the title of the highest version it was told.
	ThreadTitle string
	Version     uint64
}

// Hit is a message that matched a search, with its score.
type Hit struct {
	Row                   int64
	ThreadID, ThreadTitle string
	Message               memory.Message
	Score                 float64
}

// Ranking constants: SQLite's bm25 and the PostgreSQL store's (k1 1.2,
// b 0.75).
const (
	k1 = 1.2
	b  = 0.75
)

// Index is the inverted index of one resource's messages. It is safe for
// concurrent use.
type Index struct {
	mu      sync.RWMutex
	stems   *Stemmer
	terms   map[string]int32 // stem → term
	posting [][]int32        // term → the docs whose text holds it
	docs    []doc
	threads map[string][]int32 // thread → its docs by seq-1; -1 where none
	titles  map[string]title   // thread → its title
	lenSum  int64              // the sum of the docs' lengths
}

// title is a thread's title as a write left it, and that write's version.
type title struct {
	text    string
	version uint64
}

type doc struct {
	row    int64
	thread string
	msg    memory.Message // its seq is the message's in the thread
	terms  []int32        // the distinct terms of its text, sorted
	length int32          // distinct terms of its text and neighbours', plus one
	// prev and next are the docs of the messages before and after it in
	// its thread, or -1.
	prev, next int32
}

// New is an empty index whose words stems stems (nil: a stemmer of its
// own).
func New(stems *Stemmer) *Index {
	if stems == nil {
		stems = NewStemmer(0)
	}
	return &Index{stems: stems, terms: map[string]int32{}, threads: map[string][]int32{}, titles: map[string]title{}}
}

// Len is how many messages the index holds.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.docs)
}

// Add indexes docs; one the index holds already (its thread and seq) is
// left as it is.
func (x *Index) Add(docs ...Doc) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.docs = slices.Grow(x.docs, len(docs))
	var touched []int32
	var buf []int32
	for _, d := range docs {
		x.retitle(d.ThreadID, d.ThreadTitle, d.Version)
		seq := d.Message.Seq
		if seq < 1 || x.at(d.ThreadID, seq) >= 0 {
			continue
		}
		m := d.Message
		m.Model, m.Pending, m.RunID = nil, false, ""
		i := int32(len(x.docs))
		var terms []int32
		terms, buf = x.termsOf(m.Text, buf[:0])
		prev, next := x.at(d.ThreadID, seq-1), x.at(d.ThreadID, seq+1)
		x.docs = append(x.docs, doc{row: d.Row, thread: d.ThreadID, msg: m, terms: terms, prev: prev, next: next})
		if prev >= 0 {
			x.docs[prev].next = i
		}
		if next >= 0 {
			x.docs[next].prev = i
		}
		for _, t := range x.docs[i].terms {
			x.posting[t] = append(x.posting[t], i)
		}
		th := x.threads[d.ThreadID]
		for int64(len(th)) < seq {
			th = append(th, -1)
		}
		th[seq-1] = i
		x.threads[d.ThreadID] = th
		// Its length and its neighbours' (each gains a neighbour).
		touched = append(touched, i, prev, next)
	}
	slices.Sort(touched)
	for _, i := range slices.Compact(touched) {
		if i < 0 {
			continue
		}
		d := &x.docs[i]
		n := int32(unionLen(d.terms, x.textOf(d.prev), x.textOf(d.next))) + 1
		x.lenSum += int64(n - d.length)
		d.length = n
	}
}

// at is the doc of thread's message seq, or -1.
func (x *Index) at(thread string, seq int64) int32 {
	th := x.threads[thread]
	if seq < 1 || seq > int64(len(th)) {
		return -1
	}
	return th[seq-1]
}

// Retitle tells the index that the write of version v (a number that grows
// with the order in which the store's writes ran) left thread's title
// text: it takes it unless told of a later write already.
func (x *Index) Retitle(thread, text string, v uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.threads[thread]; ok {
		x.retitle(thread, text, v)
	}
}

func (x *Index) retitle(thread, text string, v uint64) {
	if t, ok := x.titles[thread]; !ok || v > t.version {
		x.titles[thread] = title{text, v}
	}
}

// Around is the messages of thread from seq-n to seq+n that the index
// holds, in order, and whether it holds the thread.
func (x *Index) Around(thread string, seq int64, n int) ([]memory.Message, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if _, ok := x.threads[thread]; !ok {
		return nil, false
	}
	var out []memory.Message
	for s := seq - int64(n); s <= seq+int64(n); s++ {
		if i := x.at(thread, s); i >= 0 {
			out = append(out, x.docs[i].msg)
		}
	}
	return out, true
}

// Message is thread's message seq as a search shows it, with the thread's
// title, and whether the index holds it.
func (x *Index) Message(thread string, seq int64) (Hit, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := x.at(thread, seq)
	if i < 0 {
		return Hit{}, false
	}
	d := &x.docs[i]
	return Hit{Row: d.row, ThreadID: thread, ThreadTitle: x.titles[thread].text, Message: d.msg}, true
}

// Threads calls f with each thread the index holds messages of.
func (x *Index) Threads(f func(thread string)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for th := range x.threads {
		f(th)
	}
}

// textOf is the terms of doc i's text; none when i is -1.
func (x *Index) textOf(i int32) []int32 {
	if i < 0 {
		return nil
	}
	return x.docs[i].terms
}

// termsOf is the distinct terms of text, sorted, new ones added to the
// index's; buf is room to work in, returned for the next call.
func (x *Index) termsOf(text string, buf []int32) (terms, room []int32) {
	out := buf
	words(text, func(w string) {
		s := x.stems.Stem(w)
		if s == "" {
			return
		}
		t, ok := x.terms[s]
		if !ok {
			t = int32(len(x.posting))
			x.terms[s] = t
			x.posting = append(x.posting, nil)
		}
		out = append(out, t)
	})
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, out
	}
	return slices.Clone(out), out
}

// unionLen is how many distinct terms the sorted lists hold together.
func unionLen(a, b, c []int32) int {
	n := 0
	for len(a)+len(b)+len(c) > 0 {
		m := int32(math.MaxInt32)
		for _, l := range [][]int32{a, b, c} {
			if len(l) > 0 && l[0] < m {
				m = l[0]
			}
		}
		for _, l := range []*[]int32{&a, &b, &c} {
			if len(*l) > 0 && (*l)[0] == m {
				*l = (*l)[1:]
			}
		}
		n++
	}
	return n
}

// Query says what Search looks for.
type Query struct {
	// Words are the words to look for (memory.SearchTerms).
	Words []string
	// ThreadID, when set, keeps that thread's messages alone;
	// ExcludeThreadID leaves a thread's out. Either counts for the
	// words' weights all the same.
	ThreadID, ExcludeThreadID string
	// Limit is the most hits.
	Limit int
	// NearWeight is what a word found in the neighbours counts for beside
	// one found in the message (memory.NearWeight).
	NearWeight float64
}

// Search ranks the messages that hold a word of q, in their text or their
// neighbours', best first; among equals the newest first.
//
// A history of up to memory.SearchExactMessages messages is ranked whole,
// by BM25: a word weighs ln((N - n + 0.5) / (n + 0.5)) (1e-6 at least), n
// being how many of the N messages hold it; a message f = 1 if its text
// holds it, plus NearWeight if its neighbours' do; its score, the sum over
// the words of weight * f * (k1 + 1) / (f + k1 * (1 - b + b * length /
// mean length)), its length being the distinct words of its text and
// neighbours' (and one for the resource, as the PostgreSQL store's
// documents hold).
//
// A longer one is searched in its bounded share, as memory's rank.go
// says: its SearchRecentMessages newest messages (the last the index
// took) for every word, and for a word rare among them the
// SearchOlderMatches newest older messages whose text holds it and
// their neighbours; a message scores, for each word, its
// SearchWordWeight if its text holds it, NearWeight of that if its
// neighbours' do. The work is bounded by what the recent messages hold,
// whatever the history's length.
func (x *Index) Search(q Query) []Hit {
	if q.Limit <= 0 || len(q.Words) == 0 {
		return nil
	}
	q.Words = q.Words[:min(len(q.Words), MaxWords)]
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.docs) == 0 {
		return nil
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.reset(len(x.docs))
	var terms []int32
	for _, w := range q.Words {
		s := x.stems.Stem(strings.ToLower(w))
		if t, ok := x.terms[s]; s != "" && ok && !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	}
	if len(x.docs) <= memory.SearchExactMessages {
		x.whole(sc, terms, q.NearWeight)
	} else {
		x.share(sc, terms, q.NearWeight)
	}
	// The best Limit, kept in order as they come: a search finds hundreds
	// of messages and keeps a few.
	better := func(i, j int32) bool {
		return sc.score[i] > sc.score[j] || (sc.score[i] == sc.score[j] && x.docs[i].row > x.docs[j].row)
	}
	best := make([]int32, 0, q.Limit)
	for _, i := range sc.touched {
		if len(best) == q.Limit && !better(i, best[len(best)-1]) {
			continue
		}
		d := &x.docs[i]
		if (q.ThreadID != "" && d.thread != q.ThreadID) || d.thread == q.ExcludeThreadID {
			continue
		}
		at := len(best)
		for at > 0 && better(i, best[at-1]) {
			at--
		}
		if len(best) < q.Limit {
			best = append(best, 0)
		}
		copy(best[at+1:], best[at:len(best)-1])
		best[at] = i
	}
	hits := make([]Hit, len(best))
	for k, i := range best {
		d := &x.docs[i]
		hits[k] = Hit{Row: d.row, ThreadID: d.thread, ThreadTitle: x.titles[d.thread].text, Message: d.msg, Score: sc.score[i]}
	}
	return hits
}

// whole scores every message that holds a word of terms by BM25 (Search).
func (x *Index) whole(sc *scratch, terms []int32, nearWeight float64) {
	n := float64(len(x.docs))
	avg := float64(x.lenSum) / n
	for _, t := range terms {
		// f by doc for this word: 1 for its text, NearWeight for its
		// neighbours', each once.
		sc.word++
		found := sc.found[:0]
		for _, i := range x.posting[t] {
			found = sc.mark(found, i, 1)
		}
		for _, i := range x.posting[t] {
			d := &x.docs[i]
			found = sc.markNear(sc.markNear(found, d.prev, nearWeight), d.next, nearWeight)
		}
		sc.found = found
		idf := max(1e-6, math.Log((n-float64(len(found))+0.5)/(float64(len(found))+0.5)))
		for _, i := range found {
			f := sc.f[i]
			sc.add(i, idf*f*(k1+1)/(f+k1*(1-b+b*float64(x.docs[i].length)/avg)))
		}
	}
}

// share scores the bounded share of a long history (Search).
func (x *Index) share(sc *scratch, terms []int32, nearWeight float64) {
	start := int32(len(x.docs) - memory.SearchRecentMessages)
	// The recent messages whose neighbour is an older one (a thread that
	// goes on across the bound): their near is that neighbour's text.
	var edge []int32
	for i := start; i < int32(len(x.docs)); i++ {
		if d := &x.docs[i]; (d.prev >= 0 && d.prev < start) || (d.next >= 0 && d.next < start) {
			edge = append(edge, i)
		}
	}
	holds := func(i, t int32) bool {
		if i < 0 {
			return false
		}
		_, ok := slices.BinarySearch(x.docs[i].terms, t)
		return ok
	}
	for _, t := range terms {
		p := x.posting[t]
		k, _ := slices.BinarySearch(p, start)
		recent := p[k:]
		rare := memory.SearchRare(len(recent))
		var older []int32
		if rare {
			older = p[max(0, k-memory.SearchOlderMatches):k]
		}
		sc.word++
		found := sc.found[:0]
		for _, l := range [2][]int32{recent, older} {
			for _, i := range l {
				found = sc.mark(found, i, 1)
			}
		}
		for _, l := range [2][]int32{recent, older} {
			for _, i := range l {
				d := &x.docs[i]
				for _, j := range [2]int32{d.prev, d.next} {
					if j >= start || (rare && j >= 0) {
						found = sc.markNear(found, j, nearWeight)
					}
				}
			}
		}
		for _, i := range edge {
			if d := &x.docs[i]; (d.prev < start && holds(d.prev, t)) || (d.next < start && holds(d.next, t)) {
				found = sc.markNear(found, i, nearWeight)
			}
		}
		sc.found = found
		w := memory.SearchWordWeight(len(recent))
		for _, i := range found {
			sc.add(i, w*sc.f[i])
		}
	}
}

// mark gives doc i f for the word being scored, once, adding it to found.
func (sc *scratch) mark(found []int32, i int32, f float64) []int32 {
	if sc.stamp[i] != sc.word {
		sc.stamp[i], sc.f[i] = sc.word, f
		return append(found, i)
	}
	return found
}

// markNear marks doc i (none when -1) as holding the word being scored in
// its neighbours' text, once.
func (sc *scratch) markNear(found []int32, i int32, nearWeight float64) []int32 {
	switch {
	case i < 0:
	case sc.stamp[i] != sc.word:
		sc.stamp[i], sc.f[i] = sc.word, nearWeight
		found = append(found, i)
	case sc.f[i] == 1: // its text holds the word, and now its neighbours'
		sc.f[i] += nearWeight
	}
	return found
}

// add adds v to doc i's score.
func (sc *scratch) add(i int32, v float64) {
	if !sc.scored[i] {
		sc.scored[i] = true
		sc.touched = append(sc.touched, i)
	}
	sc.score[i] += v
}

// scratch is what a search works in, reused: per doc, the word's f and
// the stamp of the word that set it, the score and whether it has one.
type scratch struct {
	word    uint32
	stamp   []uint32
	f       []float64
	score   []float64
	scored  []bool
	found   []int32
	touched []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// reset readies sc for a search of n docs.
func (sc *scratch) reset(n int) {
	if cap(sc.stamp) < n {
		sc.stamp, sc.f = make([]uint32, n), make([]float64, n)
		sc.score, sc.scored = make([]float64, n), make([]bool, n)
		sc.word, sc.touched = 0, sc.touched[:0]
	}
	// What the last search scored, cleared (within the whole arrays: it
	// may have had more docs).
	score, scored := sc.score[:cap(sc.score)], sc.scored[:cap(sc.scored)]
	for _, i := range sc.touched {
		score[i], scored[i] = 0, false
	}
	sc.touched = sc.touched[:0]
	sc.stamp, sc.f, sc.score, sc.scored = sc.stamp[:n], sc.f[:n], score[:n], scored[:n]
	if sc.word > math.MaxUint32-MaxWords {
		clear(sc.stamp[:cap(sc.stamp)])
		sc.word = 0
	}
}

// MaxWords bounds the words of a search that count.
const MaxWords = 64

// words calls f with each word of text, lower case: a run of letters and
// digits, as memory.SearchTerms splits a search.
func words(text string, f func(string)) {
	start := -1
	lower := true
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start, lower = i, true
			}
			if r >= utf8.RuneSelf || ('A' <= r && r <= 'Z') {
				lower = false
			}
			continue
		}
		if start >= 0 {
			word(text[start:i], lower, f)
			start = -1
		}
	}
	if start >= 0 {
		word(text[start:], lower, f)
	}
}

func word(w string, lower bool, f func(string)) {
	if !lower {
		w = strings.ToLower(w)
	}
	f(w)
}
