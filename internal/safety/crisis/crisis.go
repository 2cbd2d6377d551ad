// Package crisis detects suicidal ideation and self-harm in what a user
// writes, offline and without a model: weighted word patterns over a
// normalised message (contractions spelled out, chat spellings,
// misspellings and leetspeak mended), with negation, quotation and
// talk about other people or about works taken into account.
//
// It prefers recall where a message speaks in the first person of
// distress: a missed crisis costs more than a referral shown once too
// often. A negated statement ("i would never kill myself", "i am not
// suicidal") does not trip on its own; anything else in the same message
// still does ("i am not suicidal but i wish i could not wake up").
package crisis

import "strings"

// Kinds of finding.
const (
	KindSuicidalIdeation = "suicidal-ideation"
	KindSelfHarm         = "self-harm"
)

// Finding is what Detect found: Kind "" when nothing.
type Finding struct {
	Kind string // KindSuicidalIdeation or KindSelfHarm, "" when none
	Cue  string // the name of the strongest rule that matched, never the user's text
}

// Detected reports whether the message is in crisis.
func (f Finding) Detected() bool { return f.Kind != "" }

// threshold is the weight of the cues of one kind at which a message
// trips.
const threshold = 0.999

// Damping of a cue that is probably someone else's words or situation,
// or the writer's own past with nothing of it now.
const (
	quotedFactor = 0.3
	aboutFactor  = 0.4
	pastFactor   = 0.4
	jokeFactor   = 0.5
	cancelFactor = 0.5
)

// dampedThreshold is the classifier's threshold for a message the rules
// damp (denied, past, someone else's, a joke); cancelThreshold for a
// means with a harmless use beside it and nothing darker.
const (
	dampedThreshold = 0.85
	cancelThreshold = 0.95
)

// classifierSignals are the categories of meaning of a crisis; the
// classifier needs to be unsignalledThreshold sure of a message with none.
const (
	classifierSignals    = catDeath | catMeans | catPlace | catFinal | catBurden | catDistress | catSHAct | catSHWeak
	unsignalledThreshold = 0.70
)

// Detector finds crisis in messages. It is safe for concurrent use: its
// tables are built by New and only read after.
type Detector struct {
	sem   sem
	model *model
	rules []compiled
	// first indexes the rules by the words their patterns can begin with.
	first map[string][]int
}

type compiled struct {
	rule
	p      pattern
	neg    bool
	open   bool
	unless map[string]bool
}

// New builds a Detector from the rule table. It panics when a pattern of
// the table does not parse, which the package's tests rule out.
func New() *Detector {
	d, err := NewWithModel(modelBin)
	if err != nil {
		panic("crisis: the embedded model: " + err.Error())
	}
	return d
}

// NewWithModel is New with another classifier (Train's), for tools that
// measure one; nil data leaves the classifier out (the rules alone).
func NewWithModel(data []byte) (*Detector, error) {
	d := &Detector{first: map[string][]int{}, sem: newSem()}
	if data != nil {
		m, err := loadModel(data)
		if err != nil {
			return nil, err
		}
		d.model = m
	}
	for _, r := range rules {
		p, err := compile(r.pat)
		if err != nil {
			panic("crisis: " + err.Error())
		}
		c := compiled{rule: r, p: p, unless: map[string]bool{}}
		for _, f := range strings.Fields(r.flags) {
			switch f {
			case "neg":
				c.neg = true
			case "open":
				c.open = true
			default:
				panic("crisis: unknown flag " + f + " in pattern " + r.pat)
			}
		}
		for _, w := range strings.Fields(r.unless) {
			c.unless[w] = true
		}
		d.rules = append(d.rules, c)
		for w := range p[0].words {
			d.first[w] = append(d.first[w], len(d.rules)-1)
		}
	}
	return d, nil
}

// negators are the words that deny the cue after them.
var negators = map[string]bool{"not": true, "never": true, "no": true, "nor": true}

// firstPerson are the words of the writer about themselves.
var firstPerson = map[string]bool{"i": true, "me": true, "myself": true}

// othersNear are the words that, just before a pattern that names no one,
// make its subject someone else ("my friend says she wants to die").
var othersNear = map[string]bool{
	"he": true, "she": true, "they": true, "him": true, "her": true, "friend": true, "someone": true,
	"somebody": true, "people": true, "character": true, "who": true, "son": true, "daughter": true,
}

