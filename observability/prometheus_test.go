package observability_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/embed"
	"github.com/companionhq/companion/internal/testkit"
)

// prometheusTools returns the paths of prometheus and promtool. When they
// are missing it runs .ci/prometheus, which installs Debian's package with
// CI=true or COMPANION_INSTALL=1 only; when they still cannot be had the
// test is skipped, and fails under CI.
func prometheusTools(t *testing.T) (prometheus, promtool string) {
	t.Helper()
	look := func() bool {
		var err1, err2 error
		prometheus, err1 = exec.LookPath("prometheus")
		promtool, err2 = exec.LookPath("promtool")
		return err1 == nil && err2 == nil
	}
	if look() {
		return prometheus, promtool
	}
	out, err := exec.Command("bash", filepath.Join("..", ".ci", "prometheus")).CombinedOutput()
	if look() {
		return prometheus, promtool
	}
	testkit.Unavailable(t, fmt.Sprintf("prometheus and promtool are not installed, and .ci/prometheus did not install them (%v):\n%s", err, out),
		"COMPANION_INSTALL=1 make test installs them")
	return "", ""
}

// TestPromtool runs Prometheus's own checks on the configuration, the alert
// rules and the rules' unit tests.
func TestPromtool(t *testing.T) {
	_, promtool := prometheusTools(t)
	for _, args := range [][]string{
		{"check", "config", "prometheus/prometheus.yml"},
		{"check", "rules", "prometheus/alerts.yml"},
		{"test", "rules", "prometheus/alerts_test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct {
	base string
}

// get decodes the data of a successful API answer into v.
func (p promAPI) get(ctx context.Context, path string, params url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: %v: %s", path, err, b)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, v)
}

// sample is one element of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates expr now and returns its samples' values by series.
func (p promAPI) query(ctx context.Context, expr string) (map[string]float64, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	var samples []sample
	switch data.ResultType {
	case "vector":
		if err := json.Unmarshal(data.Result, &samples); err != nil {
			return nil, err
		}
	case "scalar":
		var s sample
		if err := json.Unmarshal(data.Result, &s.Value); err != nil {
			return nil, err
		}
		samples = append(samples, s)
	default:
		return nil, fmt.Errorf("result of type %s", data.ResultType)
	}
	out := map[string]float64{}
	for _, s := range samples {
		str, _ := s.Value[1].(string)
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v: %v", s.Value[1], err)
		}
		out[fmt.Sprint(s.Metric)] = f
	}
	return out, nil
}

// waitFor polls expr until its single value is want.
func (p promAPI) waitFor(ctx context.Context, expr string, want float64) error {
	var last map[string]float64
	var err error
	for {
		last, err = p.query(ctx, expr)
		if err == nil && len(last) == 1 {
			for _, v := range last {
				if v == want {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is %v (%v), want %v", expr, last, err, want)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// load is one round of traffic of every kind on the fake model: replies in
// each personality, weather calls, both tool errors, a length-limited
// reply, streams, refused requests, and memory: a fact the model keeps, a
// person's edit of it, a search, a resource erased.
type load struct {
	runs, requests int
	// memoryUpdates counts the working memory updates, erasures the
	// resources erased.
	memoryUpdates, erasures int
}

func runLoad(t *testing.T, svc *apptest.Service) load {
	t.Helper()
	ask := func(personality, question, extra string) string {
		return `{"threadId":"load","resourceId":"user","messages":[{"role":"user","content":"` + question + `"}],` +
			`"runtimeContext":{"metadata":{"personality":"` + personality + `"}}` + extra + `}`
	}
	const gen, stream = "/api/agents/companionAgent/generate", "/api/agents/companionAgent/stream"
	runs := []struct{ path, body string }{
		{gen, ask("guru", "How can I find more calm?", "")},
		{gen, ask("friend", "I had a rough day.", "")},
		{gen, ask("philosopher", "What's the weather in Paris and Tokyo?", "")},
		{gen, ask("wanderer", "What's the weather in Berlin?", "")},
		{gen, ask("friend", "What's the weather in Atlantis?", "")},
		{gen, ask("guru", "What's the weather in Errorville?", "")},
		{gen, ask("friend", "Tell me a long story about the sea.", `,"modelSettings":{"maxOutputTokens":8}`)},
		{stream, ask("wanderer", "Where should I travel next?", "")},
		{stream, ask("friend", "What's the weather in Berlin?", "")},
		{stream, ask("philosopher", "What's the weather in Errorville?", "")},
		// The model keeps the fact (a working memory update).
		{gen, ask("friend", "Remember that my sister is called Ana.", "")},
		// A crisis: the protocol trips, and the referral is counted.
		{gen, `{"threadId":"crisis","resourceId":"user","messages":[{"role":"user","content":"I want to end my life tonight."}]}`},
		// Something to erase.
		{gen, `{"threadId":"forget-me","resourceId":"forgetful","messages":[{"role":"user","content":"Hi"}]}`},
	}
	for _, r := range runs {
		if res, b := svc.Post(t, r.path, r.body); res.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", r.path, res.StatusCode, b)
		}
	}
	refused := []struct {
		method, path, body string
		status             int
	}{
		{http.MethodPost, gen, `{"messages":[{"role":"user","content":"Hi"}]}`, 400},
		{http.MethodPost, stream, `{"threadId":"t","messages":[]}`, 400},
		{http.MethodPost, "/api/agents/otherAgent/generate", ask("friend", "Hi", ""), 404},
		{http.MethodGet, gen, "", 405},
		{http.MethodGet, "/health", "", 200},
		// Memory: a person's edit, a search, an erasure.
		{http.MethodPost, "/api/memory/threads/load/working-memory?resourceId=user", `{"workingMemory":"- Sister: Ana\n"}`, 200},
		{http.MethodGet, "/api/memory/search?resourceId=user&searchQuery=sister", "", 200},
		{http.MethodDelete, "/api/memory/resources/forgetful", "", 200},
	}
	for _, r := range refused {
		if res, b := svc.Do(t, r.method, r.path, r.body); res.StatusCode != r.status {
			t.Fatalf("%s %s: %d, want %d: %s", r.method, r.path, res.StatusCode, r.status, b)
		}
	}
	return load{runs: len(runs), requests: len(runs) + len(refused), memoryUpdates: 2, erasures: 1}
}

// startPrometheus runs Prometheus on configPath until the test ends and
// returns its address once it is ready. It is handed a port found free a
// moment before, which something else may take first: when Prometheus
// exits because the port is taken, it is started again on another.
func startPrometheus(t *testing.T, ctx context.Context, prometheus, configPath, dataDir string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := testkit.FreeAddr(t)
		var logs testkit.Buffer
		cmd := exec.CommandContext(ctx, prometheus, "--config.file="+configPath, "--storage.tsdb.path="+dataDir,
			"--web.listen-address="+addr, "--log.level=warn")
		cmd.Stdout, cmd.Stderr = &logs, &logs
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopped := make(chan struct{})
		go func() { _ = cmd.Wait(); close(stopped) }()
		ready := waitReady(ctx, "http://"+addr+"/-/ready", stopped)
		if ready == nil {
			t.Cleanup(func() {
				_ = cmd.Cancel()
				<-stopped
				if t.Failed() {
					t.Logf("prometheus log:\n%s", logs.String())
				}
			})
			return addr
		}
		_ = cmd.Cancel()
		<-stopped
		if attempt < 3 && strings.Contains(logs.String(), "address already in use") {
			t.Logf("prometheus: %s was taken; another port", addr)
			continue
		}
		t.Fatalf("prometheus on %s: %v\n%s", addr, ready, logs.String())
	}
}

// waitReady polls url until it answers 200, the process ends (stopped is
// closed) or ctx ends. Each poll is short: what holds the port when
// Prometheus could not take it may never answer.
func waitReady(ctx context.Context, url string, stopped <-chan struct{}) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-stopped:
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// grafanaVars are what the dashboard's Grafana variables stand for in a
// query sent straight to Prometheus: a window that covers the whole test
// for the interval variables, and each query variable's "All" value.
func grafanaVars(d dashboard) *strings.Replacer {
	pairs := []string{"$__rate_interval", "1m", "${__rate_interval}", "1m", "$__interval", "1m", "$__range", "1m"}
	for _, v := range d.Templating.List {
		if v.Type == "query" || v.Type == "custom" {
			pairs = append(pairs, "${"+v.Name+"}", v.AllValue, "$"+v.Name, v.AllValue)
		}
	}
	return strings.NewReplacer(pairs...)
}

var metricNameRE = regexp.MustCompile(`\b(?:companion|go|process)_[a-z0-9_]+|\bup\b`)

// TestDashboardAgainstPrometheus is the proof that the dashboard shows
// something: a real Prometheus scrapes the service while traffic of every
// kind runs on the fake model, and every query of every panel must return
// data with at least one number, every metric a query names must exist, and
// every alert rule must evaluate without error.
func TestDashboardAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	prometheus, _ := prometheusTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// With the fake embedding model, so that the indexer's panels have data.
	svc := apptest.Start(t, func(c *app.Config) { c.Memory.Embed = embed.Config{Provider: embed.ProviderFake} })
	dir := t.TempDir()
	rules, err := filepath.Abs("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: companion
    static_configs:
      - targets: [%q]
`, rules, strings.TrimPrefix(svc.URL, "http://"))
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := startPrometheus(t, ctx, prometheus, configPath, filepath.Join(dir, "data"))
	api := promAPI{base: "http://" + addr}
	if err := api.waitFor(ctx, `up{job="companion"}`, 1); err != nil {
		t.Fatalf("prometheus did not scrape the service: %v", err)
	}

	// Two rounds: series the first round creates have a sample before the
	// second round's increments, so that rates over the window are not zero.
	var total load
	for round := 1; round <= 2; round++ {
		l := runLoad(t, svc)
		total.runs += l.runs
		total.requests += l.requests
		total.memoryUpdates += l.memoryUpdates
		total.erasures += l.erasures
		for expr, want := range map[string]int{
			`sum(companion_runs_total)`:                             total.runs,
			`sum(companion_http_requests_total{route!="/metrics"})`: total.requests,
			`sum(companion_working_memory_updates_total)`:           total.memoryUpdates,
			`sum(companion_resource_erasures_total)`:                total.erasures,
		} {
			if err := api.waitFor(ctx, expr, float64(want)); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}

	d := readDashboard(t)
	vars := grafanaVars(d)
	var names []string
	if err := api.get(ctx, "/api/v1/label/__name__/values", nil, &names); err != nil {
		t.Fatal(err)
	}
	queries := d.queries()
	keys := make([]string, 0, len(queries))
	for k := range queries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		expr := vars.Replace(queries[k])
		for _, n := range metricNameRE.FindAllString(expr, -1) {
			if !slices.Contains(names, n) {
				t.Errorf("%s: Prometheus has no metric %s", k, n)
			}
		}
		got, err := api.query(ctx, expr)
		switch {
		case err != nil:
			t.Errorf("%s: %v\n  %s", k, err, expr)
		case len(got) == 0:
			t.Errorf("%s: no data\n  %s", k, expr)
		case !anyNumber(got):
			t.Errorf("%s: no number among %v\n  %s", k, got, expr)
		default:
			t.Logf("%s: %v", k, got)
		}
	}

	var rulesData struct {
		Groups []struct {
			Rules []struct {
				Name, Health, LastError string
			}
		}
	}
	if err := api.get(ctx, "/api/v1/rules", nil, &rulesData); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rulesData.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %s %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if n == 0 {
		t.Error("prometheus loaded no alert rules")
	}
}

func anyNumber(m map[string]float64) bool {
	for _, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return true
		}
	}
	return false
}
