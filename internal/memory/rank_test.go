package memory

import (
	"math"
	"testing"
)

func TestSearchWordWeight(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{0, math.Log(1001)}, {1, math.Log(1001)}, {10, math.Log(101)}, {SearchRecentMessages, math.Log(2)}} {
		if got := SearchWordWeight(c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SearchWordWeight(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	if !SearchRare(SearchRareLately-1) || SearchRare(SearchRareLately) {
		t.Errorf("rare below %d recent messages, not at it", SearchRareLately)
	}
}
