// Package pii hides personal data in text that is stored and logged:
// e-mail addresses, phone numbers and payment card numbers.
//
// It scans by hand rather than with regular expressions: Redact runs on
// every stored message when enabled, and one pass over the bytes, which
// allocates only when it replaces something, costs a fraction of what a
// set of regular expressions does (BenchmarkRedact). What counts as a
// phone number is a heuristic, tilted towards hiding: see Redact.
package pii

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Counts is how many of each kind Redact replaced.
type Counts struct{ Email, Phone, Card int }

// Total is the number of replacements.
func (c Counts) Total() int { return c.Email + c.Phone + c.Card }

// The replacements hold no digit and no '@': Redact finds nothing in them,
// so redacting twice is redacting once.
const (
	emailToken = "[email]"
	phoneToken = "[phone]"
	cardToken  = "[card]"
)

// Redact replaces e-mail addresses with "[email]", phone numbers with
// "[phone]" and payment card numbers with "[card]", and counts them.
//
// A card number is 13 to 19 digits, bare or in groups (of three or more
// but the last) separated by spaces or dashes, that passes the Luhn check.
// A phone number is a run of digit groups (separated by a space, a dash, a
// dot, or in parentheses) of 9 to 15 digits: international ones (+44 20
// 7946 0958, +1-202-555-0143), American ones ((202) 555-0143,
// 202.555.0143), and national ones in groups (020 7946 0958, 06 12 34 56
// 78, 612 345 678); bare, only after a '+', 10 or 11 digits after a
// leading 0, or 10 digits shaped as an American number (2025550143). A run
// is left alone when it holds a slash, a colon or a comma (dates, times,
// prices); follows a letter, a digit, a currency sign or one of _#./-+@%);
// precedes a letter or one of _%@+(; looks like an IPv4 address, a
// decimal, a list of years or a number in groups of thousands; or has a
// group of one digit after the first (but "(0)"). Numbers side by side,
// separated by spaces only, are found one by one.
func Redact(text string) (string, Counts) {
	var c Counts
	text = redactEmails(text, &c)
	text = redactNumbers(text, &c)
	return text, c
}

// redactEmails replaces local@domain.tld.
func redactEmails(s string, c *Counts) string {
	at := strings.IndexByte(s, '@')
	if at < 0 {
		return s
	}
	var b strings.Builder
	last := 0 // s[:last] is written or replaced
	for ; at >= 0; at = nextByte(s, '@', at+1) {
		start := at
		for start > last && localChar(s[start-1]) {
			start--
		}
		for start < at && s[start] == '.' {
			start++
		}
		end := at + 1
		for end < len(s) && domainChar(s[end]) {
			end++
		}
		for end > at+1 && (s[end-1] == '.' || s[end-1] == '-') {
			end--
		}
		if start == at || !domain(s[at+1:end]) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:start])
		b.WriteString(emailToken)
		last = end
		c.Email++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func nextByte(s string, c byte, from int) int {
	if from >= len(s) {
		return -1
	}
	i := strings.IndexByte(s[from:], c)
	if i < 0 {
		return -1
	}
	return from + i
}

func localChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func domainChar(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// domain reports whether d is host names joined by dots ending in a
// top-level domain of two letters or more.
func domain(d string) bool {
	dot := strings.LastIndexByte(d, '.')
	if dot <= 0 || len(d)-dot-1 < 2 {
		return false
	}
	for i := dot + 1; i < len(d); i++ {
		if !isLetter(d[i]) {
			return false
		}
	}
	for label := range strings.SplitSeq(d[:dot], ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isAlnum(c byte) bool  { return isDigit(c) || isLetter(c) }

// Separator kinds of a run of digit groups.
const (
	sepSpace = 1 << iota
	sepDash
	sepDot
	sepParen
	sepOther // '/', ':' or ',': a date, a time, a price
)

// run is a run of digit groups.
type run struct {
	start, end int
	plus       bool
	digits     [19]byte // the first 19 digits
	n          int      // how many digits, all told
	groups     [8]int8  // the first 8 groups' lengths
	ngroups    int
	seps       int
	trunk      int // the group that is a national prefix in parentheses, "(0)"; 0 when none
}

func (r *run) digit(c byte) {
	if r.n < len(r.digits) {
		r.digits[r.n] = c
	}
	r.n++
	if r.ngroups <= len(r.groups) && r.groups[r.ngroups-1] < 127 {
		r.groups[r.ngroups-1]++
	}
}

// redactNumbers replaces phone and card numbers.
func redactNumbers(s string, c *Counts) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		r, ok := scan(s, i)
		token := ""
		if ok {
			token = r.kind(c)
		}
		if token == "" && ok && r.seps&sepSpace != 0 && r.seps&sepOther == 0 && r.n > 15 && r.n <= maxSplit && !r.cardShaped() {
			// Numbers side by side, "202-555-0143 202-555-0144", too long
			// to be one: the longest head cut at a space that is one, or
			// the run from its second group on. A run in groups of four
			// is a card number, or nothing.
			var next int
			if r, token, next = head(s, i, r.end, c); token == "" {
				i = next
				continue
			}
		}
		if token != "" {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:r.start])
			b.WriteString(token)
			last = r.end
		}
		i = r.end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// maxSplit bounds the digits of a run that head splits: it rescans the
// rest of a run from each of its groups, which must stay cheap.
const maxSplit = 64

// head finds the longest head of the run s[i:end] cut at a space that is a
// number to hide, with its token counted in c; when there is none, next is
// where the run's second group begins.
func head(s string, i, end int, c *Counts) (r run, token string, next int) {
	// The cuts, and how many digits come before each.
	var cuts [20]int
	n, digits := 0, 0
	for k := i; k < end && n < len(cuts) && digits <= 19; k++ {
		switch {
		case isDigit(s[k]):
			digits++
		case s[k] == ' ' && digits <= 19 && (s[k-1] != '-' && (k+1 >= end || s[k+1] != '-')):
			cuts[n] = k
			n++
		}
	}
	for _, cut := range slices.Backward(cuts[:n]) {
		if r, ok := scan(s[:cut], i); ok {
			if token := r.kind(c); token != "" {
				return r, token, 0
			}
		}
	}
	if n == 0 {
		return run{}, "", end
	}
	return run{}, "", cuts[0] + 1
}

// cardShaped reports whether r is in groups of four but the last, as card
// numbers are written.
func (r *run) cardShaped() bool {
	if r.ngroups < 2 || r.ngroups > len(r.groups) {
		return false
	}
	for _, g := range r.groups[:r.ngroups-1] {
		if g != 4 {
			return false
		}
	}
	return true
}

// kind is the token that replaces r, counted in c, or "" when r is not a
// number to hide.
func (r *run) kind(c *Counts) string {
	switch {
	case r.card():
		c.Card++
		return cardToken
	case r.phone():
		c.Phone++
		return phoneToken
	}
	return ""
}

// scan reads the run of digit groups that begins with the digit at i: it
// takes in a '+' just before, and a '(' when the group closes. ok is false
// when the run cannot be a number to hide because of what surrounds it;
// r.end is where to scan on from either way.
func scan(s string, i int) (r run, ok bool) {
	r.start = i
	j := i
	if i > 0 && s[i-1] == '(' && closes(s, i) {
		r.start--
		r.seps |= sepParen
	}
	if r.start > 0 && s[r.start-1] == '+' {
		r.start--
		r.plus = true
	}
	ok = boundaryBefore(s, r.start)
	paren := r.seps&sepParen != 0
	for {
		// A group: digits, or digits in parentheses.
		r.ngroups++
		for j < len(s) && isDigit(s[j]) {
			r.digit(s[j])
			j++
		}
		if paren {
			if r.ngroups > 1 && s[j-2:j] == "(0" {
				r.trunk = r.ngroups - 1
			}
			j++ // the ')' closes checked
			paren = false
			if j < len(s) && isDigit(s[j]) {
				continue // "(0)20"
			}
		}
		// A separator and the next group, or the end of the run.
		k, sep := j, 0
		switch {
		case k+2 < len(s) && s[k] == ' ' && s[k+1] == '-' && s[k+2] == ' ':
			k, sep = k+3, sepDash // "202 - 555 - 0143"
		case k < len(s) && s[k] == ' ':
			k, sep = k+1, sepSpace
		case k < len(s) && s[k] == '-':
			k, sep = k+1, sepDash
		case k < len(s) && s[k] == '.':
			k, sep = k+1, sepDot
		case k < len(s) && (s[k] == '/' || s[k] == ':' || s[k] == ','):
			k, sep = k+1, sepOther
		}
		if sep == 0 || k >= len(s) {
			break
		}
		if s[k] == '(' && (sep == sepSpace || sep == sepDash) && k+1 < len(s) && isDigit(s[k+1]) && closes(s, k+1) {
			r.seps |= sep | sepParen
			j, paren = k+1, true
			continue
		}
		if !isDigit(s[k]) {
			break
		}
		r.seps |= sep
		j = k
	}
	r.end = j
	return r, ok && boundaryAfter(s, j)
}

// closes reports whether the digits at i are followed by ')'.
func closes(s string, i int) bool {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i < len(s) && s[i] == ')'
}

// boundaryBefore reports whether a number may begin at i: not inside a
// word, an amount, an order number, a version or a path.
func boundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	p, _ := utf8.DecodeLastRuneInString(s[:i])
	if unicode.IsLetter(p) || unicode.IsDigit(p) || unicode.Is(unicode.Sc, p) {
		return false
	}
	return !strings.ContainsRune("_#./-+@%)", p)
}

