//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	"github.com/companionhq/companion/tools/internal/gotool"
	"github.com/companionhq/companion/tools/internal/proc"
)

// answerTokens is the length of every answer measured: the fake model and
// the fake upstream answer the question below in the wanderer's voice with
// more tokens than that, and maxOutputTokens cuts the answer there.
const answerTokens = 64

// question is what every measured request asks. The fakes quote it (its
// first 80 characters), so short words make the answer long enough.
const question = "So I am at a loss: do I go to my old job or to a new one? Is it ok to be so in two minds, and if so, how do I act on it?"

// personality is the voice of every measured answer.
const personality = "wanderer"

// harness holds what every measurement shares.
type harness struct {
	cfg    config
	dir    string
	stderr io.Writer
	// tag makes this run's thread ids unique.
	tag string
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.stderr, format+"\n", args...)
}

// startUpstream starts the fake OpenAI-compatible upstream with no delay.
func (h *harness) startUpstream(ctx context.Context) (*proc.Proc, error) {
	return proc.Start(ctx, "upstream", filepath.Join(h.dir, "upstream.log"), proc.AnnouncedByFakes, proc.Env(),
		filepath.Join(h.dir, "fakes"), "openai", "-addr", "127.0.0.1:0")
}

// startService starts the service on a free port, without rate limits or
// authentication, with args and the -service-args.
func (h *harness) startService(ctx context.Context, name string, env []string, args ...string) (*proc.Proc, error) {
	all := append([]string{"serve", "-addr", "127.0.0.1:0", "-rate-limit", "0"}, args...)
	all = append(all, h.cfg.serviceArgs...)
	env = append(env[:len(env):len(env)], h.cfg.serviceEnv...)
	return proc.Start(ctx, name, filepath.Join(h.dir, name+".log"), proc.AnnouncedByService, proc.Env(env...),
		filepath.Join(h.dir, "companion"), all...)
}

// serviceTargets returns generate and stream requests to the service at
// base: each on a fresh thread, answerTokens long.
func (h *harness) serviceTargets(base string, maxTokens int) (generate, stream target) {
	req := map[string]any{
		"messages":       []map[string]string{{"role": "user", "content": question}},
		"threadId":       "\x00",
		"resourceId":     "bench",
		"runtimeContext": map[string]any{"metadata": map[string]string{"personality": personality}},
	}
	if maxTokens > 0 {
		req["modelSettings"] = map[string]int{"maxOutputTokens": maxTokens}
	}
	tmpl, _ := json.Marshal(req)
	before, after, _ := bytes.Cut(tmpl, []byte(`\u0000`))
	prefix := []byte("bench-" + h.tag + "-")
	body := func(n uint64) []byte {
		b := make([]byte, 0, len(tmpl)+32)
		b = append(b, before...)
		b = append(b, prefix...)
		b = strconv.AppendUint(b, n, 10)
		return append(b, after...)
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	generate = target{url: base + "/api/agents/companionAgent/generate", header: hdr, body: body}
	stream = target{url: base + "/api/agents/companionAgent/stream", header: hdr, body: body, stream: true,
		done: func(last []byte) bool { return bytes.Contains(last, []byte(`"type":"run-finish"`)) }}
	return generate, stream
}

// upstreamTarget returns streamed chat completions to the upstream at base,
// each with body.
func upstreamTarget(base string, body []byte) target {
	return target{
		url:    base + "/v1/chat/completions",
		header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer bench"}},
		body:   func(uint64) []byte { return body },
		stream: true,
		done:   func(last []byte) bool { return string(last) == "[DONE]" },
	}
}

// captureUpstreamRequest returns the body of the request the service sends
// its model provider for one generate request, so that the upstream alone
// is measured with exactly what the service asks of it. A short-lived
// service is pointed at a recording proxy in front of the upstream.
func (h *harness) captureUpstreamRequest(ctx context.Context, upstream string) ([]byte, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		captured []byte
	)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if captured == nil {
			captured = b
		}
		mu.Unlock()
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	svc, err := h.startService(ctx, "service-capture", []string{"OPENAI_API_KEY=bench"},
		"-model", "bench", "-model-base-url", "http://"+ln.Addr().String()+"/v1",
		"-database-url", "sqlite://"+filepath.Join(h.dir, "capture.db"))
	if err != nil {
		return nil, err
	}
	defer svc.Stop()
	gen, _ := h.serviceTargets(svc.URL, answerTokens)
	if _, err := probe(ctx, gen); err != nil {
		return nil, fmt.Errorf("the service in front of the upstream: %w\n%s", err, gotool.Tail(svc.Log))
	}
	mu.Lock()
	defer mu.Unlock()
	if captured == nil {
		return nil, fmt.Errorf("the service answered without calling the upstream")
	}
	return captured, nil
}