// aboutOthers are the words of a message about someone else or about a
// work: a film, a book, a song, the news, a lesson, a statistic.
var aboutOthers = map[string]bool{
	"friend": true, "friends": true, "sister": true, "brother": true, "mom": true, "mum": true, "dad": true,
	"mother": true, "father": true, "son": true, "daughter": true, "cousin": true, "uncle": true, "aunt": true,
	"coworker": true, "colleague": true, "student": true, "students": true, "patient": true, "patients": true,
	"he": true, "she": true, "they": true, "someone": true, "somebody": true, "people": true, "character": true,
	"characters": true, "movie": true, "film": true, "show": true, "series": true, "episode": true, "book": true,
	"novel": true, "story": true, "song": true, "lyrics": true, "lyric": true, "poem": true, "poet": true,
	"essay": true, "article": true, "documentary": true, "news": true, "statistics": true, "rates": true,
	"rate": true, "history": true, "research": true, "study": true, "awareness": true, "prevention": true,
	"plot": true, "author": true, "writer": true, "teenagers": true, "teens": true, "men": true, "women": true,
}

// hit is one rule's match, weighed, and where it is.
type hit struct {
	rule       int
	w          float64
	start, end int
}

// Detect reports whether text speaks of suicidal ideation or self-harm,
// and which.
func (d *Detector) Detect(text string) Finding {
	toks := tokenize(text)
	var hits [8]hit
	found := hits[:0]
	about := false
	for _, t := range toks {
		if aboutOthers[t.s] {
			about = true
			break
		}
	}
	r := d.sem.read(toks)
	past := isPast(toks) || r.isOver()
	joking := isJoking(toks)
	for i, t := range toks {
		for _, ri := range d.first[t.s] {
			if seen(found, ri) {
				continue
			}
			c := &d.rules[ri]
			end, ok := c.p.match(toks, i)
			if !ok || c.cancelled(toks, i, end) || negatedAt(toks, i) {
				continue
			}
			w := c.w
			if allQuoted(toks[i:end]) {
				w *= quotedFactor
			}
			if c.open && (about && !sentenceHasFirstPerson(toks, i) || othersBefore(toks, i)) {
				w *= aboutFactor
			}
			if joking {
				w *= jokeFactor
			}
			if past {
				w *= pastFactor
			}
			found = add(found, hit{ri, w, i, end}, d.rules)
		}
	}
	si, sh := r.score()
	// A blade or a wrist in an act of self-harm is no plan to die.
	if sh.w >= 1 && si.cue == "means-intent" && r.msg&catDeath == 0 {
		si.w = 0
	}
	damp := 1.0
	if r.msg&catDeny != 0 {
		damp = 0
	}
	if about && !r.selfNearSignal() {
		damp *= aboutFactor
	}
	if past {
		damp *= pastFactor
	}
	if joking {
		damp *= jokeFactor
	}
	si.w *= damp
	sh.w *= damp
	// A harmless use of a means (a knot in a rope, a game) or a trip
	// makes a means or a farewell weigh less; it does not touch the other
	// composites.
	if r.msg&catCancel != 0 && (strings.HasPrefix(si.cue, "means") || si.cue == "farewell") {
		si.w *= cancelFactor
	}
	// An accident does not cancel an act done to feel or to punish.
	if r.msg&catAccident != 0 && !r.shMod {
		sh.w *= cancelFactor
	}
	f := d.decide(found, [2]composite{si, sh})
	if d.model == nil {
		return f
	}
	var buf [256]uint32
	feats := features(toks, r, buf[:0])
	p := d.model.crisis.prob(feats)
	// The rules and the classifier check each other: a rule's trip
	// stands unless the classifier all but rules it out (a rule's words
	// in a sense the training sets show harmless: a cron job that died, a
	// friend's story); what the rules do not know, the classifier may
	// trip, surer for a message the rules read as denied, past, someone
	// else's or a joke.
	if f.Detected() {
		if p < d.model.veto {
			return Finding{}
		}
		return f
	}
	th := d.model.threshold
	if damp < 1 {
		th = max(th, d.model.damped)
	}
	if r.msg&classifierSignals == 0 {
		// Nothing of a crisis the rules can name (a death, a means or a
		// place, a farewell, a burden, despair, self-harm): the
		// classifier's own words must be much surer.
		th = max(th, d.model.unsignalled)
	}
	darker := r.msg&(catDeath|catDistress|catBurden|catFinal) != 0
	switch {
	case r.msg&catAccident != 0 && !r.shMod && !darker:
		// A hurt that happened (shaving, cooking), told with nothing
		// darker and no purpose: the classifier's words are the rules'.
		return f
	case r.msg&catCancel != 0 && !darker && r.msg&catSHAct == 0:
		th = max(th, cancelThreshold)
	}
	if p < th {
		return f
	}
	if d.model.selfHarm.prob(feats) >= 0.5 {
		return Finding{Kind: KindSelfHarm, Cue: "classifier"}
	}
	return Finding{Kind: KindSuicidalIdeation, Cue: "classifier"}
}

