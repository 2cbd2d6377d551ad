package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/safety/crisis"
	"github.com/companionhq/companion/tools/internal/crisisset"
)

// TestMeasure: recall over crisis messages, false trips over safe ones, at
// the thresholds given.
func TestMeasure(t *testing.T) {
	set := []crisisset.Example{
		{Text: "I want to kill myself tonight", Label: "crisis", Kind: crisis.KindSuicidalIdeation},
		{Text: "I keep cutting my arms again", Label: "crisis", Kind: crisis.KindSelfHarm},
		{Text: "what a lovely morning for a walk", Label: "safe"},
		{Text: "this workout is killing me", Label: "safe"},
	}
	r := measure(crisis.New(), set, &crisis.Thresholds{Signalled: 0.5, Unsignalled: 0.85, Damped: 0.85, Veto: 0.05})
	if r.crisis != 2 || r.safe != 2 || r.found != 2 || r.falseTrips != 0 {
		t.Fatalf("%+v", r)
	}
	if got := cell(r); got != "1.000/0.000" {
		t.Fatalf("cell %q", got)
	}
	// A threshold no message reaches, and a veto every rule's trip is
	// under: nothing trips.
	if r := measure(crisis.New(), set, &crisis.Thresholds{Signalled: 1.1, Unsignalled: 1.1, Damped: 1.1, Veto: 1.1}); r.found != 0 || r.falseTrips != 0 {
		t.Fatalf("with nothing allowed to trip: %+v", r)
	}
}

// TestMissesOfNoSet: -misses naming no training set is refused before any
// training, not answered with an empty list.
func TestMissesOfNoSet(t *testing.T) {
	err := run(context.Background(), []string{"-cv", "-misses", "nosuch"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no training set has that name") {
		t.Fatalf("run = %v", err)
	}
}
