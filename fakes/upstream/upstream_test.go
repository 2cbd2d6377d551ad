package upstream_test

import (
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
