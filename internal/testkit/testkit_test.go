package testkit_test

import (
	"testing"

	"github.com/companionhq/companion/internal/testkit"
)

func TestDig(t *testing.T) {
	v := map[string]any{"a": []any{map[string]any{"b": "x"}, "y"}, "n": 1}
	for _, tc := range []struct {
		keys []string
		want any
	}{
		{[]string{"a", "0", "b"}, "x"},
		{[]string{"a", "1"}, "y"},
		{[]string{"a", "2"}, nil},
		{[]string{"a", "-1"}, nil},
		{[]string{"a", "b"}, nil},
		{[]string{"n", "x"}, nil},
		{[]string{"missing"}, nil},
		{nil, v},
	} {
		if got := testkit.Dig(v, tc.keys...); tc.keys == nil && got == nil || tc.keys != nil && got != tc.want {
			t.Errorf("Dig(%v) = %v, want %v", tc.keys, got, tc.want)
		}
	}
}