// row is one line of the table.
type row struct {
	system, endpoint string
	conns            int
	st               stats
	// idle and peak are the resident memory of the process under test,
	// before any load and at its highest during the measurement; idleAnon
	// the anonymous part of idle.
	idle, peak, idleAnon int64
	// cpu of the process under test, of the upstream behind it, and of the
	// load generator, in cores (CPU seconds per second).
	cpu, cpuUpstream, cpuLoad float64
}

// measureRow measures t at conns connections; under is the process under
// test, behind the upstream it calls (nil for none).
func (h *harness) measureRow(ctx context.Context, system, endpoint string, t target, conns int, under, behind *proc.Proc, idle, idleAnon int64) row {
	h.logf("measuring %s, %s, %d connection(s): %s warm-up, %s measured", system, endpoint, conns, h.cfg.warmup, h.cfg.duration)
	var (
		start             time.Time
		cpu0, up0, self0  time.Duration
		cpu1, up1, self1  time.Duration
		peak              int64
		stopSampling      = make(chan struct{})
		sampled           sync.WaitGroup
		pidUnder, pidBack = under.Cmd.Process.Pid, 0
	)
	if behind != nil {
		pidBack = behind.Cmd.Process.Pid
	}
	cpuOf := func(pid int) time.Duration {
		if pid == 0 {
			return 0
		}
		d, _ := cpuTime(pid)
		return d
	}
	var elapsed time.Duration
	window := func(begin bool) {
		if begin {
			start = time.Now()
			cpu0, up0, self0 = cpuOf(pidUnder), cpuOf(pidBack), selfCPU()
			sampled.Add(1)
			go func() {
				defer sampled.Done()
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					if r, err := rss(pidUnder); err == nil && r > peak {
						peak = r
					}
					select {
					case <-stopSampling:
						return
					case <-tick.C:
					}
				}
			}()
			return
		}
		cpu1, up1, self1 = cpuOf(pidUnder), cpuOf(pidBack), selfCPU()
		elapsed = time.Since(start)
		close(stopSampling)
		sampled.Wait()
	}
	st := measure(ctx, t, conns, h.cfg.warmup, h.cfg.duration, window)
	cores := func(d time.Duration) float64 {
		if elapsed <= 0 {
			return 0
		}
		return d.Seconds() / elapsed.Seconds()
	}
	r := row{system: system, endpoint: endpoint, conns: conns, st: st, idle: idle, idleAnon: idleAnon, peak: peak,
		cpu: cores(cpu1 - cpu0), cpuLoad: cores(self1 - self0)}
	if behind != nil {
		r.cpuUpstream = cores(up1 - up0)
	}
	if n := st.errors(); n > 0 {
		h.logf("  %d failed: %v", n, st.errs)
	}
	if exited, err := under.Exited(); exited {
		h.logf("  %s exited: %v\n%s", under.Name, err, gotool.Tail(under.Log))
	}
	// Let connections in TIME_WAIT and the processes' collectors settle.
	time.Sleep(500 * time.Millisecond)
	return r
}

// Names of the systems measured, as the table shows them.
const (
	sysUpstream   = "upstream alone"
	sysProxied    = "via upstream"
	sysFakeSQLite = "fake, SQLite"
	sysFakePG     = "fake, PostgreSQL"
)

