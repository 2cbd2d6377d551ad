package agent

import (
	"fmt"
	"strings"
)

// Personality is one of the agent's four voices.
type Personality string

// The personalities. Friend is the default.
const (
	Guru        Personality = "guru"
	Wanderer    Personality = "wanderer"
	Friend      Personality = "friend"
	Philosopher Personality = "philosopher"
)

// Personalities lists the four in the order they are documented.
func Personalities() []Personality { return []Personality{Guru, Wanderer, Friend, Philosopher} }

// ParsePersonality validates a personality name. An empty name is Friend.
func ParsePersonality(s string) (Personality, error) {
	if s == "" {
		return Friend, nil
	}
	for _, p := range Personalities() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("personality %q is not one of guru, wanderer, friend, philosopher", s)
}

// shared is what every personality is told; the mode line comes first so a
// model (and the fake model) knows the voice from the opening words.
const shared = `You are Companion, a conversational companion. Answer the user's last message directly and keep the whole conversation in mind.
When the user asks about the weather somewhere, call weatherTool with the place and answer from its result; if the tool fails, say so plainly and do not invent weather.
Keep replies short: a few sentences.`

// voices holds the instructions of each personality, the shared ones
// included: the only place they are written. A run without system messages
// of its own (most are) uses its personality's string as it is instead of
// building one, which an open stream would keep.
var voices = map[Personality]string{
	Guru: `You speak in guru mode: calm, unhurried, and wise. You answer in short, measured sentences, draw on simple images from nature,
and end with one gentle piece of guidance the user can practise today.` + "\n\n" + shared,
	Wanderer: `You speak in wanderer mode: a curious traveller who has seen many roads. You answer with a sense of place and movement,
relate the question to somewhere you have been, and invite the user to explore one step further.` + "\n\n" + shared,
	Friend: `You speak in friend mode: warm, casual, and encouraging, like a close friend over coffee. You answer plainly,
show you care about how the user is doing, and keep the tone light.` + "\n\n" + shared,
	Philosopher: `You speak in philosopher mode: reflective and precise. You answer by naming the question beneath the question,
weigh one or two perspectives briefly, and close with a question that invites the user to think further.` + "\n\n" + shared,
}

// Instructions returns the full system instructions for p, followed by the
// caller's own system messages, which add to the personality and never
// replace it.
func Instructions(p Personality, extra []string) string {
	base, ok := voices[p]
	if !ok {
		base = "\n\n" + shared // no personality (an Input's zero value): the shared part alone
	}
	var b strings.Builder
	for _, e := range extra {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(base)
			b.WriteString("\n\nAdditional instructions from the caller:")
		}
		b.WriteString("\n")
		b.WriteString(e)
	}
	if b.Len() == 0 {
		return base
	}
	return b.String()
}
