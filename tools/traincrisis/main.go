// Command traincrisis trains the crisis detector's classifier
// (internal/safety/crisis, classifier.go) on the labelled sets of
// testdata/train and measures it.
//
//	go run ./tools/traincrisis [-cv] [-write] [-test FILE]
//
// -cv leaves each training set out in turn, trains on the others and
// measures the detector (rules and classifier) on the one left out, at
// several thresholds: what it finds of wordings it was not trained on,
// which is how the threshold is chosen. -write trains on every set with
// crisis.DefaultTrainOptions and writes model.bin (as `go test
// ./internal/safety/crisis -run TestModelIsTrainedFromTheSets -update`
// does). -test measures the embedded detector on a set it was not
// trained on.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/companionhq/companion/internal/safety/crisis"
	"github.com/companionhq/companion/tools/internal/crisisset"
	"github.com/companionhq/companion/tools/internal/gotool"
)

func main() { gotool.Main("traincrisis", run) }

// trainDir holds the training sets, from the module's root.
const trainDir = "internal/safety/crisis/testdata/train"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("traincrisis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cv := fs.Bool("cv", false, "leave each training set out in turn and measure on it")
	write := fs.Bool("write", false, "train on every set and write model.bin")
	test := fs.String("test", "", "a labelled set to measure the embedded detector on")
	opts := crisis.DefaultTrainOptions()
	fs.IntVar(&opts.Epochs, "epochs", opts.Epochs, "epochs of training (for -cv)")
	fs.Float64Var(&opts.Rate, "rate", opts.Rate, "AdaGrad's learning rate (for -cv)")
	fs.Float64Var(&opts.L2, "l2", opts.L2, "weight decay (for -cv)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := gotool.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	sets, err := readSets(filepath.Join(root, trainDir))
	if err != nil {
		return err
	}
	if *cv {
		if err := crossValidate(stdout, sets, opts); err != nil {
			return err
		}
	}
	if *write {
		var all []crisisset.Example
		for _, s := range sets {
			all = append(all, s.examples...)
		}
		b, err := crisis.Train(examples(all), crisis.DefaultTrainOptions())
		if err != nil {
			return err
		}
		out := filepath.Join(root, "internal/safety/crisis/model.bin")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d bytes, from %d messages\n", out, len(b), len(all))
	}
	if *test != "" {
		set, err := crisisset.Read(*test)
		if err != nil {
			return err
		}
		r := measure(crisis.New(), set, nil)
		fmt.Fprintf(stdout, "%s: recall %.3f (%d/%d), false trips %.3f (%d/%d)\n", *test, r.recall(), r.found, r.crisis, r.falseRate(), r.falseTrips, r.safe)
	}
	return nil
}

type set struct {
	name     string
	examples []crisisset.Example
}

func readSets(dir string) ([]set, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no training sets in %s", dir)
	}
	sort.Strings(paths)
	var out []set
	for _, p := range paths {
		ex, err := crisisset.Read(p)
		if err != nil {
			return nil, err
		}
		out = append(out, set{name: filepath.Base(p), examples: ex})
	}
	return out, nil
}

func examples(ls []crisisset.Example) []crisis.Example {
	out := make([]crisis.Example, len(ls))
	for i, l := range ls {
		kind := ""
		if l.Label == "crisis" {
			kind = l.Kind
		}
		out[i] = crisis.Example{Text: l.Text, Kind: kind}
	}
	return out
}

// result counts a detector's findings on a set.
type result struct{ crisis, found, safe, falseTrips int }

func (r result) recall() float64    { return float64(r.found) / float64(max(r.crisis, 1)) }
func (r result) falseRate() float64 { return float64(r.falseTrips) / float64(max(r.safe, 1)) }

// measure runs d on set; with th, the classifier's threshold and veto
// are th's.
func measure(d *crisis.Detector, set []crisisset.Example, th *[2]float64) result {
	var r result
	if th != nil {
		d = d.WithThresholds(th[0], th[1])
	}
	for _, e := range set {
		hit := d.Detect(e.Text).Detected()
		if e.Label == "crisis" {
			r.crisis++
			if hit {
				r.found++
			}
		} else {
			r.safe++
			if hit {
				r.falseTrips++
			}
		}
	}
	return r
}

// crossValidate trains without each set in turn and measures on it: the
// rules alone, and the rules or the classifier at each threshold.
func crossValidate(w io.Writer, sets []set, opts crisis.TrainOptions) error {
	var thresholds [][2]float64
	for _, v := range []float64{0, 0.05, 0.1} {
		for _, t := range []float64{0.3, 0.5, 0.7} {
			thresholds = append(thresholds, [2]float64{t, v})
		}
	}
	rules, err := crisis.NewWithModel(nil)
	if err != nil {
		return err
	}
	total := make([]result, len(thresholds)+1)
	fmt.Fprintf(w, "%-22s %-16s", "left out", "rules alone")
	for _, t := range thresholds {
		fmt.Fprintf(w, " %-16s", fmt.Sprintf("t %.2f v %.2f", t[0], t[1]))
	}
	fmt.Fprintln(w)
	for i, held := range sets {
		var train []crisisset.Example
		for j, s := range sets {
			if j != i {
				train = append(train, s.examples...)
			}
		}
		b, err := crisis.Train(examples(train), opts)
		if err != nil {
			return err
		}
		d, err := crisis.NewWithModel(b)
		if err != nil {
			return err
		}
		r := measure(rules, held.examples, nil)
		add(&total[0], r)
		fmt.Fprintf(w, "%-22s %-16s", held.name, cell(r))
		for k, t := range thresholds {
			r := measure(d, held.examples, &t)
			add(&total[k+1], r)
			fmt.Fprintf(w, " %-16s", cell(r))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-22s", "all")
	for _, r := range total {
		fmt.Fprintf(w, " %-16s", cell(r))
	}
	fmt.Fprintln(w, "\n(each cell: recall / false-trip rate)")
	return nil
}

func add(t *result, r result) {
	t.crisis += r.crisis
	t.found += r.found
	t.safe += r.safe
	t.falseTrips += r.falseTrips
}

func cell(r result) string { return fmt.Sprintf("%.3f / %.3f", r.recall(), r.falseRate()) }