// compare runs every measurement -systems selects and prints the table.
func (h *harness) compare(ctx context.Context, stdout io.Writer) error {
	type system struct {
		name   string
		env    []string
		args   []string
		behind *proc.Proc
		setup  func() (dbURL string, cleanup func(), err error)
	}
	var (
		rows    []row
		systems []system
	)
	on := h.cfg.systems
	if on["upstream"] || on["via"] {
		up, err := h.startUpstream(ctx)
		if err != nil {
			return err
		}
		defer up.Stop()
		h.logf("upstream at %s", up.URL)

		body, err := h.captureUpstreamRequest(ctx, up.URL)
		if err != nil {
			return err
		}
		upT := upstreamTarget(up.URL, body)
		if err := checkUpstream(ctx, upT); err != nil {
			return err
		}
		if on["upstream"] {
			upIdle, _ := rss(up.Cmd.Process.Pid)
			upAnon, _ := anonRSS(up.Cmd.Process.Pid)
			for _, c := range h.cfg.conns {
				rows = append(rows, h.measureRow(ctx, sysUpstream, "stream", upT, c, up, nil, upIdle, upAnon))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
		if on["via"] {
			systems = append(systems, system{sysProxied, []string{"OPENAI_API_KEY=bench"}, []string{"-model", "bench", "-model-base-url", up.URL + "/v1"}, up, h.sqlite("proxied")})
		}
	}
	if on["sqlite"] {
		systems = append(systems, system{sysFakeSQLite, nil, []string{"-model", "fake"}, nil, h.sqlite("fake")})
	}
	if on["postgres"] {
		systems = append(systems, system{sysFakePG, nil, []string{"-model", "fake"}, nil, h.postgres(ctx)})
	}
	var notes []string
	for i, s := range systems {
		dbURL, cleanup, err := s.setup()
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: skipped, %v", s.name, err))
			h.logf("%s: skipped, %v", s.name, err)
			continue
		}
		got, err := h.measureService(ctx, s.name, fmt.Sprintf("service-%d", i), s.env,
			append(s.args, "-database-url", dbURL), s.behind)
		cleanup()
		if err != nil {
			return err
		}
		rows = append(rows, got...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	printTable(stdout, rows, h.cfg)
	for _, n := range notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	printTargets(stdout, rows)
	return nil
}

// measureService starts a service, checks its answers, and measures
// generate and stream at each connection count.
func (h *harness) measureService(ctx context.Context, system, name string, env, args []string, behind *proc.Proc) ([]row, error) {
	svc, err := h.startService(ctx, name, env, args...)
	if err != nil {
		return nil, err
	}
	defer svc.Stop()
	h.logf("%s at %s", system, svc.URL)
	gen, str := h.serviceTargets(svc.URL, answerTokens)
	// Idle memory is read before the first request, once start-up is over.
	time.Sleep(time.Second)
	idle, _ := rss(svc.Cmd.Process.Pid)
	idleAnon, _ := anonRSS(svc.Cmd.Process.Pid)
	if err := checkService(ctx, gen, str); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", system, err, gotool.Tail(svc.Log))
	}
	var rows []row
	for _, c := range h.cfg.conns {
		for _, ep := range []struct {
			name string
			t    target
		}{{"generate", gen}, {"stream", str}} {
			rows = append(rows, h.measureRow(ctx, system, ep.name, ep.t, c, svc, behind, idle, idleAnon))
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
		}
	}
	return rows, nil
}

// sqlite returns the setup of a fresh SQLite database in the temporary
// directory.
func (h *harness) sqlite(name string) func() (string, func(), error) {
	return func() (string, func(), error) {
		return "sqlite://" + filepath.Join(h.dir, name+".db"), func() {}, nil
	}
}

// postgres returns the setup of a fresh schema on the PostgreSQL server,
// dropped afterwards; it fails when the server is unreachable.
func (h *harness) postgres(ctx context.Context) func() (string, func(), error) {
	return func() (string, func(), error) {
		if h.cfg.postgres == "" {
			return "", nil, fmt.Errorf("no PostgreSQL server given (-postgres)")
		}
		return freshSchema(ctx, h.cfg.postgres)
	}
}

// freshSchema is a new, empty schema on server (pgtest.NewSchema), and a
// function that drops it.
func freshSchema(ctx context.Context, server string) (string, func(), error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url, drop, err := pgtest.NewSchema(cctx, server, "companion_bench_")
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL unreachable: %v", err)
	}
	return url, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = drop(ctx)
	}, nil
}

