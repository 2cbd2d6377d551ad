package agent_test

import (
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/agent"
)

// FuzzParsePersonality holds ParsePersonality to its rule, stated here
// apart from its code (docs/api.md): the names guru, wanderer, friend and
// philosopher, exactly as written (no case or space folding), and "" for
// friend. Anything else fails with a message that lists the four and gives
// no personality; what it accepts is one of agent.Personalities, reads the
// same when parsed again, and has instructions of its own.
func FuzzParsePersonality(f *testing.F) {
	for _, s := range []string{"", "guru", "wanderer", "friend", "philosopher", "Guru", " friend", "friend ",
		"FRIEND", "pirate", "friend\x00", "philosopher\n", "gur", "guru,friend", "ｇｕｒｕ", "\xff"} {
		f.Add(s)
	}
	rule := map[string]agent.Personality{
		"": "friend", "guru": "guru", "wanderer": "wanderer", "friend": "friend", "philosopher": "philosopher",
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := agent.ParsePersonality(s)
		want, ok := rule[s]
		switch {
		case ok && (err != nil || p != want):
			t.Fatalf("ParsePersonality(%q) = %q, %v; want %q", s, p, err, want)
		case !ok && (err == nil || p != ""):
			t.Fatalf("ParsePersonality(%q) = %q, %v; want an error", s, p, err)
		case !ok:
			if !strings.Contains(err.Error(), "guru, wanderer, friend, philosopher") {
				t.Fatalf("ParsePersonality(%q): %q does not list the four", s, err)
			}
			return
		}
		known := false
		for _, q := range agent.Personalities() {
			known = known || q == p
		}
		if again, err := agent.ParsePersonality(string(p)); !known || err != nil || again != p {
			t.Fatalf("%q parsed as %q, which is not one of the four or does not parse as itself", s, p)
		}
		if !strings.Contains(agent.Instructions(p, nil), "in "+string(p)+" mode") {
			t.Fatalf("the instructions of %q are not its own", p)
		}
	})
}
