package turn

import (
	"strconv"
	"strings"
	"testing"
)

// TestOneLine: the fast path gives what folding the white space gives.
func TestOneLine(t *testing.T) {
	for _, text := range []string{"", " ", "a", "a b", " a", "a ", "a  b", "a\nb", "a\tb", "é b", "a\u00a0b", "a\u2003b",
		strings.Repeat("word ", 100), strings.Repeat("x", 500), "plain sentence, with punctuation."} {
		want := strings.Join(strings.Fields(text), " ")
		if len(want) > 400 {
			cut := 400
			for cut > 0 && want[cut]&0xC0 == 0x80 {
				cut--
			}
			want = want[:cut] + "..."
		}
		if got := oneLine(text); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestAppendQuote: the fast path quotes as strconv.AppendQuote does.
func TestAppendQuote(t *testing.T) {
	for _, s := range []string{"", "a", "plain sentence, with punctuation.", `say "hi"`, `back\slash`, "tab\there", "new\nline",
		"é", "caf\u00e9 au lait", "\x7f", "\x00", "emoji \U0001F600", "\xff invalid", "~ tilde", strings.Repeat("x", 5000)} {
		want := string(strconv.AppendQuote([]byte("<"), s))
		if got := string(appendQuote([]byte("<"), s)); got != want {
			t.Errorf("appendQuote(%q) = %s, want %s", s, got, want)
		}
	}
}
