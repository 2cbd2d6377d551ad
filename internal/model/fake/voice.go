package fake

import (
	"fmt"
	"regexp"
	"strings"
)

// voice is how the fake speaks in one personality.
type voice struct {
	name string
	// open and close frame every reply; echo introduces the quoted question.
	open, echo, body, close string
	// recall introduces the previous user message.
	recall string
	// weatherOpen and weatherClose frame a weather answer.
	weatherOpen, weatherClose string
}

var voices = map[string]voice{
	"guru": {
		name:         "guru",
		open:         "Breathe, and be still for a moment.",
		echo:         "You ask:",
		body:         "Like a river that finds its way around the stone, the answer comes when the mind is quiet.",
		close:        "Practise this today: pause for three breaths before you act.",
		recall:       "Earlier you said:",
		weatherOpen:  "The sky speaks, and we listen.",
		weatherClose: "Whatever the weather, carry your own calm with you.",
	},
	"wanderer": {
		name:         "wanderer",
		open:         "Ah, that takes me back to a crossroads I once passed on a long road.",
		echo:         "You wonder:",
		body:         "Every path I walked taught me that the best answers are found a few steps past where we stop.",
		close:        "Shall we walk one step further down this road together?",
		recall:       "Back along the road you told me:",
		weatherOpen:  "I checked the skies ahead of us.",
		weatherClose: "Pack for the road and keep your eyes on the horizon.",
	},
	"friend": {
		name:         "friend",
		open:         "Hey, it's really good to hear from you!",
		echo:         "You asked:",
		body:         "Honestly, I think you've got this, and I'm right here with you whatever happens.",
		close:        "How are you feeling about it all?",
		recall:       "Earlier you mentioned:",
		weatherOpen:  "Okay, I looked it up for you!",
		weatherClose: "Take care out there, and tell me how your day goes!",
	},
	"philosopher": {
		name:         "philosopher",
		open:         "Let us look beneath the surface of this.",
		echo:         "You ask:",
		body:         "One view holds that the answer lies in what we can know; another, in what we choose to value.",
		close:        "Which of these feels closer to your own experience, and why?",
		recall:       "You said before:",
		weatherOpen:  "Consider what the instruments report, knowing they describe only a moment.",
		weatherClose: "Is the weather something we endure, or something we interpret?",
	},
}

var modeRE = regexp.MustCompile(`\bin (\w+) mode\b`)

// voiceOf reads the personality from the instructions; friend when none.
func voiceOf(system string) voice {
	if m := modeRE.FindStringSubmatch(system); m != nil {
		if v, ok := voices[m[1]]; ok {
			return v
		}
	}
	return voices["friend"]
}

// reply answers msg, quoting it, and recalls prev (the thread's previous
// user message) and recalled (from another conversation) when there are
// some.
func (v voice) reply(msg, prev, recalled string) string {
	var b strings.Builder
	b.WriteString(v.open)
	b.WriteString(" " + v.echo + " " + quote(msg))
	if prev != "" {
		b.WriteString(" " + v.recall + " " + quote(prev))
	}
	if recalled != "" {
		b.WriteString(" You told me before: " + quote(recalled))
	}
	b.WriteString(" " + v.body + " " + v.close)
	return b.String()
}

// noted answers a message whose fact the fake has kept in working memory.
func (v voice) noted(fact string) string {
	var b strings.Builder
	b.WriteString(v.open)
	if fact != "" {
		b.WriteString(" I'll remember that: " + quote(fact))
	} else {
		b.WriteString(" I'll remember that.")
	}
	b.WriteString(" " + v.close)
	return b.String()
}

// weather answers from the results of a tool round.
func (v voice) weather(results []weatherResult) string {
	var b strings.Builder
	b.WriteString(v.weatherOpen)
	for _, w := range results {
		r := w.result
		if r.Error != "" {
			place := w.asked
			if place == "" {
				place = "that place"
			}
			fmt.Fprintf(&b, " I couldn't get the weather for %s: %s.", place, strings.TrimSuffix(r.Error, "."))
			continue
		}
		fmt.Fprintf(&b, " In %s it is %s°C (feels like %s°C) with %s, humidity %s%%, wind %s km/h and gusts up to %s km/h.",
			r.Location, num(r.Temperature), num(r.FeelsLike), strings.ToLower(r.Conditions), num(r.Humidity), num(r.WindSpeed), num(r.WindGust))
	}
	b.WriteString(" " + v.weatherClose)
	return b.String()
}

func num(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", f), "0"), ".")
}

// quote quotes a message as a sentence: one line, at most 80 runes, with a
// full stop after the quote unless the message ends its own sentence.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!") {
		return `"` + s + `"`
	}
	return `"` + s + `".`
}

var (
	weatherRE = regexp.MustCompile(`(?i)\b(weather|temperature|forecast)\b`)
	placeRE   = regexp.MustCompile(`(?i)\b(?:in|at|for)\s+(\p{L}[\p{L}\p{M} .'\-]*)`)
	trailRE   = regexp.MustCompile(`(?i)\s+(today|tonight|tomorrow|now|right now|this (morning|afternoon|evening|week|weekend)|please|like|currently)$`)
	splitRE   = regexp.MustCompile(`(?i)\s+and\s+`)
)

// places returns the places a weather question asks about, in order; none
// when msg is not a weather question.
func places(msg string) []string {
	loc := weatherRE.FindStringIndex(msg)
	if loc == nil {
		return nil
	}
	m := placeRE.FindStringSubmatch(msg[loc[1]:])
	if m == nil {
		return nil
	}
	var out []string
	for _, p := range splitRE.Split(m[1], -1) {
		p = strings.Trim(p, " .'-")
		for {
			q := trailRE.ReplaceAllString(p, "")
			if q == p {
				break
			}
			p = q
		}
		if p != "" && len(out) < 4 {
			out = append(out, p)
		}
	}
	return out
}
