// Tests of the files in observability/: the Grafana dashboard and its
// provisioning, and the OpenTelemetry Collector configuration. The
// Prometheus configuration and alert rules are checked by promtool and
// against a real Prometheus in prometheus_test.go.
package observability_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/telemetry"
	"github.com/companionhq/companion/internal/testkit"
)

const dashboardPath = "grafana/dashboards/companion.json"

// dashboard is the part of a Grafana dashboard the tests look at.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string      `json:"name"`
			Type       string      `json:"type"`
			Query      any         `json:"query"`
			AllValue   string      `json:"allValue"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int                      `json:"id"`
	Type        string                   `json:"type"`
	Title       string                   `json:"title"`
	Description string                   `json:"description"`
	Datasource  *datasource              `json:"datasource"`
	GridPos     struct{ H, W, X, Y int } `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// queries are the dashboard's panel queries by "panel title / refId".
func (d dashboard) queries() map[string]string {
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out[p.Title+" / "+tg.RefID] = tg.Expr
		}
	}
	return out
}

const dsVar = "${datasource}"

func TestDashboardIsAGrafanaDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Fatalf("uid %q, title %q, schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	var hasDS bool
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			hasDS = v.Name == "datasource" && v.Query == "prometheus"
		case "query":
			if v.Datasource == nil || v.Datasource.UID != dsVar || v.AllValue == "" {
				t.Errorf("variable %s: datasource %v, allValue %q", v.Name, v.Datasource, v.AllValue)
			}
		}
	}
	if !hasDS {
		t.Fatal("no Prometheus datasource variable named datasource")
	}
	ids := map[int]bool{}
	used := map[[2]int]string{} // occupied grid cells, to find overlaps
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, g)
		}
		overlaps := map[string]bool{}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := used[[2]int{x, y}]; ok && !overlaps[other] {
					overlaps[other] = true
					t.Errorf("panel %q overlaps %q", p.Title, other)
				}
				used[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" || p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %d: title %q, description %q, unit %q", p.ID, p.Title, p.Description, p.FieldConfig.Defaults.Unit)
		}
		if p.Datasource == nil || p.Datasource.UID != dsVar || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want the %s variable", p.Title, p.Datasource, dsVar)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] || tg.Datasource == nil || tg.Datasource.UID != dsVar {
				t.Errorf("panel %q: target %+v", p.Title, tg)
			}
			refs[tg.RefID] = true
		}
	}
	if len(used) == 0 {
		t.Fatal("no panels")
	}
}

var familyRE = regexp.MustCompile(`(?m)^# TYPE (companion_\w+) (\w+)$`)

// TestDashboardCoversEveryMetric: each companion metric family the service
// exports is shown by some panel.
func TestDashboardCoversEveryMetric(t *testing.T) {
	svc := apptest.Start(t, nil)
	svc.Post(t, "/api/agents/companionAgent/stream", `{"threadId":"t","messages":[{"role":"user","content":"What's the weather in Berlin?"}]}`)
	res, body := svc.Do(t, http.MethodGet, "/metrics", "")
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	families := familyRE.FindAllStringSubmatch(string(body), -1)
	if len(families) < 14 {
		t.Fatalf("only %d companion families in /metrics", len(families))
	}
	var all strings.Builder
	for _, q := range readDashboard(t).queries() {
		all.WriteString(q + "\n")
	}
	for _, f := range families {
		name, typ := f[1], f[2]
		if typ == "histogram" {
			name += "_bucket"
		}
		if !strings.Contains(all.String(), name) {
			t.Errorf("no panel shows %s (%s)", f[1], typ)
		}
	}
}

