package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

// wantCost is what u costs on the fake model at table, as the API rounds it.
func wantCost(table *pricing.Table, u api.Usage) api.Cost {
	c := table.Cost("fake", "fake", model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens})
	r := func(f float64) float64 { return math.Round(f*1e8) / 1e8 }
	return api.Cost{Currency: "USD", Input: r(c.Input), CachedInput: r(c.CachedInput), Output: r(c.Output), Total: r(c.Total())}
}

// costIn decodes the cost of a finishing frame: the last data line of body
// whose JSON has the type typ, at the path under it.
func costIn(t *testing.T, body []byte, typ string, path ...string) api.Cost {
	t.Helper()
	var found *api.Cost
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var v map[string]json.RawMessage
		if json.Unmarshal([]byte(data), &v) != nil || string(v["type"]) != strconv.Quote(typ) {
			continue
		}
		raw := json.RawMessage(data)
		for _, p := range path {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			raw = m[p]
		}
		var c api.Cost
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("the cost in %s: %v", data, err)
		}
		found = &c
	}
	if found == nil {
		t.Fatalf("no %s frame with a cost in:\n%s", typ, body)
	}
	return *found
}

// TestCostInEveryShape: a weather run's cost, at the fake model's prices,
// is in generate's providerMetadata.companion and on the finish of every
// dialect's stream; the same usage costs the same everywhere.
func TestCostInEveryShape(t *testing.T) {
	svc := apptest.Start(t, nil)
	table := pricing.Default()
	body := func(thread string) string {
		// A resource of its own each: a later run of the same resource
		// would recall the earlier ones, and see more.
		return fmt.Sprintf(`{"threadId":%q,"resourceId":%q,"messages":[{"role":"user","content":"What's the weather in Berlin?"}]}`, thread, "payer-"+thread)
	}

	res, b := svc.Post(t, generatePath, body("cost-generate"))
	if res.StatusCode != 200 {
		t.Fatalf("generate: %d %s", res.StatusCode, b)
	}
	var g api.GenerateResponse
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	var pm struct {
		Companion struct {
			Cost api.Cost `json:"cost"`
		} `json:"companion"`
	}
	raw, _ := json.Marshal(g.ProviderMetadata)
	if err := json.Unmarshal(raw, &pm); err != nil {
		t.Fatalf("providerMetadata %s: %v", raw, err)
	}
	want := wantCost(table, g.TotalUsage)
	if pm.Companion.Cost != want || want.Total <= 0 {
		t.Fatalf("generate's cost %+v, want %+v (usage %+v)", pm.Companion.Cost, want, g.TotalUsage)
	}
	if got := want.Input + want.CachedInput + want.Output; math.Abs(got-want.Total) > 1e-8 {
		t.Fatalf("the parts %+v do not add up to the total", want)
	}

	for _, tc := range []struct {
		format, typ string
		path        []string
	}{
		{"seed", "run-finish", []string{"payload", "cost"}},
		{"mastra", "finish", []string{"payload", "cost"}},
		{"ai-sdk", "finish", []string{"messageMetadata", "cost"}},
	} {
		res, b := svc.DoHeader(t, "POST", streamPath, body("cost-"+tc.format), http.Header{"X-Stream-Format": {tc.format}})
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.format, res.StatusCode, b)
		}
		// The fake model answers the same question on a fresh thread with
		// the same usage.
		if got := costIn(t, b, tc.typ, tc.path...); got != want {
			t.Errorf("%s: cost %+v, want %+v", tc.format, got, want)
		}
	}

	// The counter sums what the runs cost, by provider, model and
	// personality.
	_, m := svc.Do(t, "GET", "/metrics", "")
	line := `companion_cost_total{model="fake",personality="friend",provider="fake"} `
	i := bytes.Index(m, []byte(line))
	if i < 0 {
		t.Fatalf("no %q in the metrics", line)
	}
	rest, _, _ := strings.Cut(string(m[i+len(line):]), "\n")
	v, err := strconv.ParseFloat(rest, 64)
	if err != nil || math.Abs(v-4*want.Total) > 1e-9 {
		t.Fatalf("companion_cost_total %q, want %v (four runs)", rest, 4*want.Total)
	}
	if !bytes.Contains(m, []byte(`companion_cost_total{model="fake",personality="guru",provider="fake"} 0`)) {
		t.Error("the personalities without runs have no zero series")
	}
}

