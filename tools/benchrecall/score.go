package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// hit is one search result: a message id and the ids of its context.
type hit struct {
	id      string
	context []string
}

// outcome is how a search did on one question: whether every evidence
// message is among the results, and whether every one is among the
// results or their context.
type outcome struct {
	top, withContext bool
}

// judge scores the results of one question.
func judge(evidence []string, hits []hit) outcome {
	found, near := map[string]bool{}, map[string]bool{}
	for _, h := range hits {
		found[h.id], near[h.id] = true, true
		for _, c := range h.context {
			near[c] = true
		}
	}
	o := outcome{top: true, withContext: true}
	for _, e := range evidence {
		o.top = o.top && found[e]
		o.withContext = o.withContext && near[e]
	}
	return o
}

// system is what one searcher scored: an outcome per question, in the
// set's order, and the latency of each search when it was timed.
type system struct {
	name     string
	outcomes []outcome
	latency  []time.Duration
	// note is why a system has no figures (a store that could not be
	// reached).
	note string
}

// share returns the shares of questions, of kind or of all when kind is
// "", whose evidence was all in the results, and all in the results with
// their context; and how many questions that is.
func share(s *system, qs []Question, kind string) (top, ctx float64, n int) {
	var t, c int
	for i, q := range qs {
		if kind != "" && q.Kind != kind {
			continue
		}
		n++
		if s.outcomes[i].top {
			t++
		}
		if s.outcomes[i].withContext {
			c++
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return float64(t) / float64(n), float64(c) / float64(n), n
}

// quantile returns the q quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// report prints one table: for each system, the shares overall and per
// kind, top 10 and with context, then the search latency.
func report(w io.Writer, set *Set, limit int, systems []*system) {
	var messages, sessions int
	for _, p := range set.Personas {
		sessions += len(p.Sessions)
		for _, s := range p.Sessions {
			messages += len(s.Messages)
		}
	}
	fmt.Fprintf(w, "\nrecall set: seed %d, %d personas, %d sessions, %d messages, %d questions; top %d\n\n",
		set.Seed, len(set.Personas), sessions, messages, len(set.Questions), limit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "kind\tquestions\t")
	for _, s := range systems {
		fmt.Fprintf(tw, "%s top %d\t+context\t", s.name, limit)
	}
	fmt.Fprintln(tw)
	for _, kind := range append([]string{""}, kinds...) {
		name := kind
		if name == "" {
			name = "all"
		}
		_, _, n := share(systems[0], set.Questions, kind)
		fmt.Fprintf(tw, "%s\t%d\t", name, n)
		for _, s := range systems {
			if s.note != "" {
				fmt.Fprint(tw, "-\t-\t")
				continue
			}
			t, c, _ := share(s, set.Questions, kind)
			fmt.Fprintf(tw, "%.1f%%\t%.1f%%\t", 100*t, 100*c)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "search p50 / p99 ms\t\t")
	for _, s := range systems {
		if len(s.latency) == 0 {
			fmt.Fprint(tw, "-\t\t")
			continue
		}
		fmt.Fprintf(tw, "%s / %s\t\t", ms(quantile(s.latency, 0.5)), ms(quantile(s.latency, 0.99)))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	for _, s := range systems {
		if s.note != "" {
			fmt.Fprintf(w, "\n%s: %s\n", s.name, s.note)
		}
	}
}

// ms renders a duration in milliseconds.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	if f < 10 {
		return fmt.Sprintf("%.2f", f)
	}
	return fmt.Sprintf("%.1f", f)
}
