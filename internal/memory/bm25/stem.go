package bm25

import (
	"sync"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"

	"github.com/companionhq/companion/internal/memory"
)

// Stemmer is English stemming (Snowball's, the stemmer of PostgreSQL's
// english configuration) with its answers kept: a history says the same
// few thousand words over and over, and a stem costs a microsecond where a
// lookup costs a few dozen nanoseconds. Safe for concurrent use.
type Stemmer struct {
	mu    sync.RWMutex
	max   int
	stems map[string]string
}

// DefaultStems is how many words a Stemmer keeps by default.
const DefaultStems = 200_000

// NewStemmer keeps the stems of max words at most (0: DefaultStems); past
// that it forgets them all and starts again.
func NewStemmer(max int) *Stemmer {
	if max <= 0 {
		max = DefaultStems
	}
	return &Stemmer{max: max, stems: map[string]string{}}
}

// Stem is the stem of w (lower case), or "" for a stop word (one a search
// does not look for, memory.StopWord).
func (s *Stemmer) Stem(w string) string {
	s.mu.RLock()
	st, ok := s.stems[w]
	s.mu.RUnlock()
	if ok {
		return st
	}
	if !memory.StopWord(w) {
		env := snowballstem.NewEnv(w)
		english.Stem(env)
		st = env.Current()
	}
	s.mu.Lock()
	if len(s.stems) >= s.max {
		clear(s.stems)
	}
	// The key is a copy: w may be a slice of a long message's text.
	s.stems[string([]byte(w))] = st
	s.mu.Unlock()
	return st
}
