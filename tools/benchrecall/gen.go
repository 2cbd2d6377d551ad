package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The recall set: personas who talk with the assistant over a year, and
// questions about what was said, each with the messages that hold its
// answer. Everything comes from templates and a seeded generator: the same
// seed gives the same set, byte for byte.

// The kinds of question, after LongMemEval's.
const (
	kindFact       = "single-fact"      // a fact the user stated once
	kindAssistant  = "assistant"        // something the assistant said
	kindPreference = "preference"       // a request whose good answer needs a stated preference
	kindMulti      = "multi-session"    // facts spread over several sessions
	kindUpdate     = "knowledge-update" // a fact that changed later: both statements
	kindTemporal   = "temporal"         // dates: order, gaps, what happened around a date
)

// kinds lists the kinds in the order the report shows them.
var kinds = []string{kindFact, kindAssistant, kindPreference, kindMulti, kindUpdate, kindTemporal}

// Set is a generated recall set, as -out writes it.
type Set struct {
	Seed      uint64     `json:"seed"`
	Personas  []Persona  `json:"personas"`
	Questions []Question `json:"questions"`
}

// Persona is one user: a resource, with a thread per session.
type Persona struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Sessions []Session `json:"sessions"`
}

// Session is one conversation: a thread.
type Session struct {
	ID       string    `json:"id"`
	Date     string    `json:"date"`
	Messages []Message `json:"messages"`
}

