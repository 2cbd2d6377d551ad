package crisis_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/companionhq/companion/internal/safety/crisis"
	"github.com/companionhq/companion/internal/testkit"
)

// trainingExamples are the messages of every set in testdata/train, in
// the order of their files' names.
func trainingExamples(t testing.TB) []crisis.Example {
	t.Helper()
	if len(trainingSets) == 0 {
		t.Fatal("no training sets")
	}
	var out []crisis.Example
	for _, e := range loadSet(t) {
		kind := ""
		if e.Label == "crisis" {
			kind = e.Kind
		}
		out = append(out, crisis.Example{Text: e.Text, Kind: kind})
	}
	return out
}

// TestModelIsTrainedFromTheSets: model.bin is what the training sets
// train with DefaultTrainOptions, byte for byte (training is
// deterministic); -update writes it again.
func TestModelIsTrainedFromTheSets(t *testing.T) {
	got, err := crisis.Train(trainingExamples(t), crisis.DefaultTrainOptions())
	if err != nil {
		t.Fatal(err)
	}
	if testkit.Updating() {
		if err := os.WriteFile("model.bin", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("model.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("model.bin (%d bytes) is not what testdata/train trains (%d bytes): run go test -run TestModelIsTrainedFromTheSets -update", len(want), len(got))
	}
	if _, err := crisis.NewWithModel(got); err != nil {
		t.Fatal(err)
	}
}

// TestModelRefused: a model that is not one, or that ends early or has
// bytes left over, is refused, not half read.
func TestModelRefused(t *testing.T) {
	good, err := os.ReadFile("model.bin")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"not a model":    []byte("something else"),
		"cut short":      good[:len(good)/2],
		"only the magic": good[:5],
		"bytes left":     append(bytes.Clone(good), 0),
	} {
		if _, err := crisis.NewWithModel(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
