// Command evalsafety measures the crisis detector (internal/safety/crisis)
// on a labelled set and prints its recall and false-trip rate.
//
//	go run ./tools/evalsafety [-set FILE[,FILE]] [-guard-fake | -guard-url URL -guard-model NAME [-guard-key KEY] [-guard-chat]]
//	                          [-min-recall R] [-max-false-trips F]
//
// The set is JSON lines, one message a line:
//
//	{"text": "...", "label": "crisis"|"safe", "kind": "suicidal-ideation"|"self-harm"|"", "note": "..."}
//
// by default the package's held-out sets (internal/safety/crisis/testdata/final*.jsonl, each written blind and never
// trained on), each measured on its own and then together; -set gives
// another of the same format, or several separated by commas. It prints recall per kind and
// overall, the false-trip rate overall and per kind found, and lists the
// misses and the false trips. With a guard it also asks the guard about
// every message and prints the figures of the detector or the guard, as a
// second opinion would give them: -guard-url an OpenAI-compatible
// moderation endpoint (or with -guard-chat a guard model behind chat
// completions), -guard-fake the fake upstream's guard model, in process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/companionhq/companion/internal/safety/crisis"
	"github.com/companionhq/companion/tools/internal/crisisset"
	"github.com/companionhq/companion/tools/internal/gotool"
)

func main() { gotool.Main("evalsafety", run) }

// defaultSets are the package's held-out sets, from the module's root:
// each written blind, by a writer who saw neither the detector nor the
// other sets, and never trained on.
var defaultSets = []string{
	"internal/safety/crisis/testdata/final.jsonl",
	"internal/safety/crisis/testdata/final2.jsonl",
	"internal/safety/crisis/testdata/final3.jsonl",
	"internal/safety/crisis/testdata/final4.jsonl",
	"internal/safety/crisis/testdata/final5.jsonl",
}

