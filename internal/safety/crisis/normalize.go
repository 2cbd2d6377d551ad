package crisis

import (
	"strings"
	"unicode"
)

// token is one word of a message as the rules see it.
type token struct {
	s string
	// quoted: inside quotation marks, where the words are usually
	// someone else's (a lyric, a title, a line of a film).
	quoted bool
}

// boundary is the token that ends a sentence: gaps in patterns do not
// cross it, and "$" in a pattern matches it.
const boundary = "."

// rewrites maps a word as people type it to the words the rules are
// written in: contractions spelled out (with or without the apostrophe),
// chat spellings, common misspellings. An empty list drops the word:
// fillers and intensifiers, which only stretch the distance between a
// subject and its verb ("i just really want to die").
var rewrites = func() map[string][]string {
	m := map[string][]string{}
	add := func(to string, from ...string) {
		for _, f := range from {
			m[f] = strings.Fields(to)
		}
	}
	add("i am", "i'm", "im", "iam", "i`m")
	add("i have", "i've", "ive")
	add("i would", "i'd")
	add("i will", "i'll", "ill")
	add("do not", "don't", "dont", "dnt")
	add("does not", "doesn't", "doesnt")
	add("did not", "didn't", "didnt")
	add("can not", "can't", "cant", "cannot", "cnt")
	add("could not", "couldn't", "couldnt")
	add("will not", "won't", "wont")
	add("would not", "wouldn't", "wouldnt")
	add("should not", "shouldn't", "shouldnt")
	add("is not", "isn't", "isnt")
	add("was not", "wasn't", "wasnt")
	add("were not", "weren't", "werent")
	add("are not", "aren't", "arent")
	add("have not", "haven't", "havent")
	add("it is", "it's")
	add("that is", "that's", "thats")
	add("what is", "what's", "whats")
	add("there is", "there's", "theres")
	add("they would", "they'd")
	add("you are", "you're", "youre", "ur")
	add("you", "u", "ya")
	add("want to", "wanna", "wana", "wnna")
	add("going to", "gonna", "gona")
	add("got to", "gotta")
	add("trying to", "tryna")
	add("want", "wnat", "wamt", "wan")
	add("kill", "kil", "kll")
	add("killing", "kiling")
	add("myself", "myslef", "mysef", "myselfe", "mself", "meself", "myslf")
	add("suicidal", "suicdal", "sucidal", "suicidel", "suicidial", "sucidial", "suisidal", "suicidle", "suacidal")
	add("suicide", "sucide", "suicde", "suiside", "suicid", "sucid", "suecide")
	add("cutting", "cuting")
	add("die", "dye")
	add("dead", "ded")
	add("because", "cause", "cuz", "bc", "coz")
	add("self", "slef")
	add("sewerslide", "sewerslid", "sewer-slide")
	add("nobody", "noone")
	add("anymore", "any-more", "nemore", "anymroe", "anymor", "nymore", "enymore")
	add("be", "b")
	add("life", "lyfe", "lif", "lfe")
	add("going", "goin", "gong")
	add("tonight", "tonite", "2nite", "tonigt")
	add("this", "ths", "dis")
	add("nobody", "nobdy", "nobady")
	add("want", "wnt")
	add("alive", "alyve", "aliv")
	add("everyone", "evryone", "every1")
	add("yourself", "urself", "yourslef")
	// Fillers: dropped.
	add("", "just", "really", "rly", "honestly", "seriously", "actually", "literally", "truly", "genuinely",
		"fucking", "fuckin", "fking", "freaking", "frickin", "kinda", "sorta", "totally", "definitely", "simply",
		"even", "so", "very", "fr", "tbh", "ngl", "lol", "lmao", "rn", "tho", "pretty", "quite", "still",
		"like", "um", "uh", "hmm", "ok", "okay", "well", "basically", "lowkey", "highkey", "legit", "deadass",
		"srsly", "sometimes", "often", "always")
	return m
}()

// leet maps digits and symbols that stand for letters inside a word
// ("su1cide", "k!ll", "d13").
var leet = map[rune]rune{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's', '!': 'i'}

// obfuscated are the words people mask with asterisks ("k*ll",
// "s**cide"); a masked word that fits one of them becomes it.
var obfuscated = []string{"kill", "killing", "myself", "suicide", "suicidal", "die", "dead", "self", "harm", "cutting"}

