package turn

import (
	"testing"

	"github.com/companionhq/companion/internal/memory"
)

func result(thread, id string, score float64) memory.SearchResult {
	return memory.SearchResult{ThreadID: thread, Message: memory.Message{ID: id}, Score: score}
}

func order(rs []memory.SearchResult) string {
	var s string
	for _, r := range rs {
		s += r.ThreadID + "/" + r.Message.ID + " "
	}
	return s
}

func TestFuse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		text, vec []memory.SearchResult
		want      string
	}{
		{"text alone", []memory.SearchResult{result("a", "1", 9), result("a", "2", 3)}, nil, "a/1 a/2 "},
		{"vectors alone", nil, []memory.SearchResult{result("a", "1", 0.9), result("b", "1", 0.8)}, "a/1 b/1 "},
		// In both rankings beats first in one; equals keep the text's order.
		{"both", []memory.SearchResult{result("a", "1", 9), result("a", "2", 3), result("a", "3", 1)},
			[]memory.SearchResult{result("a", "3", 0.9), result("b", "1", 0.8)}, "a/3 a/1 a/2 b/1 "},
		// The same message id in two threads is two messages.
		{"ids per thread", []memory.SearchResult{result("a", "1", 9)}, []memory.SearchResult{result("b", "1", 0.9)}, "a/1 b/1 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := order(fuse(tc.text, tc.vec, 1)); got != tc.want {
				t.Fatalf("fused %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSimilar(t *testing.T) {
	rs := []memory.SearchResult{result("a", "1", 0.9), result("a", "2", 0.3), result("a", "3", 0.1)}
	if got := order(similar(rs, 0.25)); got != "a/1 a/2 " {
		t.Fatalf("kept %q", got)
	}
	if got := order(similar(rs[:0], 0.25)); got != "" {
		t.Fatalf("kept %q of none", got)
	}
}