// decide adds the weights per kind; the heavier kind that reaches the
// threshold wins, suicidal ideation on a tie, named by its strongest cue.
func (d *Detector) decide(found []hit, comp [2]composite) Finding {
	var sum [2]float64
	var best [2]hit

	for _, h := range found {
		k := 0
		if d.rules[h.rule].kind == KindSelfHarm {
			k = 1
		}
		sum[k] += h.w
		if h.w > best[k].w {
			best[k] = h
		}
	}
	// A composite and the rules read the same words: the stronger
	// counts in full, the other in half.
	for k := range sum {
		sum[k] = max(sum[k], comp[k].w) + min(sum[k], comp[k].w)/2
	}
	k := 0
	if sum[1] > sum[0] {
		k = 1
	}
	if sum[k] < threshold {
		return Finding{}
	}
	if best[k].w < comp[k].w {
		return Finding{Kind: comp[k].kind, Cue: comp[k].cue}
	}
	r := d.rules[best[k].rule]
	return Finding{Kind: r.kind, Cue: r.cue}
}

// add adds h to found, unless it holds or is held by a hit of the same
// kind: a phrase counts once, as the heavier of the rules that read it,
// so that two readings of it ("i want to die", "want to die") do not add
// up.
func add(found []hit, h hit, rules []compiled) []hit {
	for i, f := range found {
		nested := f.start <= h.start && h.end <= f.end || h.start <= f.start && f.end <= h.end
		if rules[f.rule].kind == rules[h.rule].kind && nested {
			if h.w > f.w {
				found[i] = h
			}
			return found
		}
	}
	return append(found, h)
}

func seen(found []hit, ri int) bool {
	for _, h := range found {
		if h.rule == ri {
			return true
		}
	}
	return false
}

// cancelled reports whether a match from start to end does not count:
// one of the rule's cancelling words is in the message, or the rule
// yields to negation and a negation is in the match or just before it in
// its sentence.
func (r *compiled) cancelled(toks []token, start, end int) bool {
	if len(r.unless) > 0 {
		for _, t := range toks {
			if r.unless[t.s] {
				return true
			}
		}
	}
	if !r.neg {
		return false
	}
	from := start
	for n := 0; n < 3 && from > 0 && toks[from-1].s != boundary; n++ {
		from--
	}
	for j := from; j < end; j++ {
		if !negators[toks[j].s] {
			continue
		}
		// "can not", "why not" and "do not know if" do not deny what
		// follows them.
		if j > 0 && (toks[j-1].s == "can" || toks[j-1].s == "could" || toks[j-1].s == "why") {
			continue
		}
		if j+1 < len(toks) {
			// "should not i" asks; it does not deny.
			switch toks[j+1].s {
			case "know", "sure", "understand", "think", "care", "get", "see", "stop", "i":
				continue
			}
		}
		return true
	}
	return false
}

func allQuoted(toks []token) bool {
	for _, t := range toks {
		if !t.quoted {
			return false
		}
	}
	return true
}

// sentenceHasFirstPerson reports whether the sentence around toks[i]
// has the writer in it.
func sentenceHasFirstPerson(toks []token, i int) bool {
	for j := i; j >= 0 && toks[j].s != boundary; j-- {
		if firstPerson[toks[j].s] {
			return true
		}
	}
	for j := i + 1; j < len(toks) && toks[j].s != boundary; j++ {
		if firstPerson[toks[j].s] {
			return true
		}
	}
	return false
}

// isPast reports whether a message tells of something over ("i used to",
// "years ago") with no word of it now: "i used to self harm but i have
// been clean for ten years". Any word of the present ("again", "lately",
// an urge, a relapse) keeps the message's full weight.
func isPast(toks []token) bool {
	over := false
	for i, t := range toks {
		switch t.s {
		case "ago", "recovered", "recovery":
			over = true
		case "used":
			if i+1 < len(toks) && toks[i+1].s == "to" {
				over = true
			}
		case "again", "lately", "now", "tonight", "today", "urge", "urges", "relapse", "relapsed",
			"relapsing", "back", "still", "want", "wanna", "currently", "anymore", "recently":
			return false
		}
	}
	return over
}

// isJoking reports whether the writer says they are joking ("jk"): a
// strong cue alone then does not trip, two still do.
func isJoking(toks []token) bool {
	for i, t := range toks {
		switch t.s {
		case "jk", "jking", "joking", "kidding", "jokes":
			// "not joking" says the opposite.
			if i == 0 || toks[i-1].s != "not" && toks[i-1].s != "no" {
				return true
			}
		}
	}
	return false
}

// othersBefore reports whether someone else is named in the three tokens
// before toks[i], in its sentence.
func othersBefore(toks []token, i int) bool {
	for j := i - 1; j >= 0 && j >= i-3 && toks[j].s != boundary; j-- {
		if othersNear[toks[j].s] {
			return true
		}
	}
	return false
}
