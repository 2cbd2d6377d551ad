//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/companionhq/companion/tools/internal/gotool"
)

// streamsResult is what opening many streams at once showed.
type streamsResult struct {
	store      string
	n          int
	launched   int
	opened     int
	errs       map[string]int
	endedEarly int64
	// heldOpen is how many were still open when memory was read.
	heldOpen   int
	openTime   time.Duration
	ttfe       []time.Duration // sorted
	idle, held int64
	// serverOpen and goroutines are the service's own counts while all
	// streams were held (companion_streams_open, go_goroutines); stack and
	// heap its Go runtime's stack and heap in use then, in bytes.
	serverOpen, goroutines string
	stack, heap            float64
	cpuHeld                float64
}

// streams opens cfg.streams streams at once on each store and prints what
// each open stream costs.
func (h *harness) streams(ctx context.Context, stdout io.Writer) error {
	n := h.cfg.streams
	// Each stream is a connection, so a file, in the harness and in the
	// service (which inherits the limit).
	need := uint64(n) + 1024
	limit, err := raiseFileLimit(need)
	if err != nil || limit < need {
		return fmt.Errorf("%d streams need %d open files in this process and in the service; the limit is %d (%v): raise the hard limit, e.g. ulimit -Hn %d, as root", n, need, limit, err, need)
	}
	type store struct {
		name  string
		setup func() (string, func(), error)
	}
	var stores []store
	if h.cfg.systems["sqlite"] {
		stores = append(stores, store{"SQLite", h.sqlite("streams")})
	}
	if h.cfg.systems["postgres"] {
		stores = append(stores, store{"PostgreSQL", h.postgres(ctx)})
	}
	var results []streamsResult
	var notes []string
	for _, s := range stores {
		dbURL, cleanup, err := s.setup()
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: skipped, %v", s.name, err))
			h.logf("%s: skipped, %v", s.name, err)
			continue
		}
		r, err := h.openStreams(ctx, s.name, dbURL)
		cleanup()
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	printStreams(stdout, results, h.cfg)
	for _, n := range notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	return nil
}

// openStreams starts the service on the fake model with a slow pace and
// opens cfg.streams streams, at most cfg.openConcurrency waiting for their
// first event at a time; once all are open it holds them for cfg.hold and
// reads the service's memory.
func (h *harness) openStreams(ctx context.Context, store, dbURL string) (streamsResult, error) {
	n := h.cfg.streams
	res := streamsResult{store: store, n: n, errs: map[string]int{}}
	svc, err := h.startService(ctx, "service-streams-"+strings.ToLower(store), nil,
		"-model", "fake", "-fake-token-delay", h.cfg.streamTokenDelay.String(),
		"-max-streams", strconv.Itoa(n), "-database-url", dbURL)
	if err != nil {
		return res, err
	}
	defer svc.Stop()
	pid := svc.Cmd.Process.Pid
	time.Sleep(time.Second)
	res.idle, _ = rss(pid)
	// No cap on tokens: the whole answer, one token per delay, outlasts
	// the opening of every stream.
	_, str := h.serviceTargets(svc.URL, 0)
	client := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: -1,
		DisableCompression:  true,
		ReadBufferSize:      4 << 10,
		WriteBufferSize:     4 << 10,
	}}

	h.logf("%s: opening %d streams (%d at a time), a token every %s", store, n, h.cfg.openConcurrency, h.cfg.streamTokenDelay)
	holdCtx, release := context.WithCancel(ctx)
	defer release()
	type opened struct {
		ttfe time.Duration
		err  string
	}
	results := make(chan opened, n)
	sem := make(chan struct{}, h.cfg.openConcurrency)
	var (
		wg    sync.WaitGroup
		early atomic.Int64
	)
	start := time.Now()
	// Streams are launched until all are, or until too many failed: a
	// refused stream may have waited long for its answer.
	var failures atomic.Int64
	launched := make(chan int, 1)
	go func() {
		count := 0
		defer func() { launched <- count }()
		for range n {
			if failures.Load() > int64(h.cfg.maxErrors) {
				return
			}
			select {
			case sem <- struct{}{}:
			case <-holdCtx.Done():
				return
			}
			count++
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := false
				report := func(o opened) {
					if !first {
						first = true
						if o.err != "" {
							failures.Add(1)
						}
						results <- o
						<-sem
					}
				}
				defer report(opened{err: "no event"})
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(holdCtx, http.MethodPost, str.url, bytes.NewReader(str.body(requests.Add(1))))
				req.Header = str.header.Clone()
				resp, err := client.Do(req)
				if err != nil {
					report(opened{err: "transport: " + shortErr(err)})
					return
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					_, _ = io.Copy(io.Discard, resp.Body)
					report(opened{err: strconv.Itoa(resp.StatusCode)})
					return
				}
				br := bufio.NewReaderSize(resp.Body, 4<<10)
				for {
					line, err := br.ReadSlice('\n')
					if bytes.HasPrefix(line, []byte("data:")) {
						report(opened{ttfe: time.Since(t0)})
						break
					}
					if err != nil && err != bufio.ErrBufferFull {
						report(opened{err: "transport: " + shortErr(err)})
						return
					}
				}
				_, _ = io.Copy(io.Discard, br)
				if holdCtx.Err() == nil {
					// The stream ended on its own, before all were released.
					early.Add(1)
				}
			}()
		}
	}()
	deadline := time.After(10 * time.Minute)
	total, got := -1, 0
	for total < 0 || got < total {
		select {
		case total = <-launched:
			res.launched = total
		case o := <-results:
			got++
			if o.err != "" {
				res.errs[o.err]++
				continue
			}
			res.opened++
			res.ttfe = append(res.ttfe, o.ttfe)
		case <-deadline:
			return res, fmt.Errorf("%s: streams still opening after 10 minutes", store)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	res.openTime = time.Since(start)
	slices.Sort(res.ttfe)
	h.logf("%s: %d open in %s, %d failed, %d not tried; holding them %s", store, res.opened, res.openTime.Round(time.Millisecond), res.launched-res.opened, n-res.launched, h.cfg.hold)

	cpu0, _ := cpuTime(pid)
	t0 := time.Now()
	time.Sleep(h.cfg.hold)
	res.held, _ = rss(pid)
	res.heldOpen = res.opened - int(early.Load())
	cpu1, _ := cpuTime(pid)
	res.cpuHeld = (cpu1 - cpu0).Seconds() / time.Since(t0).Seconds()
	m := scrape(svc.URL+"/metrics", "companion_streams_open", "go_goroutines", "go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes")
	res.serverOpen, res.goroutines = m.get("companion_streams_open"), m.get("go_goroutines")
	res.stack, _ = strconv.ParseFloat(m["go_memstats_stack_inuse_bytes"], 64)
	res.heap, _ = strconv.ParseFloat(m["go_memstats_heap_inuse_bytes"], 64)
	res.endedEarly = early.Load()
	release()
	wg.Wait()
	if exited, err := svc.Exited(); exited {
		return res, fmt.Errorf("%s: the service exited: %v\n%s", store, err, gotool.Tail(svc.Log))
	}
	return res, nil
}

// metrics are values read from a Prometheus endpoint, by name.
type metrics map[string]string

// get is the named value, or "?" when it could not be read.
func (m metrics) get(name string) string {
	if v := m[name]; v != "" {
		return v
	}
	return "?"
}

// scrape reads the values of the named unlabelled metrics from a
// Prometheus endpoint.
func scrape(url string, names ...string) metrics {
	vals := metrics{}
	resp, err := http.Get(url)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) == 2 && slices.Contains(names, f[0]) {
				vals[f[0]] = f[1]
			}
		}
	}
	return vals
}