// Message is one turn of a session.
type Message struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"createdAt"`
}

// Question is asked of one persona's messages; Evidence are the ids of the
// messages that together hold its answer.
type Question struct {
	ID        string   `json:"id"`
	PersonaID string   `json:"personaId"`
	Kind      string   `json:"kind"`
	Text      string   `json:"text"`
	Answer    string   `json:"answer"`
	Evidence  []string `json:"evidence"`
}

// Shape sets the size of a set.
type Shape struct {
	Personas int
	// MinSessions and MaxSessions bound each persona's sessions.
	MinSessions, MaxSessions int
}

// defaultShape is the set the report is about.
var defaultShape = Shape{Personas: 8, MinSessions: 34, MaxSessions: 48}

// year is the span the sessions fall in.
var (
	yearStart = time.Date(2025, time.January, 6, 0, 0, 0, 0, time.UTC)
	yearDays  = 350
)

// turn is a message while the set is built; msg is set once it is placed.
type turn struct {
	role, text string
	msg        *Message
}

// episode is a few consecutive turns that carry facts, placed whole in one
// session: on date when it is set, else in a session between the fractions
// lo and hi of the persona's timeline.
type episode struct {
	turns  []*turn
	date   time.Time
	lo, hi float64
}

// draft is a question while the set is built: its evidence are turns, its
// answer may need the dates the turns were placed at.
type draft struct {
	kind, text string
	answer     func() string
	evidence   []*turn
}

// gen builds one persona.
type gen struct {
	r        *rand.Rand
	vars     map[string]string
	episodes []*episode
	drafts   []*draft
	// used remembers the names picked, so that no two people, pets or
	// places of a persona share one.
	used map[string]bool
	// people are the user's sibling, partner, friend and coworker.
	people []person
}

// Generate builds the set of seed in shape.
func Generate(seed uint64, shape Shape) *Set {
	set := &Set{Seed: seed}
	for p := range shape.Personas {
		g := &gen{
			r:    rand.New(rand.NewPCG(seed, uint64(p)+1)),
			vars: map[string]string{},
			used: map[string]bool{},
		}
		id := fmt.Sprintf("persona-%02d", p+1)
		persona, questions := g.persona(id, shape)
		set.Personas = append(set.Personas, persona)
		set.Questions = append(set.Questions, questions...)
	}
	return set
}

// persona draws a persona's world, its facts and questions, and lays them
// out in sessions among filler.
func (g *gen) persona(id string, shape Shape) (Persona, []Question) {
	g.world()
	for _, f := range factKinds {
		f(g)
	}
	sessions := g.layout(id, shape.MinSessions+g.r.IntN(shape.MaxSessions-shape.MinSessions+1))
	var qs []Question
	for i, d := range g.drafts {
		q := Question{
			ID:        fmt.Sprintf("%s-q%03d", id, i+1),
			PersonaID: id,
			Kind:      d.kind,
			Text:      d.text,
			Answer:    d.answer(),
		}
		for _, t := range d.evidence {
			q.Evidence = append(q.Evidence, t.msg.ID)
		}
		qs = append(qs, q)
	}
	return Persona{ID: id, Name: g.vars["me"], Sessions: sessions}, qs
}

// layout places the episodes in n sessions (more when fixed dates ask for
// more) and fills every session with filler to 6 to 16 turns.
func (g *gen) layout(persona string, n int) []Session {
	type slot struct {
		date     time.Time
		episodes []*episode
	}
	var slots []*slot
	byDate := map[time.Time]*slot{}
	for _, e := range g.episodes {
		if e.date.IsZero() {
			continue
		}
		s := byDate[e.date]
		if s == nil {
			s = &slot{date: e.date}
			byDate[e.date] = s
			slots = append(slots, s)
		}
		s.episodes = append(s.episodes, e)
	}
	for len(slots) < n {
		d := yearStart.AddDate(0, 0, g.r.IntN(yearDays))
		if byDate[d] != nil {
			continue
		}
		s := &slot{date: d}
		byDate[d] = s
		slots = append(slots, s)
	}
	slices.SortFunc(slots, func(a, b *slot) int { return a.date.Compare(b.date) })
	// Free episodes go to a session in their window, the emptiest first
	// so that facts spread out; a window with no session is widened.
	for _, e := range g.episodes {
		if !e.date.IsZero() {
			continue
		}
		lo, hi := int(e.lo*float64(len(slots))), int(e.hi*float64(len(slots)))
		hi = min(max(hi, lo+1), len(slots))
		best := -1
		for range 8 {
			i := lo + g.r.IntN(hi-lo)
			if best < 0 || len(slots[i].episodes) < len(slots[best].episodes) {
				best = i
			}
		}
		slots[best].episodes = append(slots[best].episodes, e)
	}
	var sessions []Session
	for i, s := range slots {
		sess := Session{ID: fmt.Sprintf("%s-s%02d", persona, i+1), Date: s.date.Format(time.DateOnly)}
		var blocks [][]*turn
		for _, e := range s.episodes {
			blocks = append(blocks, e.turns)
		}
		topic := fillerTopics[g.r.IntN(len(fillerTopics))]
		length := 0
		for _, b := range blocks {
			length += len(b)
		}
		// A session with facts gets a little filler around them; one
		// without is a filler conversation of its own.
		want := 6 + 2*g.r.IntN(6)
		if len(blocks) > 0 {
			want = min(max(length+2+2*g.r.IntN(4), 6), max(16, length))
		}
		fill := g.filler(topic, (want-length)/2)
		for _, pair := range fill {
			at := g.r.IntN(len(blocks) + 1)
			if len(blocks) > 0 && g.r.IntN(3) > 0 {
				// Filler of the session's topic mostly opens it or
				// follows the facts, as conversations drift.
				at = len(blocks)
				if g.r.IntN(2) == 0 {
					at = 0
				}
			}
			blocks = slices.Insert(blocks, at, pair)
		}
		at := s.date.Add(time.Duration(8*60+g.r.IntN(14*60)) * time.Minute)
		total := 0
		for _, b := range blocks {
			total += len(b)
		}
		// The turns point into Messages: it is made big enough at once.
		sess.Messages = make([]Message, 0, total)
		for _, b := range blocks {
			for _, t := range b {
				at = at.Add(time.Duration(20+g.r.IntN(160)) * time.Second)
				sess.Messages = append(sess.Messages, Message{
					ID:        fmt.Sprintf("%s-m%02d", sess.ID, len(sess.Messages)+1),
					Role:      t.role,
					Content:   t.text,
					CreatedAt: at,
				})
				t.msg = &sess.Messages[len(sess.Messages)-1]
			}
		}
		sessions = append(sessions, sess)
	}
	return sessions
}

// x expands a template: {a|b|c} is one of a, b and c; {$name} and $name
// are the variable name (of the persona, or given as name, value pairs in
// kv). Braces nest: the innermost are expanded first; a | outside them
// all chooses between whole templates. The result is tidied: single
// spaces, and a capital at its start.
func (g *gen) x(tpl string, kv ...string) string {
	s := tpl
	for {
		j := strings.IndexByte(s, '}')
		if j < 0 {
			break
		}
		i := strings.LastIndexByte(s[:j], '{')
		if i < 0 {
			panic("unbalanced template: " + tpl)
		}
		body, rep := s[i+1:j], ""
		if name, ok := strings.CutPrefix(body, "$"); ok && isName(name) {
			rep = g.lookup(name, kv)
		} else {
			alts := strings.Split(body, "|")
			rep = alts[g.r.IntN(len(alts))]
		}
		s = s[:i] + rep + s[j+1:]
	}
	if alts := strings.Split(s, "|"); len(alts) > 1 {
		s = alts[g.r.IntN(len(alts))]
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		n := 0
		for i >= 0 && i+1+n < len(s) && isName(s[i+1:i+2+n]) {
			n++
		}
		if n == 0 {
			if i < 0 {
				b.WriteString(s)
				break
			}
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(g.lookup(s[i+1:i+1+n], kv))
		s = s[i+1+n:]
	}
	s = strings.Join(strings.Fields(b.String()), " ")
	for _, p := range []string{" ,", " .", " !", " ?", " ;", " :"} {
		s = strings.ReplaceAll(s, p, p[1:])
	}
	for _, p := range [][2]string{{"!.", "!"}, {"?.", "?"}, {"..", "."}, {",.", "."}, {".,", ","}, {"!,", "!"}} {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	// Every sentence begins with a capital.
	out := []byte(s)
	for i := 2; i < len(out); i++ {
		if out[i-1] == ' ' && (out[i-2] == '.' || out[i-2] == '!' || out[i-2] == '?') && 'a' <= out[i] && out[i] <= 'z' {
			out[i] -= 'a' - 'A'
		}
	}
	return upperFirst(string(out))
}

// isName reports whether s is a variable's name: an ASCII letter, then
// letters and digits.
func isName(s string) bool {
	for i, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

func (g *gen) lookup(name string, kv []string) string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == name {
			return kv[i+1]
		}
	}
	if v, ok := g.vars[name]; ok {
		return v
	}
	panic("template variable not set: " + name)
}

// upperFirst capitalises the first letter of s.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// pick returns one of list.
func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

// fresh returns one of list that the persona has not used yet.
func (g *gen) fresh(list []string) string {
	for range 100 {
		if v := g.pick(list); !g.used[v] {
			g.used[v] = true
			return v
		}
	}
	panic("no unused value left in " + strings.Join(list[:min(3, len(list))], ", "))
}

// chance is true with probability p.
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// user and asst make turns.
func user(text string) *turn { return &turn{role: "user", text: text} }
func asst(text string) *turn { return &turn{role: "assistant", text: text} }

// ep adds an episode in the timeline's window lo to hi.
func (g *gen) ep(lo, hi float64, turns ...*turn) *episode {
	if len(turns)%2 != 0 || turns[0].role != "user" {
		panic("an episode is pairs of a user's turn and the assistant's")
	}
	e := &episode{turns: turns, lo: lo, hi: hi}
	g.episodes = append(g.episodes, e)
	return e
}

// on adds an episode on a date.
func (g *gen) on(date time.Time, turns ...*turn) *episode {
	e := g.ep(0, 1, turns...)
	e.date = date
	return e
}

// ask adds a question with a fixed answer.
func (g *gen) ask(kind, text, answer string, evidence ...*turn) *draft {
	return g.askFn(kind, text, func() string { return answer }, evidence...)
}

// askFn adds a question whose answer is known once the set is laid out.
func (g *gen) askFn(kind, text string, answer func() string, evidence ...*turn) *draft {
	d := &draft{kind: kind, text: text, answer: answer, evidence: evidence}
	g.drafts = append(g.drafts, d)
	return d
}

// dateOf is the day a turn was placed on.
func dateOf(t *turn) time.Time {
	y, m, d := t.msg.CreatedAt.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