// boundaryAfter reports whether a number may end at i. A '+' or '(' right
// after it could begin another number, which boundaryBefore refuses for
// following a digit or ')': refusing both, rather than the second only
// until the first is replaced, keeps Redact idempotent.
func boundaryAfter(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	n, _ := utf8.DecodeRuneInString(s[i:])
	return !unicode.IsLetter(n) && !unicode.IsDigit(n) && !strings.ContainsRune("_%@+(", n)
}

// card reports whether r is a payment card number.
func (r *run) card() bool {
	if r.plus || r.seps&^(sepSpace|sepDash) != 0 || r.n < 13 || r.n > 19 || r.ngroups > len(r.groups) {
		return false
	}
	if r.seps == sepSpace|sepDash {
		return false
	}
	for _, g := range r.groups[:r.ngroups-1] {
		if g < 3 {
			return false
		}
	}
	return luhn(r.digits[:r.n])
}

// luhn reports whether digits pass the Luhn check.
func luhn(digits []byte) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// phone reports whether r is a phone number.
func (r *run) phone() bool {
	if r.seps&sepOther != 0 || r.n < 9 || r.n > 15 || r.ngroups > 6 {
		return false
	}
	g := r.groups[:r.ngroups]
	if r.ngroups == 1 {
		switch {
		case r.plus:
			return r.n >= 8
		case r.digits[0] == '0':
			return r.n == 10 || r.n == 11
		default:
			// An American number: area code and exchange begin with 2-9.
			return r.n == 10 && r.digits[0] >= '2' && r.digits[3] >= '2'
		}
	}
	for k, n := range g[1:] {
		if n < 2 && k+1 != r.trunk {
			return false
		}
	}
	if r.seps == sepDot && (r.ngroups < 3 || r.ngroups == 4 && g[0] <= 3 && g[1] <= 3 && g[2] <= 3 && g[3] <= 3) {
		// A decimal, a version, an IPv4 address.
		return false
	}
	if !r.plus && r.ngroups >= 4 && (r.seps == sepSpace || r.seps == sepDot) && g[0] <= 3 {
		thousands := true
		for _, n := range g[1:] {
			thousands = thousands && n == 3
		}
		if thousands {
			return false
		}
	}
	if !r.plus && r.seps == sepSpace && years(r.digits[:min(r.n, len(r.digits))], g) {
		return false
	}
	return true
}

// years reports whether groups of 4 digits are all years of this century
// or the last.
func years(digits []byte, groups []int8) bool {
	at := 0
	for _, n := range groups {
		if n != 4 {
			return false
		}
		y := digits[at : at+4]
		if !(y[0] == '1' && y[1] == '9' || y[0] == '2' && y[1] == '0') {
			return false
		}
		at += 4
	}
	return true
}