// shortErr keeps the end of a transport error, where its cause is.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

func printStreams(w io.Writer, results []streamsResult, cfg config) {
	fmt.Fprintf(w, "\n%d streams at once on the fake model, a token every %s, held %s; %d CPUs; %s\n\n",
		cfg.streams, cfg.streamTokenDelay, cfg.hold, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tstreams\topen\terrors\tnot tried\tended early\theld open\topened in s\tttfe p50 ms\tttfe p99 ms\tidle MB\theld MB\tKiB/stream\tstack KiB\theap KiB\tcpu held\tserver open\tgoroutines\t")
	for _, r := range results {
		per, stack, heap := "-", "-", "-"
		if r.heldOpen > 0 && r.held > 0 {
			per = fmt.Sprintf("%.1f", float64(r.held-r.idle)/float64(r.heldOpen)/1024)
		}
		if r.heldOpen > 0 && r.stack > 0 {
			stack = fmt.Sprintf("%.1f", r.stack/float64(r.heldOpen)/1024)
			heap = fmt.Sprintf("%.1f", r.heap/float64(r.heldOpen)/1024)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t\n",
			r.store, r.n, r.opened, r.launched-r.opened, r.n-r.launched, r.endedEarly, r.heldOpen, r.openTime.Seconds(),
			ms(quantile(r.ttfe, 0.5)), ms(quantile(r.ttfe, 0.99)), mb(r.idle), mb(r.held), per, stack, heap, r.cpuHeld,
			r.serverOpen, r.goroutines)
	}
	tw.Flush()
	for _, r := range results {
		if len(r.errs) > 0 {
			keys := slices.Sorted(maps.Keys(r.errs))
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s: %d", k, r.errs[k]))
			}
			fmt.Fprintf(w, "%s errors by status: %s\n", r.store, strings.Join(parts, ", "))
		}
	}
	fmt.Fprint(w, `
open: streams whose first event arrived. errors: streams refused or broken before it (by status below).
not tried: streams never opened because more than -max-errors had failed.
ended early: streams whose answer ended before all were open and held (raise -stream-token-delay).
held open: streams open when memory was read. KiB/stream: (held - idle resident memory) / held open.
stack KiB, heap KiB: the service's goroutine stacks and Go heap in use while they were held, per stream held open
(go_memstats_stack_inuse_bytes, go_memstats_heap_inuse_bytes; the heap includes what the idle service holds).
cpu held: cores the service used while holding them all (each stream gets a token every delay).
server open, goroutines: the service's companion_streams_open and go_goroutines while they were held.
`)
	for _, r := range results {
		if r.heldOpen > 0 {
			per := float64(r.held-r.idle) / float64(r.heldOpen) / 1024
			ok := per < 64 && r.heldOpen == r.n
			v := "ok"
			if !ok {
				v = "MISSED"
			}
			fmt.Fprintf(w, "target, %s: %d streams open at once, no errors, < 64 KiB each: %d held open, %d errors, %.1f KiB %s\n",
				r.store, r.n, r.heldOpen, r.launched-r.opened, per, v)
		}
	}
}
