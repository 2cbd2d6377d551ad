package upstream_test

import (
	"encoding/json"
	"testing"

	"github.com/companionhq/companion/fakes/upstream"
	_ "github.com/companionhq/companion/internal/testkit"
)

func TestParseFault(t *testing.T) {
	for in, want := range map[string]upstream.Fault{
		"429:retry-after=2": {Kind: upstream.FaultStatus, Status: 429, RetryAfter: "2"},
		"503":               {Kind: upstream.FaultStatus, Status: 503},
		"malformed:after=2": {Kind: upstream.FaultMalformed, After: 2},
		"cut:after=3":       {Kind: upstream.FaultCut, After: 3},
		"hang":              {Kind: upstream.FaultHang},
	} {
		got, err := upstream.ParseFault(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"200", "boom", "hang:after=x", "429:after=1", "cut:retry-after=1"} {
		if _, err := upstream.ParseFault(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestContentText(t *testing.T) {
	for _, c := range []struct {
		raw, parts string
		documents  bool
		want, err  string
	}{
		{raw: ``, want: ""},
		{raw: `null`, want: ""},
		{raw: `"Hi"`, want: "Hi"},
		{raw: `[{"type":"text","text":"Hi, "},{"type":"image_url"},{"type":"text","text":"you"}]`, parts: "content parts", want: "Hi, you"},
		{raw: `[{"type":"text","text":"Hi"},{"type":"document","document":{"data":"doc"}}]`, parts: "content parts", want: "Hi"},
		{raw: `[{"type":"text","text":"Hi "},{"type":"document","document":{"data":"doc"}},{"type":"document","document":{"data":{"a":1}}}]`,
			parts: "content items", documents: true, want: `Hi doc{"a":1}`},
		{raw: `[{"type":"document","document":"not an object"}]`, parts: "content items", documents: true, err: "must be a string or a list of content items"},
		{raw: `[{"type":"document","document":"not an object"}]`, parts: "content parts", want: ""},
		{raw: `42`, parts: "content parts", err: "must be a string or a list of content parts"},
	} {
		got, err := upstream.ContentText(json.RawMessage(c.raw), c.parts, c.documents)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%s (documents %v): %q, %v; want %q, %q", c.raw, c.documents, got, err, c.want, c.err)
		}
	}
}