func TestGrafanaProvisioning(t *testing.T) {
	ds := testkit.ReadYAML(t, "grafana/provisioning/datasources/prometheus.yaml")
	list, _ := ds["datasources"].([]any)
	if ds["apiVersion"] != 1 || len(list) != 1 || testkit.Dig(list[0], "type") != "prometheus" || testkit.Dig(list[0], "uid") == nil || testkit.Dig(list[0], "url") == nil {
		t.Fatalf("datasources: %v", ds)
	}
	dp := testkit.ReadYAML(t, "grafana/provisioning/dashboards/companion.yaml")
	providers, _ := dp["providers"].([]any)
	if dp["apiVersion"] != 1 || len(providers) != 1 || testkit.Dig(providers[0], "type") != "file" || testkit.Dig(providers[0], "options", "path") == nil {
		t.Fatalf("dashboard providers: %v", dp)
	}
}

// TestCollectorConfig checks the collector's configuration the way the
// collector would at start: OTLP in over gRPC and HTTP, a traces pipeline,
// and every component a pipeline names is defined.
func TestCollectorConfig(t *testing.T) {
	c := testkit.ReadYAML(t, "otel/collector.yaml")
	for _, proto := range []string{"grpc", "http"} {
		if testkit.Dig(c, "receivers", "otlp", "protocols", proto, "endpoint") == nil {
			t.Errorf("the otlp receiver does not listen on %s", proto)
		}
	}
	traces, ok := testkit.Dig(c, "service", "pipelines", "traces").(map[string]any)
	if !ok {
		t.Fatal("no traces pipeline")
	}
	for _, kind := range []string{"receivers", "processors", "exporters"} {
		names, _ := traces[kind].([]any)
		if len(names) == 0 && kind != "processors" {
			t.Errorf("the traces pipeline has no %s", kind)
		}
		for _, n := range names {
			if _, ok := testkit.Dig(c, kind).(map[string]any)[fmt.Sprint(n)]; !ok {
				t.Errorf("the traces pipeline names %s %v, which is not defined", kind, n)
			}
		}
	}
	exporters, _ := traces["exporters"].([]any)
	if !slices.ContainsFunc(exporters, func(e any) bool {
		typ, _, _ := strings.Cut(fmt.Sprint(e), "/")
		return typ == "otlp" || typ == "otlphttp"
	}) {
		t.Errorf("the traces pipeline forwards to no OTLP backend: %v", exporters)
	}
	if rs, _ := traces["receivers"].([]any); !slices.Contains(rs, any("otlp")) {
		t.Errorf("the traces pipeline does not receive OTLP: %v", rs)
	}
	exts, _ := testkit.Dig(c, "service", "extensions").([]any)
	defined, _ := testkit.Dig(c, "extensions").(map[string]any)
	for _, e := range exts {
		if _, ok := defined[fmt.Sprint(e)]; !ok {
			t.Errorf("extension %v is not defined", e)
		}
	}
}

// TestTracesLink: the dashboard links to Grafana's Explore on the
// provisioned trace data source, searching the service's traces.
func TestTracesLink(t *testing.T) {
	ds := testkit.ReadYAML(t, "grafana/provisioning/datasources/jaeger.yaml")
	list, _ := ds["datasources"].([]any)
	if ds["apiVersion"] != 1 || len(list) != 1 || testkit.Dig(list[0], "type") != "jaeger" || testkit.Dig(list[0], "url") == nil {
		t.Fatalf("trace datasources: %v", ds)
	}
	uid, _ := testkit.Dig(list[0], "uid").(string)

	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Links []struct{ Title, Type, URL string }
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range d.Links {
		u, err := url.Parse(l.URL)
		if err != nil || u.Path != "/explore" {
			continue
		}
		var panes map[string]struct {
			Datasource string
			Queries    []struct {
				Datasource struct{ Type, UID string }
				QueryType  string
				Service    string
			}
		}
		if err := json.Unmarshal([]byte(u.Query().Get("panes")), &panes); err != nil {
			t.Fatalf("link %q: panes: %v", l.Title, err)
		}
		for _, p := range panes {
			for _, q := range p.Queries {
				if p.Datasource == uid && q.Datasource.UID == uid && q.Datasource.Type == "jaeger" && q.Service == telemetry.ServiceName {
					found = true
				}
			}
		}
	}
	if !found || uid == "" {
		t.Fatalf("no dashboard link searches %q's traces on the data source %q: %+v", telemetry.ServiceName, uid, d.Links)
	}
}
