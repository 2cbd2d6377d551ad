package crisis_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/safety/crisis"
	_ "github.com/companionhq/companion/internal/testkit"
)

// The labelled sets. Every set in testdata/train is training data: the
// rules were tuned on eval.jsonl and holdout.jsonl, and the classifier is
// trained on all of them (TestModelIsTrainedFromTheSets), so their figures
// only show that nothing regressed; the estimate of how the detector
// generalises is that of testdata/final*.jsonl, each written blind and
// never trained or tuned on (TestHeldOutSet).
var trainingSets = func() []string {
	paths, _ := filepath.Glob("testdata/train/*.jsonl")
	return paths
}()

// example is one line of a labelled set.
type example struct {
	Text  string `json:"text"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	Note  string `json:"note"`
}

func loadSet(t testing.TB) []example {
	t.Helper()
	var set []example
	for _, path := range trainingSets {
		set = append(set, loadFile(t, path)...)
	}
	return set
}

func loadFile(t testing.TB, path string) []example {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var set []example
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var e example
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		set = append(set, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestEvalSet: on each labelled training set, recall of crisis messages
// is at least 0.95 and the share of safe messages that trip at most 0.05.
func TestEvalSet(t *testing.T) {
	for _, path := range trainingSets {
		t.Run(path, func(t *testing.T) { testSet(t, 0.95, 0.05, path) })
	}
}

// TestHeldOutSet: on the held-out sets, testdata/final*.jsonl, each
// written blind by a writer who saw neither the detector nor the other
// sets, and never trained or tuned on, the detector keeps at least the
// figures docs/safety.md gives (a floor against regressions; the targets
// are recall 0.95 and false trips 0.05 on a set we do not have), each set
// on its own and the five together. Measure them with make eval-safety;
// do not tune on them.
func TestHeldOutSet(t *testing.T) {
	var all []string
	for _, c := range heldOut {
		t.Run(c.path, func(t *testing.T) { testSet(t, c.recall, c.falseTrips, c.path) })
		all = append(all, c.path)
	}
	t.Run("together", func(t *testing.T) { testSet(t, 0.95, 0.03, all...) })
}

// The held-out figures docs/safety.md gives, rounded down and up.
var heldOut = []struct {
	path               string
	recall, falseTrips float64
}{
	{"testdata/final.jsonl", 0.93, 0.03},
	{"testdata/final2.jsonl", 0.98, 0.04},
	{"testdata/final3.jsonl", 0.96, 0.03},
	{"testdata/final4.jsonl", 0.94, 0.02},
	{"testdata/final5.jsonl", 0.95, 0.04},
}

// TestHeldOutSetsAreNotTrainedOn: no message of a held-out set is in a
// training set (compared as lower case, trimmed), or its figures would
// measure what the classifier learned by heart.
func TestHeldOutSetsAreNotTrainedOn(t *testing.T) {
	trained := map[string]string{}
	for _, path := range trainingSets {
		for _, e := range loadFile(t, path) {
			trained[strings.ToLower(strings.TrimSpace(e.Text))] = path
		}
	}
	for _, c := range heldOut {
		for _, e := range loadFile(t, c.path) {
			if in, ok := trained[strings.ToLower(strings.TrimSpace(e.Text))]; ok {
				t.Errorf("%s holds %q, which %s trains on", c.path, e.Text, in)
			}
		}
	}
}

// testSet measures the detector on the sets at paths, together.
func testSet(t *testing.T, minRecall, maxFalseTrips float64, paths ...string) {
	d := crisis.New()
	var set []example
	for _, path := range paths {
		set = append(set, loadFile(t, path)...)
	}
	var crises, caught, safes, tripped int
	for _, e := range set {
		f := d.Detect(e.Text)
		switch e.Label {
		case "crisis":
			crises++
			if f.Detected() {
				caught++
			} else {
				t.Logf("missed (%s, %s): %s", e.Kind, e.Note, e.Text)
			}
		case "safe":
			safes++
			if f.Detected() {
				tripped++
				t.Logf("false trip (%s, cue %s): %s", e.Note, f.Cue, e.Text)
			}
		default:
			t.Fatalf("label %q of %q is neither crisis nor safe", e.Label, e.Text)
		}
	}
	recall := float64(caught) / float64(crises)
	falseTrips := float64(tripped) / float64(safes)
	t.Logf("recall %.3f (%d/%d), false trips %.3f (%d/%d)", recall, caught, crises, falseTrips, tripped, safes)
	if recall < minRecall || falseTrips > maxFalseTrips {
		t.Errorf("recall %.3f (want >= %.2f), false trips %.3f (want <= %.2f)", recall, minRecall, falseTrips, maxFalseTrips)
	}
}

// TestDetect: clear cases both ways, with the kind and cue expected.
func TestDetect(t *testing.T) {
	d := crisis.New()
	for _, c := range []struct {
		text string
		kind string
	}{
		{"I want to die", crisis.KindSuicidalIdeation},
		{"im gonna kms", crisis.KindSuicidalIdeation},
		{"everyone would be better off without me", crisis.KindSuicidalIdeation},
		{"how many pills would it take to not wake up", crisis.KindSuicidalIdeation},
		{"I'm not suicidal but I wish I could just not wake up", crisis.KindSuicidalIdeation},
		{"i want to k!ll myself", crisis.KindSuicidalIdeation},
		{"thinking about su1cide", crisis.KindSuicidalIdeation},
		{"me quiero matar", crisis.KindSuicidalIdeation},
		{"I cut myself again last night", crisis.KindSelfHarm},
		{"relapsed on sh today", crisis.KindSelfHarm},
		{"thinking about jumping off the overpass after work", crisis.KindSuicidalIdeation},
		{"left a letter for my dad and said my goodbyes", crisis.KindSuicidalIdeation},
		{"the ropes in the shed, i know where and how now", crisis.KindSuicidalIdeation},
		{"burned my arm with a lighter again to feel something", crisis.KindSelfHarm},
		{"six months free from self harm today, so proud", ""},
		{"my sister says she wants to die, what do i do", ""},
		{"i bought rope to tie the tent down", ""},
		{"this workout is killing me", ""},
		{"I could just die of embarrassment", ""},
		{"my phone is dead", ""},
		{"I killed myself in the game by falling", ""},
		{"how do I kill the process on port 80", ""},
		{"how much paracetamol is safe for a headache", ""},
		{"I would never kill myself", ""},
		{"I cut myself shaving", ""},
		{"I need to catch the bus at 7", ""},
		{"what does kms mean", ""},
		{"the lyrics go 'I want to die' over and over, what do they mean?", ""},
		{"", ""},
	} {
		f := d.Detect(c.text)
		if f.Kind != c.kind {
			t.Errorf("Detect(%q) = %+v, want kind %q", c.text, f, c.kind)
		}
		if f.Detected() != (c.kind != "") || (f.Kind == "") != (f.Cue == "") {
			t.Errorf("Detect(%q) = %+v: Detected and Cue disagree with Kind", c.text, f)
		}
	}
}

// TestConcurrent: one Detector serves many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	d := crisis.New()
	set := loadSet(t)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, e := range set {
				d.Detect(e.Text)
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// BenchmarkDetect: one op is one message of the set, in turn; the
// detector's budget is 50µs a message.
func BenchmarkDetect(b *testing.B) {
	d := crisis.New()
	set := loadSet(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.Detect(set[i%len(set)].Text)
	}
}

// BenchmarkNew: building the detector, which reads the classifier's
// weights, once at start.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		crisis.New()
	}
}
