package crisis

import (
	"slices"
	"strings"
	"testing"
)

// TestAppendRuneGrams: a word beyond ASCII is read in pairs of letters,
// not of the bytes that split them, and a run of letters longer than a
// word (a phrase of Japanese, Chinese or Korean, written without spaces)
// only as far as its first 64 letters.
func TestAppendRuneGrams(t *testing.T) {
	long := "<" + strings.Repeat("死", 100) + ">"
	for _, c := range []struct {
		name, word string
		want       []string
	}{
		{"cyrillic", "<хочу>", []string{"<х", "хо", "оч", "чу", "у>"}},
		{"japanese", "<死にたい>", []string{"<死", "死に", "にた", "たい", "い>"}},
		{"one letter", "<я>", []string{"<я", "я>"}},
		{"two runes", "<я", []string{"<я"}},
		{"a phrase", long, slices.Repeat([]string{"死死"}, 62)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			h := func(_ byte, parts ...string) uint32 { got = append(got, parts...); return 0 }
			appendRuneGrams(nil, h, c.word)
			if c.name == "a phrase" {
				// The first pair holds the "<" and the last two letters
				// counted, the 63rd and the 64th, are a pair.
				if len(got) != 63 || got[0] != "<死" || !slices.Equal(got[1:], c.want) {
					t.Fatalf("%d groups, first %q", len(got), got[:2])
				}
				return
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
