//go:build linux

package main

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"
)

// ms renders a duration in milliseconds, with the precision that matters
// at its size.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch a := max(f, -f); {
	case a < 10:
		return fmt.Sprintf("%.2f", f)
	case a < 100:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.0f", f)
}

// mb renders bytes in megabytes (10^6 bytes).
func mb(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(b)/1e6)
}

func cores(c float64) string {
	if c == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", c)
}

// printTable prints the comparison's one table and its legend.
func printTable(w io.Writer, rows []row, cfg config) {
	fmt.Fprintf(w, "\n%s per measurement after %s of warm-up; %d tokens per answer; %d CPUs; %s\n\n",
		cfg.duration, cfg.warmup, answerTokens, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tendpoint\tconns\treq/s\tp50 ms\tp99 ms\tttfe p50\tttfe p99\terrors\tidle MB\tanon MB\tpeak MB\tcpu\tcpu ms/req\tcpu up\tcpu load\tratio\tadded p50/p99 ms\t")
	for _, r := range rows {
		ttfe50, ttfe99 := "-", "-"
		if len(r.st.ttfe) > 0 {
			ttfe50, ttfe99 = ms(quantile(r.st.ttfe, 0.5)), ms(quantile(r.st.ttfe, 0.99))
		}
		rs, as := "-", "-"
		if q, of, ok := ratio(rows, &r); ok {
			rs = fmt.Sprintf("%.2fx %s", q, of)
		}
		if p50, p99, ok := added(rows, &r); ok {
			as = fmt.Sprintf("+%s / +%s", ms(p50), ms(p99))
		}
		perReq := "-"
		if rps := r.st.rps(); rps > 0 && r.cpu > 0 {
			perReq = fmt.Sprintf("%.2f", r.cpu/rps*1000)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.system, r.endpoint, r.conns, r.st.rps(),
			ms(quantile(r.st.lat, 0.5)), ms(quantile(r.st.lat, 0.99)), ttfe50, ttfe99,
			r.st.errors(), mb(r.idle), mb(r.idleAnon), mb(r.peak),
			cores(r.cpu), perReq, cores(r.cpuUpstream), cores(r.cpuLoad), rs, as)
	}
	tw.Flush()
	fmt.Fprint(w, `
req/s: answers completed per second (closed loop: each connection sends its next request when the last answer ended).
system: "upstream alone" is the fake OpenAI-compatible upstream (streamed chat completions); "via upstream" the service in front of it
(-model-base-url) on SQLite; "fake" the service on its in-process fake model, on SQLite or PostgreSQL.
p50/p99: request to end of answer. ttfe: request to the first event of a stream.
idle/peak MB: resident memory (VmRSS) of the process under test before any load and at its highest during the measurement.
anon MB: the anonymous part of idle (RssAnon: heap, stacks); the rest is mostly the binary's own mapped pages, which vary
by megabytes for the same binary with how the kernel caches its file.
cpu, cpu up, cpu load: cores used by the process under test, by the upstream behind it, and by this load generator.
cpu ms/req: CPU time of the process under test per answer; steadier than req/s on a busy machine.
ratio: throughput against the upstream alone at the same connections, or PostgreSQL against SQLite.
added: service p50/p99 minus upstream p50/p99, at one connection.
`)
}

func connections(n int) string {
	if n == 1 {
		return "1 connection"
	}
	return fmt.Sprintf("%d connections", n)
}

// printTargets compares the figures with the performance targets.
func printTargets(w io.Writer, rows []row) {
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	var lines []string
	maxConns := 0
	for _, r := range rows {
		maxConns = max(maxConns, r.conns)
	}
	counts := []int{1, maxConns}
	if maxConns <= 1 {
		counts = counts[:1] // -conns 1: one line each, not two
	}
	for _, ep := range []string{"generate", "stream"} {
		for _, c := range counts {
			s := find(rows, sysProxied, ep, c)
			if s == nil {
				continue
			}
			q, _, ok := ratio(rows, s)
			if !ok {
				continue
			}
			lines = append(lines, fmt.Sprintf("service/upstream throughput >= 0.5, %s, %s: %.2f %s", ep, connections(c), q, verdict(q >= 0.5)))
			if p50, p99, ok := added(rows, s); ok {
				lines = append(lines, fmt.Sprintf("added latency p50 < 0.5 ms, p99 < 3 ms, %s, 1 connection: %s / %s ms %s",
					ep, ms(p50), ms(p99), verdict(p50 < 500*time.Microsecond && p99 < 3*time.Millisecond)))
			}
		}
	}
	if r := find(rows, sysFakeSQLite, "generate", 16); r != nil {
		p99 := quantile(r.st.lat, 0.99)
		lines = append(lines, fmt.Sprintf("fake model, SQLite, generate, 16 connections: >= 3000/s and p99 < 50 ms: %.0f/s, %s ms %s",
			r.st.rps(), ms(p99), verdict(r.st.rps() >= 3000 && p99 < 50*time.Millisecond)))
		if p := find(rows, sysFakePG, "generate", 16); p != nil {
			if q, _, ok := ratio(rows, p); ok {
				lines = append(lines, fmt.Sprintf("fake model, PostgreSQL within 2x of SQLite, generate, 16 connections: %.2fx %s", q, verdict(q >= 0.5)))
			}
		}
	}
	for _, sys := range []string{sysFakeSQLite, sysFakePG} {
		if r := find(rows, sys, "generate", 1); r != nil && r.idle > 0 {
			lines = append(lines, fmt.Sprintf("idle resident memory < 40 MB, %s: %s MB (%s MB anonymous) %s", sys, mb(r.idle), mb(r.idleAnon), verdict(r.idle < 40e6)))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntargets:")
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}