// TestUsageReport: GET /api/memory/usage sums a resource's runs per day and
// per thread, and refuses what it cannot answer.
func TestUsageReport(t *testing.T) {
	svc := apptest.Start(t, nil)
	table := pricing.Default()
	var total api.Usage
	runs := map[string]int{}
	for _, thread := range []string{"u-1", "u-2", "u-1"} {
		res, b := svc.Post(t, generatePath, fmt.Sprintf(`{"threadId":%q,"resourceId":"reporter","messages":[{"role":"user","content":"Hello there"}]}`, thread))
		if res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		var g api.GenerateResponse
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		total = total.Add(g.TotalUsage)
		runs[thread] += g.TotalUsage.TotalTokens
	}
	// Another resource's run is not in the report.
	if res, b := svc.Post(t, generatePath, `{"threadId":"x-1","resourceId":"someone-else","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}

	res, b := svc.Do(t, "GET", "/api/memory/usage?resourceId=reporter&days=2", "")
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %q %s", res.StatusCode, res.Header.Get("Cache-Control"), b)
	}
	var r api.UsageReport
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	wantTotal := wantCost(table, total).Total
	if r.ResourceID != "reporter" || r.Currency != "USD" || len(r.Days) != 1 || r.Days[0].Day != today {
		t.Fatalf("the report: %s", b)
	}
	d := r.Days[0]
	if d.Tokens != int64(total.TotalTokens) || r.Total.Tokens != d.Tokens || math.Abs(d.Cost-wantTotal) > 1e-8 || math.Abs(r.Total.Cost-wantTotal) > 1e-8 {
		t.Fatalf("the day %+v (total %+v), want %d tokens and $%v", d, r.Total, total.TotalTokens, wantTotal)
	}
	if len(d.Threads) != 2 || d.Threads[0].ThreadID != "u-1" || d.Threads[0].Tokens != int64(runs["u-1"]) ||
		d.Threads[1].ThreadID != "u-2" || d.Threads[1].Tokens != int64(runs["u-2"]) {
		t.Fatalf("the threads %+v, want u-1 (%d tokens) then u-2 (%d)", d.Threads, runs["u-1"], runs["u-2"])
	}

	// A resource without runs gets an empty report.
	if res, b := svc.Do(t, "GET", "/api/memory/usage?resourceId=nobody", ""); res.StatusCode != 200 ||
		!bytes.Contains(b, []byte(`"days":[]`)) {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	for _, tc := range []struct{ query, want string }{
		{"", "resourceId is required"},
		{"?resourceId=reporter&days=0", `days must be a whole number from 1 to 90, not "0"`},
		{"?resourceId=reporter&days=91", `days must be a whole number from 1 to 90, not "91"`},
		{"?resourceId=reporter&days=week", `days must be a whole number from 1 to 90, not "week"`},
		{"?resourceId=reporter&Days=1", `"Days" is not "days"`},
		{"?resourceId=a&resourceId=b", "resourceId"},
	} {
		res, b := svc.Do(t, "GET", "/api/memory/usage"+tc.query, "")
		if res.StatusCode != 400 || !strings.Contains(errorOf(t, b), tc.want) {
			t.Errorf("%q: %d %s, want 400 with %q", tc.query, res.StatusCode, b, tc.want)
		}
	}
}

// TestCostQuota: once a resource's runs cost its dollars for the day, its
// runs get 429 with Retry-After until midnight UTC; others go on. Prices
// come from a -prices file over the shipped table.
func TestCostQuota(t *testing.T) {
	prices := filepath.Join(t.TempDir(), "prices.json")
	// Ten times the fake model's shipped prices.
	if err := os.WriteFile(prices, []byte(`{"models":{"fake/fake":{"input":10,"output":20,"cachedInput":5}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	table, err := pricing.Load(prices)
	if err != nil {
		t.Fatal(err)
	}
	svc := apptest.Start(t, func(c *app.Config) { c.Limits.Quota.Cost = 0.003; c.Model.PricesFile = prices })
	run := func(resource string) (*http.Response, []byte) {
		return svc.Post(t, generatePath, fmt.Sprintf(`{"threadId":"c-%s","resourceId":%q,"messages":[{"role":"user","content":"Hello there"}]}`, resource, resource))
	}
	spent, runs := 0.0, 0
	for spent < 0.003 {
		res, b := run("spender")
		if res.StatusCode != 200 {
			t.Fatalf("after $%v: %d %s", spent, res.StatusCode, b)
		}
		var g api.GenerateResponse
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		spent += wantCost(table, g.TotalUsage).Total
		if runs++; runs > 100 {
			t.Fatal("a hundred runs did not spend the quota: the prices file is not applied")
		}
	}
	res, b := run("spender")
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("over the quota: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	want := fmt.Sprintf(`resource "spender" has spent $%s today, its quota of $0.003 (-cost-quota): it resets at 00:00 UTC`,
		strconv.FormatFloat(math.Round(spent*1e6)/1e6, 'f', -1, 64))
	if msg := errorOf(t, b); msg != want {
		t.Errorf("%s\nwant %q", b, want)
	}
	// The stream refuses before it starts, the same way.
	res, b = svc.Post(t, streamPath, `{"threadId":"c-spender","resourceId":"spender","messages":[{"role":"user","content":"Hi"}]}`)
	if res.StatusCode != 429 {
		t.Fatalf("stream over the quota: %d %s", res.StatusCode, b)
	}
	if res, b := run("saver"); res.StatusCode != 200 {
		t.Fatalf("another resource: %d %s", res.StatusCode, b)
	}
	// The refused runs stored nothing: the thread holds what the runs did.
	if n := messagesOf(t, svc, "c-spender", "spender"); n != 2*runs {
		t.Fatalf("the thread holds %d messages, want %d", n, 2*runs)
	}
}
