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
	"slices"
	"sort"
	"strings"

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
	fs.IntVar(&opts.Orders, "orders", opts.Orders, "orders of the examples the weights are averaged over (for -cv)")
	fs.Float64Var(&opts.CrisisWeight, "crisis-weight", opts.CrisisWeight, "weight of a crisis example's error (for -cv)")
	misses := fs.String("misses", "", "with -cv: a training set's name whose misses and false trips, left out, are listed")
	heldout := fs.String("heldout", "", "with -cv: comma-separated held-out sets, measured with a model trained on every training set")
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
		var held []set
		for _, p := range strings.Split(*heldout, ",") {
			if p == "" {
				continue
			}
			ex, err := crisisset.Read(p)
			if err != nil {
				return err
			}
			held = append(held, set{name: filepath.Base(p), examples: ex})
		}
		if err := crossValidate(stdout, sets, held, opts, *misses); err != nil {
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

// measure runs d on set; with th, the classifier's thresholds are th.
func measure(d *crisis.Detector, set []crisisset.Example, th *crisis.Thresholds) result {
	var r result
	if th != nil {
		d = d.WithThresholds(*th)
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
// rules alone, and the rules or the classifier at each choice of
// thresholds, a row each; then, trained on every set, the held-out sets.
func crossValidate(w io.Writer, sets, held []set, opts crisis.TrainOptions, misses string) error {
	// missed lists the misses of the set -misses names, after the table.
	var missed func()
	if misses != "" && !slices.ContainsFunc(sets, func(s set) bool { return s.name == misses || s.name == misses+".jsonl" }) {
		return fmt.Errorf("-misses %s: no training set has that name", misses)
	}
	base := crisis.New().Thresholds()
	var grid []crisis.Thresholds
	for _, u := range []float64{0.6, 0.7, 0.85} {
		for _, t := range []float64{0.3, 0.5} {
			for _, v := range []float64{0.05, 0.1} {
				grid = append(grid, crisis.Thresholds{Signalled: t, Unsignalled: u, Damped: base.Damped, Veto: v})
			}
		}
	}
	rules, err := crisis.NewWithModel(nil)
	if err != nil {
		return err
	}
	// cells[k][i]: threshold choice k (0 the rules alone) on set i.
	cells := make([][]result, len(grid)+1)
	for k := range cells {
		cells[k] = make([]result, len(sets)+len(held))
	}
	for i, out := range sets {
		var train []crisisset.Example
		for j, s := range sets {
			if j != i {
				train = append(train, s.examples...)
			}
		}
		d, err := trained(train, opts)
		if err != nil {
			return err
		}
		if out.name == misses || out.name == misses+".jsonl" {
			missed = func() { listMisses(w, d, out) }
		}
		cells[0][i] = measure(rules, out.examples, nil)
		for k := range grid {
			cells[k+1][i] = measure(d, out.examples, &grid[k])
		}
	}
	if len(held) > 0 {
		var all []crisisset.Example
		for _, s := range sets {
			all = append(all, s.examples...)
		}
		d, err := trained(all, opts)
		if err != nil {
			return err
		}
		for i, h := range held {
			cells[0][len(sets)+i] = measure(rules, h.examples, nil)
			for k := range grid {
				cells[k+1][len(sets)+i] = measure(d, h.examples, &grid[k])
			}
		}
	}
	fmt.Fprintf(w, "%-22s %-12s", "thresholds", "all-left-out")
	for _, s := range sets {
		fmt.Fprintf(w, " %-11s", short(s.name))
	}
	for _, s := range held {
		fmt.Fprintf(w, " %-11s", "*"+short(s.name))
	}
	fmt.Fprintln(w)
	for k, row := range cells {
		name := "rules alone"
		if k > 0 {
			g := grid[k-1]
			name = fmt.Sprintf("s%.2f u%.2f v%.2f", g.Signalled, g.Unsignalled, g.Veto)
		}
		var total result
		for _, r := range row[:len(sets)] {
			add(&total, r)
		}
		fmt.Fprintf(w, "%-22s %-12s", name, cell(total))
		for _, r := range row {
			fmt.Fprintf(w, " %-11s", cell(r))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "(each cell: recall/false-trip rate; a set marked * is held out, measured with the model every training set trains)")
	if missed != nil {
		missed()
	}
	return nil
}

// listMisses lists what d, at its own thresholds, gets wrong of s.
func listMisses(w io.Writer, d *crisis.Detector, s set) {
	fmt.Fprintf(w, "\n%s, left out, at the default thresholds:\n", s.name)
	for _, e := range s.examples {
		f := d.Detect(e.Text)
		switch {
		case e.Label == "crisis" && !f.Detected():
			fmt.Fprintf(w, "  miss   %-18s %s\n", e.Note, e.Text)
		case e.Label != "crisis" && f.Detected():
			fmt.Fprintf(w, "  false  %-18s %s  (%s)\n", e.Note, e.Text, f.Cue)
		}
	}
}

// trained is the detector with the classifier ex trains.
func trained(ex []crisisset.Example, opts crisis.TrainOptions) (*crisis.Detector, error) {
	b, err := crisis.Train(examples(ex), opts)
	if err != nil {
		return nil, err
	}
	return crisis.NewWithModel(b)
}

func short(name string) string {
	name = strings.TrimSuffix(name, ".jsonl")
	if len(name) > 11 {
		name = name[:11]
	}
	return name
}

func add(t *result, r result) {
	t.crisis += r.crisis
	t.found += r.found
	t.safe += r.safe
	t.falseTrips += r.falseTrips
}

func cell(r result) string { return fmt.Sprintf("%.3f/%.3f", r.recall(), r.falseRate()) }