// config is the command line.
type config struct {
	set        string
	guardURL   string
	guardModel string
	guardKey   string
	guardChat  bool
	guardFake  bool
	// minRecall and maxFalse, when set, fail the run when the detector
	// alone, over every set together, finds less or trips more.
	minRecall, maxFalse float64
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("evalsafety", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.set, "set", "", "labelled set, JSON lines, or several separated by commas (default: the crisis package's held-out sets, "+strings.Join(defaultSets, ",")+")")
	fs.StringVar(&c.guardURL, "guard-url", "", "base URL of an OpenAI-compatible moderation endpoint (POST {url}/v1/moderations), as a second opinion")
	fs.StringVar(&c.guardModel, "guard-model", "", "model the guard is asked with")
	fs.StringVar(&c.guardKey, "guard-key", "", "bearer key of the guard, if it needs one")
	fs.BoolVar(&c.guardChat, "guard-chat", false, "the guard is a guard model (Llama Guard's answers) behind /v1/chat/completions, not a moderation endpoint")
	fs.BoolVar(&c.guardFake, "guard-fake", false, "the guard is the fake upstream's guard model, in process (offline)")
	fs.Float64Var(&c.minRecall, "min-recall", 0, "fail when the detector alone, over every set together, has a lower recall")
	fs.Float64Var(&c.maxFalse, "max-false-trips", 1, "fail when the detector alone, over every set together, trips more safe messages than this share")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: evalsafety [flags]\n\nMeasures the crisis detector on a labelled set; prints recall and false trips.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.guardURL == "" && (c.guardModel != "" || c.guardKey != "" || c.guardChat) {
		return c, errors.New("-guard-model, -guard-key and -guard-chat need -guard-url")
	}
	if c.guardFake && c.guardURL != "" {
		return c, errors.New("-guard-fake and -guard-url name two guards: give one")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	paths := strings.Split(cfg.set, ",")
	if cfg.set == "" {
		root, err := gotool.ModuleRoot(ctx)
		if err != nil {
			return err
		}
		paths = nil
		for _, p := range defaultSets {
			paths = append(paths, filepath.Join(root, p))
		}
	}
	var g guard
	switch {
	case cfg.guardURL != "":
		g = newGuard(cfg.guardURL, cfg.guardModel, cfg.guardKey, cfg.guardChat)
	case cfg.guardFake:
		var stop func()
		g, stop = fakeGuard()
		defer stop()
	}
	d := crisis.New()
	// Several sets are measured one after the other, then together.
	all := results{guard: g != nil}
	for _, p := range paths {
		set, err := crisisset.Read(p)
		if err != nil {
			return err
		}
		res, err := evaluate(ctx, set, d, g)
		if err != nil {
			return err
		}
		report(stdout, p, res)
		all.outcomes = append(all.outcomes, res.outcomes...)
	}
	f := count(all, false)
	if len(paths) > 1 {
		fmt.Fprintf(stdout, "the %d sets together: %d messages, %d crisis, %d safe\n\n", len(paths), len(all.outcomes), sum(f.crises), f.safes)
		table(stdout, "detector alone", f)
		if all.guard {
			table(stdout, "detector or guard", count(all, true))
		}
	}
	recall := float64(sum(f.caught)) / float64(max(sum(f.crises), 1))
	falseTrips := float64(sum(f.tripped)) / float64(max(f.safes, 1))
	if recall < cfg.minRecall || falseTrips > cfg.maxFalse {
		return fmt.Errorf("the detector's recall is %.3f (at least %.3f wanted) and its false-trip rate %.3f (at most %.3f wanted)",
			recall, cfg.minRecall, falseTrips, cfg.maxFalse)
	}
	return nil
}

// outcome is what was decided about one message.
type outcome struct {
	crisisset.Example
	found   crisis.Finding
	guarded bool // the guard flagged it; false without a guard
}

// results are the outcomes of a set, and whether a guard was asked.
type results struct {
	outcomes []outcome
	guard    bool
}

// evaluate runs the detector, and the guard when there is one, on every
// message.
func evaluate(ctx context.Context, set []crisisset.Example, d *crisis.Detector, g guard) (results, error) {
	res := results{guard: g != nil}
	for _, e := range set {
		o := outcome{Example: e, found: d.Detect(e.Text)}
		if g != nil {
			flagged, err := g.SelfHarm(ctx, e.Text)
			if err != nil {
				return res, fmt.Errorf("asking the guard about %q: %w", shorten(e.Text, 40), err)
			}
			o.guarded = flagged
		}
		res.outcomes = append(res.outcomes, o)
	}
	return res, nil
}

// figures counts one way of deciding over a set.
type figures struct {
	crises, caught map[string]int // per labelled kind
	safes          int
	tripped        map[string]int // per kind found ("guard" for the guard's own)
}

func count(res results, withGuard bool) figures {
	f := figures{crises: map[string]int{}, caught: map[string]int{}, tripped: map[string]int{}}
	for _, o := range res.outcomes {
		hit := o.found.Detected() || withGuard && o.guarded
		kind := o.found.Kind
		if kind == "" {
			kind = "guard"
		}
		if o.Label == "crisis" {
			f.crises[o.Kind]++
			if hit {
				f.caught[o.Kind]++
			}
			continue
		}
		f.safes++
		if hit {
			f.tripped[kind]++
		}
	}
	return f
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func ratio(a, b int) string {
	if b == 0 {
		return "    -"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

// report prints the figures, then the misses and false trips of the
// detector alone.
func report(w io.Writer, path string, res results) {
	f := count(res, false)
	fmt.Fprintf(w, "set %s: %d messages, %d crisis (%d %s, %d %s), %d safe\n\n", path, len(res.outcomes),
		sum(f.crises), f.crises[crisis.KindSuicidalIdeation], crisis.KindSuicidalIdeation,
		f.crises[crisis.KindSelfHarm], crisis.KindSelfHarm, f.safes)
	table(w, "detector alone", f)
	if res.guard {
		table(w, "detector or guard", count(res, true))
	}
	var misses, trips, wrongKind []string
	for _, o := range res.outcomes {
		switch {
		case o.Label == "crisis" && !o.found.Detected():
			misses = append(misses, fmt.Sprintf("  %-17s %-13s %s", o.Kind, o.Note, shorten(o.Text, 90)))
		case o.Label == "crisis" && o.found.Kind != o.Kind:
			wrongKind = append(wrongKind, fmt.Sprintf("  %-17s as %-17s %s", o.Kind, o.found.Kind, shorten(o.Text, 80)))
		case o.Label == "safe" && o.found.Detected():
			trips = append(trips, fmt.Sprintf("  %-17s %-13s %s", o.found.Kind+"/"+o.found.Cue, o.Note, shorten(o.Text, 80)))
		}
	}
	list(w, "misses (detector)", misses)
	list(w, "false trips (detector; kind/cue, note)", trips)
	list(w, "found under the other kind (detector)", wrongKind)
}

func table(w io.Writer, title string, f figures) {
	fmt.Fprintf(w, "%s\n", title)
	fmt.Fprintf(w, "  %-19s %-17s %s\n", "", "recall", "false trips")
	for _, k := range []string{crisis.KindSuicidalIdeation, crisis.KindSelfHarm} {
		fmt.Fprintf(w, "  %-19s %s %-11s %s %s\n", k, ratio(f.caught[k], f.crises[k]), fmt.Sprintf("(%d/%d)", f.caught[k], f.crises[k]),
			ratio(f.tripped[k], f.safes), fmt.Sprintf("(%d/%d)", f.tripped[k], f.safes))
	}
	if n := f.tripped["guard"]; n > 0 {
		fmt.Fprintf(w, "  %-19s %-17s %s %s\n", "guard only", "", ratio(n, f.safes), fmt.Sprintf("(%d/%d)", n, f.safes))
	}
	caught, crises, tripped := sum(f.caught), sum(f.crises), sum(f.tripped)
	fmt.Fprintf(w, "  %-19s %s %-11s %s %s\n\n", "overall", ratio(caught, crises), fmt.Sprintf("(%d/%d)", caught, crises),
		ratio(tripped, f.safes), fmt.Sprintf("(%d/%d)", tripped, f.safes))
}

func list(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d\n%s\n\n", title, len(lines), strings.Join(lines, "\n"))
}

// shorten returns text on one line, cut to n runes with an ellipsis.
func shorten(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	return string(r[:n-1]) + "…"
}
