package httpapi

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
)

// TestCheckStrictKeys: a repeated key is found wherever it falls in an
// object, among a few keys or many (jsontext keeps up to 64 names in a
// list, more in a map), and an object of many distinct keys passes.
func TestCheckStrictKeys(t *testing.T) {
	object := func(keys ...string) string {
		var b strings.Builder
		b.WriteString(`{"threadId":"t","messages":[{"role":"user","content":"Hi"}],"extra":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%d", k, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	keys := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("k%d", i)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		keys []string
		want string // the error, or "" for none
	}{
		{"a few", keys(3), ""},
		{"many", keys(200), ""},
		{"a repeat among a few", append(keys(5), "k2"), `key "k2" appears more than once in extra: each key may be given once`},
		{"a repeat of the last kept in the list", append(keys(16), "k15"), `key "k15" appears more than once in extra: each key may be given once`},
		{"a repeat of the first key among many", append(keys(40), "k0"), `key "k0" appears more than once in extra: each key may be given once`},
		{"a repeat among many", append(keys(40), "k39"), `key "k39" appears more than once in extra: each key may be given once`},
		{"a repeat of the last kept in jsontext's list", append(keys(64), "k63"), `key "k63" appears more than once in extra: each key may be given once`},
		{"a repeat of the last as jsontext's map is made", append(keys(65), "k64"), `key "k64" appears more than once in extra: each key may be given once`},
		{"a repeat of the first beyond jsontext's list", append(keys(100), "k0"), `key "k0" appears more than once in extra: each key may be given once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkStrict([]byte(object(tc.keys...)), reflect.TypeFor[api.GenerateRequest]())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckStrictEnds: a body that breaks off, or goes wrong, inside an
// array or an object ends the check as a syntax error (worded by the
// decoder after it), and what is wrong before the break is still found.
func TestCheckStrictEnds(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error // errSyntax, or nil for the key error below
	}{
		{`{"threadId":"t","messages":[{"role":"user","content":"Hi"`, errSyntax},
		{`{"threadId":"t","messages":[{"role":"user"},`, errSyntax},
		{`{"threadId":"t","messages":[1,2`, errSyntax},
		{`{"threadId":"t","messages":[1 2]}`, errSyntax},
		{`{"threadId":"t","messages":[{"role":"user"} {"role":"user"}]}`, errSyntax},
		{`{"threadId":"t" "x":1}`, errSyntax},
		{`{"threadId":"t","threadId":"u","messages":[1,`, nil},
	} {
		err := checkStrict([]byte(tc.body), reflect.TypeFor[api.GenerateRequest]())
		switch {
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want a syntax error", tc.body, err)
		case tc.want == nil && (err == nil || err.Error() != `key "threadId" appears more than once in the request body: each key may be given once`):
			t.Errorf("%s: %v, want the repeated key", tc.body, err)
		}
	}
}
