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

func TestLoggedAddr(t *testing.T) {
	for _, tc := range []struct {
		line, msg, want string
		ok              bool
	}{
		{`{"level":"INFO","msg":"listening","addr":"127.0.0.1:4111","model":"fake/fake"}`, "listening", "127.0.0.1:4111", true},
		{`{"msg":"serving metrics","addr":"127.0.0.1:9464"}`, "serving metrics", "127.0.0.1:9464", true},
		{`{"msg":"serving metrics","addr":"127.0.0.1:9464"}`, "listening", "", false},
		{`{"msg":"listening"}`, "listening", "", false},
		{`listening on 127.0.0.1:4111`, "listening", "", false},
	} {
		got, ok := testkit.LoggedAddr([]byte(tc.line), tc.msg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LoggedAddr(%s, %q) = %q, %v; want %q, %v", tc.line, tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}
