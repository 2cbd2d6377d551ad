package main

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// The baseline: plain BM25 over single messages (k1 1.2, b 0.75), words
// lower-cased, without stop words, unstemmed, each result with the
// message before and after it in its session as context. It is what the
// held-back benchmark's figures were measured with, so that its score on
// this set tells how hard the set is next to that one.

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// words returns text's words as the baseline indexes them: runs of letters
// and digits, lower case, without stop words.
func words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// bm25 is the index of one persona's messages.
type bm25 struct {
	ids []string
	// session[i] is the index of message i's session; context stays
	// within it.
	session []int
	tf      []map[string]int
	length  []int
	df      map[string]int
	avg     float64
}

// newBM25 indexes a persona's sessions.
func newBM25(p Persona) *bm25 {
	ix := &bm25{df: map[string]int{}}
	total := 0
	for si, s := range p.Sessions {
		for _, m := range s.Messages {
			tf := map[string]int{}
			ws := words(m.Content)
			for _, w := range ws {
				tf[w]++
			}
			for w := range tf {
				ix.df[w]++
			}
			ix.ids = append(ix.ids, m.ID)
			ix.session = append(ix.session, si)
			ix.tf = append(ix.tf, tf)
			ix.length = append(ix.length, len(ws))
			total += len(ws)
		}
	}
	if len(ix.ids) > 0 {
		ix.avg = float64(total) / float64(len(ix.ids))
	}
	return ix
}

// search returns the best limit messages for query, each with its
// neighbours in its session as context; messages that share no word with
// the query are not results.
func (ix *bm25) search(query string, limit int) []hit {
	terms := slices.Compact(slices.Sorted(slices.Values(words(query))))
	n := float64(len(ix.ids))
	type scored struct {
		i     int
		score float64
	}
	var all []scored
	for i, tf := range ix.tf {
		s := 0.0
		for _, t := range terms {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(ix.length[i])/ix.avg))
		}
		if s > 0 {
			all = append(all, scored{i, s})
		}
	}
	// Best first; ties in the order of the messages, so that the
	// baseline is deterministic.
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	var hits []hit
	for _, s := range all[:min(limit, len(all))] {
		h := hit{id: ix.ids[s.i]}
		for _, j := range []int{s.i - 1, s.i + 1} {
			if j >= 0 && j < len(ix.ids) && ix.session[j] == ix.session[s.i] {
				h.context = append(h.context, ix.ids[j])
			}
		}
		hits = append(hits, h)
	}
	return hits
}

// stopWords is NLTK's English list, the one most BM25 baselines use.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you you're you've you'll you'd your yours
		yourself yourselves he him his himself she she's her hers herself it it's its itself they them their theirs
		themselves what which who whom this that that'll these those am is are was were be been being have has had
		having do does did doing a an the and but if or because as until while of at by for with about against
		between into through during before after above below to from up down in out on off over under again further
		then once here there when where why how all any both each few more most other some such no nor not only own
		same so than too very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
		couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't
		mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't`) {
		m[w] = true
	}
	return m
}()