// checkUpstream makes sure the upstream answers answerTokens tokens and
// ends its stream properly.
func checkUpstream(ctx context.Context, t target) error {
	b, err := probe(ctx, t)
	if err != nil {
		return err
	}
	lines := dataLines(b)
	tokens := 0
	for _, l := range lines {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(l, &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			tokens++
		}
	}
	if len(lines) == 0 || !t.done(lines[len(lines)-1]) {
		return fmt.Errorf("the upstream's stream does not end with [DONE]:\n%s", b)
	}
	if tokens != answerTokens {
		return fmt.Errorf("the upstream answered %d tokens, not %d", tokens, answerTokens)
	}
	return nil
}

// checkService makes sure the service answers answerTokens tokens, in
// generate and in stream, and ends its streams with run-finish.
func checkService(ctx context.Context, gen, str target) error {
	b, err := probe(ctx, gen)
	if err != nil {
		return err
	}
	var g struct {
		Usage struct {
			OutputTokens int `json:"outputTokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return fmt.Errorf("generate: %v", err)
	}
	if g.Usage.OutputTokens != answerTokens {
		return fmt.Errorf("generate answered %d tokens, not %d", g.Usage.OutputTokens, answerTokens)
	}
	b, err = probe(ctx, str)
	if err != nil {
		return err
	}
	lines := dataLines(b)
	texts := 0
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"type":"text"`)) {
			texts++
		}
	}
	if len(lines) == 0 || !str.done(lines[len(lines)-1]) {
		return fmt.Errorf("the stream does not end with run-finish:\n%s", b)
	}
	if texts != answerTokens {
		return fmt.Errorf("the stream has %d text events, not %d", texts, answerTokens)
	}
	return nil
}

// find is the row of system, endpoint and connection count, or nil.
func find(rows []row, system, endpoint string, conns int) *row {
	for i := range rows {
		if rows[i].system == system && rows[i].endpoint == endpoint && rows[i].conns == conns {
			return &rows[i]
		}
	}
	return nil
}

// ratio is r's throughput over that of the row it is compared with: the
// upstream alone for the service in front of it, SQLite for PostgreSQL;
// of names that row. ok is false for a row compared with none.
func ratio(rows []row, r *row) (q float64, of string, ok bool) {
	var base *row
	switch r.system {
	case sysProxied:
		base, of = find(rows, sysUpstream, "stream", r.conns), "upstream"
	case sysFakePG:
		base, of = find(rows, sysFakeSQLite, r.endpoint, r.conns), "SQLite"
	}
	if base == nil || base.st.rps() == 0 {
		return 0, "", false
	}
	return r.st.rps() / base.st.rps(), of, true
}

// added is what the service in front of the upstream adds to the upstream
// alone's p50 and p99, at one connection; ok is false for other rows.
func added(rows []row, r *row) (p50, p99 time.Duration, ok bool) {
	if r.system != sysProxied || r.conns != 1 {
		return 0, 0, false
	}
	u := find(rows, sysUpstream, "stream", 1)
	if u == nil || len(r.st.lat) == 0 || len(u.st.lat) == 0 {
		return 0, 0, false
	}
	return quantile(r.st.lat, 0.5) - quantile(u.st.lat, 0.5), quantile(r.st.lat, 0.99) - quantile(u.st.lat, 0.99), true
}
