package memory

import (
	"strings"
	"unicode"
)

// MaxSearchTerms bounds the words of one search.
const MaxSearchTerms = 32

// SearchTerms is text as the stores search for it: its words, lower case,
// in order and each once, without the words too common to tell messages
// apart (stopWords), at most MaxSearchTerms. A word is a run of letters and
// digits; anything else (quotes, operators of a full-text syntax) only
// separates words, so what a client types cannot reach a store's query
// syntax.
func SearchTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == MaxSearchTerms {
			break
		}
	}
	return out
}

// StopWord reports whether w (lower case) is one of the words too common
// to tell messages apart, which a search does not look for.
func StopWord(w string) bool { return stopWords[w] }

// stopWords are English words that nearly every message has: searching for
// them costs a walk of most of the index and tells nothing.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
		been before being below between both but by can could did do does doing down during each few for from
		further had has have having he her here hers herself him himself his how i if in into is it its itself
		just me more most my myself no nor not now of off on once only or other our ours ourselves out over own
		same she should so some such than that the their theirs them themselves then there these they this those
		through to too under until up very was we were what when where which while who whom why will with would
		you your yours yourself yourselves s t d ll m o re ve y don didn doesn isn wasn weren won wouldn couldn
		shouldn hasn haven hadn aren let lets tell told know remember please also ever`) {
		m[w] = true
	}
	return m
}()
