package crisis

import (
	"fmt"
	"strconv"
	"strings"
)

// A pattern is a sequence of elements over tokens, written as words
// separated by spaces:
//
//	a|b|c    one token, any of these
//	a|b?     the same, optional
//	*N       up to N tokens of any kind, within the sentence and not
//	         across a word that changes who is spoken of (gapStop)
//	$        the end of a sentence or of the message; also as one of
//	         the words of an alternation ("again|$")
//	!a|b     the next token, if any, is none of these (consumes nothing)
//	@name    a word class of classes, expanded before parsing
//	#        among the words of an alternation: a number of 10 or more
type element struct {
	words map[string]bool
	opt   bool
	gap   int
	end   bool
	not   map[string]bool
}

type pattern []element

// gapStop are words a gap does not cross: with them between "i" and a
// verb, the verb is someone else's ("i told my friend who wants to die"),
// or a new clause begins ("i would never, but ...").
var gapStop = map[string]bool{
	boundary: true, "but": true, "who": true, "he": true, "she": true, "they": true, "him": true,
	"her": true, "someone": true, "somebody": true, "friend": true, "friends": true,
	"people": true, "character": true, "that": true, "when": true, "if": true, "because": true,
	"and": true, "or": true, "you": true, "we": true,
}

// classes are word lists that patterns share.
var classes = map[string]string{
	"@me":       "myself|meself|me",
	"@kin":      "mom|mum|mother|dad|father|parents|family|kids|children|son|daughter|sister|brother|wife|husband|partner|boyfriend|girlfriend|friends|everyone|grandma|grandpa",
	"@pills":    "pills|pill|tablets|meds|medication|medications|medicine|paracetamol|tylenol|acetaminophen|ibuprofen|aspirin|insulin|xanax|sleeping|benadryl|antidepressants|painkillers|opioids|oxy",
	"@high":     "bridge|building|roof|rooftop|cliff|balcony|overpass|tower|window|ledge|parking|skyscraper|tracks",
	"@bodypart": "arm|arms|wrist|wrists|thigh|thighs|leg|legs|stomach|skin|hip|hips|ankle|ankles|chest",
	"@gone":     "gone|dead|away",
}

// compile parses a pattern; it is called on the rule table, whose patterns
// are constants, so an error is a bug in the table.
func compile(src string) (pattern, error) {
	var p pattern
	for _, f := range strings.Fields(src) {
		var e element
		switch {
		case f == "$":
			e.end = true
		case strings.HasPrefix(f, "*"):
			n, err := strconv.Atoi(f[1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("pattern %q: bad gap %q", src, f)
			}
			e.gap = n
		case strings.HasPrefix(f, "!"):
			e.not = wordSet(expand(f[1:]))
		default:
			if strings.HasSuffix(f, "?") {
				e.opt = true
				f = strings.TrimSuffix(f, "?")
			}
			e.words = wordSet(expand(f))
		}
		p = append(p, e)
	}
	if len(p) == 0 || p[0].words == nil || p[0].opt {
		return nil, fmt.Errorf("pattern %q: must begin with a required word", src)
	}
	return p, nil
}

// expand replaces the classes in an alternation by their words.
func expand(alts string) string {
	parts := strings.Split(alts, "|")
	for i, a := range parts {
		if c, ok := classes[a]; ok {
			parts[i] = c
		} else if strings.HasPrefix(a, "@") {
			panic("crisis: unknown class " + a)
		}
	}
	return strings.Join(parts, "|")
}

func wordSet(alts string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Split(alts, "|") {
		if w != "" {
			m[w] = true
		}
	}
	return m
}

// match reports whether p matches toks from i, and where the match ends
// (exclusive).
func (p pattern) match(toks []token, i int) (int, bool) {
	return p.matchFrom(0, toks, i)
}

func (p pattern) matchFrom(k int, toks []token, i int) (int, bool) {
	if k == len(p) {
		return i, true
	}
	e := p[k]
	switch {
	case e.end:
		if i == len(toks) || toks[i].s == boundary {
			return p.matchFrom(k+1, toks, i)
		}
		return 0, false
	case e.not != nil:
		if i < len(toks) && e.not[toks[i].s] {
			return 0, false
		}
		return p.matchFrom(k+1, toks, i)
	case e.gap > 0:
		for n := 0; n <= e.gap; n++ {
			if end, ok := p.matchFrom(k+1, toks, i+n); ok {
				return end, true
			}
			if i+n >= len(toks) || gapStop[toks[i+n].s] {
				break
			}
		}
		return 0, false
	}
	// "$" among the words: the end of the sentence also fits, as nothing.
	if e.words["$"] && (i == len(toks) || toks[i].s == boundary) {
		if end, ok := p.matchFrom(k+1, toks, i); ok {
			return end, true
		}
	}
	if i < len(toks) && (e.words[toks[i].s] || e.words["#"] && isCount(toks[i].s)) {
		if end, ok := p.matchFrom(k+1, toks, i+1); ok {
			return end, true
		}
	}
	if e.opt {
		return p.matchFrom(k+1, toks, i)
	}
	return 0, false
}

// isCount reports whether s is a number of two digits or more: a count
// of pills that is no dose.
func isCount(s string) bool {
	if len(s) < 2 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