// tokenize lower-cases text and splits it into the words the rules match:
// contractions spelled out, misspellings and leetspeak mended, letters
// repeated three times or more kept once ("dieeee"), sentence ends as
// boundary tokens.
func tokenize(text string) []token {
	toks := make([]token, 0, len(text)/4+1)
	var word []rune
	quoted := false
	flush := func() {
		if len(word) == 0 {
			return
		}
		w := cleanWord(word)
		word = word[:0]
		if w == "" {
			return
		}
		if rw, ok := rewrites[w]; ok {
			for _, r := range rw {
				toks = append(toks, token{s: r, quoted: quoted})
			}
			return
		}
		// Other contractions: the word, then what its ending stands
		// for ("she's" is "she", "they're" is "they are").
		if stem, rest, ok := strings.Cut(w, "'"); ok && stem != "" {
			toks = append(toks, token{s: stem, quoted: quoted})
			switch rest {
			case "re":
				w = "are"
			case "ve":
				w = "have"
			case "ll":
				w = "will"
			case "d":
				w = "would"
			case "t":
				w = "not"
			default:
				return
			}
		}
		// "2" for "to" after the verbs it follows in chat ("i want 2 die").
		if w == "2" && len(toks) > 0 {
			switch toks[len(toks)-1].s {
			case "want", "going", "need", "ready", "have", "about", "trying", "wants":
				w = "to"
			}
		}
		toks = append(toks, token{s: w, quoted: quoted})
	}
	end := func() {
		flush()
		if len(toks) > 0 && toks[len(toks)-1].s != boundary {
			toks = append(toks, token{s: boundary})
		}
	}
	runes := []rune(text)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		prevLetter := i > 0 && isWordRune(runes[i-1])
		nextLetter := i+1 < len(runes) && isWordRune(runes[i+1])
		switch {
		case r == '\'' || r == '\u2019' || r == '\u2018' || r == '`':
			if prevLetter && nextLetter {
				word = append(word, '\'') // an apostrophe inside a word
				continue
			}
			// A single quotation mark opens before a word and closes
			// after one; any other is a stray apostrophe ("dogs' toys").
			if !prevLetter && nextLetter && !quoted && closesLater(runes, i) {
				flush()
				quoted = true
			} else if prevLetter && !nextLetter && quoted {
				flush()
				quoted = false
			} else {
				flush()
			}
		case r == '"' || r == '\u201c' || r == '\u201d' || r == '\u00ab' || r == '\u00bb':
			flush()
			quoted = !quoted
		case r == '*' && (prevLetter || len(word) > 0 && word[len(word)-1] == '*') && maskContinues(runes, i):
			word = append(word, r)
		case (r == '!' || r == '@' || r == '$') && prevLetter && nextLetter:
			word = append(word, r)
		case r == '@' || r == '$':
			if nextLetter {
				word = append(word, r)
			} else {
				flush()
			}
		case isWordRune(r):
			word = append(word, unicode.ToLower(r))
		case r == '.' || r == '!' || r == '?' || r == ';' || r == ':' || r == '\n' || r == '\u2026':
			end()
		default:
			flush()
		}
	}
	flush()
	// Phrases of other languages, as tokens of their own (languages.go).
	return languageCues(text, joinMySelf(toks))
}

// joinMySelf writes "my self" as "myself" ("kill my self"), except before
// the words that make "self" a noun of its own ("my self harm").
func joinMySelf(toks []token) []token {
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		if toks[i].s == "my" && i+1 < len(toks) && toks[i+1].s == "self" {
			next := ""
			if i+2 < len(toks) {
				next = toks[i+2].s
			}
			switch next {
			case "harm", "harming", "injury", "esteem", "worth", "care", "confidence", "image":
			default:
				out = append(out, token{s: "myself", quoted: toks[i].quoted})
				i++
				continue
			}
		}
		out = append(out, toks[i])
	}
	return out
}

// maskContinues reports whether the asterisks from i are followed by a
// letter, so that they mask letters of a word ("s**cide") rather than
// mark emphasis after it ("*sigh*").
func maskContinues(runes []rune, i int) bool {
	for ; i < len(runes) && runes[i] == '*'; i++ {
	}
	return i < len(runes) && isWordRune(runes[i])
}

// closesLater reports whether a single quotation mark at i has a closing
// one after a word later in the text, so that a lone apostrophe does not
// mark the rest of a message as quoted.
func closesLater(runes []rune, i int) bool {
	for j := i + 2; j < len(runes); j++ {
		r := runes[j]
		if (r == '\'' || r == '\u2019') && isWordRune(runes[j-1]) && (j+1 == len(runes) || !isWordRune(runes[j+1])) {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// cleanWord mends one word: leetspeak in words with letters, masked
// letters, letters repeated three times or more.
func cleanWord(w []rune) string {
	letters, others := 0, 0
	for _, r := range w {
		if unicode.IsLetter(r) {
			letters++
		} else if r != '\'' {
			others++
		}
	}
	masked := false
	if letters > 0 && others > 0 && !isOrdinal(w) {
		for i, r := range w {
			if l, ok := leet[r]; ok {
				w[i] = l
			} else if r == '*' {
				masked = true
			}
		}
	}
	// Keep one of a run of three or more of the same letter ("dieeee",
	// "sooo"); doubled letters are spelling and stay.
	out := make([]rune, 0, len(w))
	for i := 0; i < len(w); {
		j := i
		for j < len(w) && w[j] == w[i] {
			j++
		}
		if j-i >= 3 {
			out = append(out, w[i])
		} else {
			out = append(out, w[i:j]...)
		}
		i = j
	}
	s := string(out)
	if masked {
		return unmask(s)
	}
	return s
}

// unmask returns the word a masked word stands for, or the word as it is.
func unmask(s string) string {
	for _, target := range obfuscated {
		if maskFits(s, target) {
			return target
		}
	}
	return s
}

// maskFits reports whether s, where each run of asterisks stands for one
// to three letters, can spell target.
func maskFits(s, target string) bool {
	if s == "" {
		return target == ""
	}
	if s[0] == '*' {
		stars := 1
		for stars < len(s) && s[stars] == '*' {
			stars++
		}
		for n := 1; n <= 3 && n <= len(target); n++ {
			if maskFits(s[stars:], target[n:]) {
				return true
			}
		}
		return false
	}
	return target != "" && s[0] == target[0] && maskFits(s[1:], target[1:])
}

// isOrdinal reports whether w is a number with an ordinal ending
// ("14th", "2nd"), which is no leetspeak.
func isOrdinal(w []rune) bool {
	i := 0
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	switch string(w[i:]) {
	case "st", "nd", "rd", "th":
		return true
	}
	return false
}
