// Package crisisset reads the labelled sets of the crisis detector
// (internal/safety/crisis/testdata): JSON lines, one message a line,
//
//	{"text": "...", "label": "crisis"|"safe", "kind": "suicidal-ideation"|"self-harm"|"", "note": "..."}
//
// for the tools that measure and train it.
package crisisset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/companionhq/companion/internal/safety/crisis"
)

// Example is one labelled message.
type Example struct {
	Text  string `json:"text"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	Note  string `json:"note"`
}

// Read reads a labelled set and checks its labels.
func Read(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the set: %w", err)
	}
	defer f.Close()
	var set []Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e Example
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch {
		case e.Label == "safe":
		case e.Label == "crisis" && (e.Kind == crisis.KindSuicidalIdeation || e.Kind == crisis.KindSelfHarm):
		default:
			return nil, fmt.Errorf("%s:%d: label %q, kind %q: want crisis with %s or %s, or safe", path, n, e.Label, e.Kind, crisis.KindSuicidalIdeation, crisis.KindSelfHarm)
		}
		set = append(set, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the set: %w", err)
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("%s: no messages", path)
	}
	return set, nil
}
