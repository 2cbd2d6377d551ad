package httpapi_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/limits/redistest"
	"github.com/companionhq/companion/internal/redact"
	"github.com/companionhq/companion/internal/testkit"
)

// unique is a name no other test run uses: keys of a shared Redis outlive
// a test by up to a minute.
func unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// from makes a request look forwarded for addr by a trusted proxy.
func from(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

// behindProxy trusts the loopback proxy the tests' requests come from.
func behindProxy(c *app.Config) {
	c.Server.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
}

func generate(thread, resource string) string {
	return fmt.Sprintf(`{"threadId":%q,"resourceId":%q,"messages":[{"role":"user","content":"Hi"}]}`, thread, resource)
}

// TestRateLimitPerAddress: a client address may make -rate-limit requests
// a minute, whatever resources they name; the next gets 429 with
// Retry-After, and other addresses go on.
func TestRateLimitPerAddress(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Limits.RateLimit = 5; behindProxy(c) })
	addr := "203.0.113.7"
	for i := range 5 {
		if res, b := svc.DoHeader(t, "POST", generatePath, generate(fmt.Sprint("a", i), fmt.Sprint("user-", i)), from(addr)); res.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, b)
		}
	}
	res, b := svc.DoHeader(t, "POST", generatePath, generate("a9", "user-9"), from(addr))
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "12" ||
		errorOf(t, b) != `client address 203.0.113.7 made more than 5 requests in a minute, its limit (-rate-limit): try again in 12s` {
		t.Fatalf("the sixth request: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	// The threads API counts too; another address is not limited.
	if res, _ := svc.DoHeader(t, "GET", "/api/memory/threads?resourceId=user-0", "", from(addr)); res.StatusCode != 429 {
		t.Fatalf("threads API: %d", res.StatusCode)
	}
	if res, b := svc.DoHeader(t, "POST", generatePath, generate("b", "user-1"), from("198.51.100.1")); res.StatusCode != 200 {
		t.Fatalf("another address: %d %s", res.StatusCode, b)
	}
	// Probes are never limited.
	if res, _ := svc.DoHeader(t, "GET", "/health", "", from(addr)); res.StatusCode != 200 {
		t.Fatalf("/health: %d", res.StatusCode)
	}
	// Nothing of the refused run was stored.
	if n := messagesOf(t, svc, "a9", "user-9"); n != -1 {
		t.Fatalf("the refused request stored %d messages", n)
	}
	metrics := metricsOf(t, svc)
	if !strings.Contains(metrics, `companion_requests_limited_total{scope="address"} 2`) {
		t.Fatalf("the metric does not count the refusals:\n%s", grep(metrics, "limited"))
	}
}

// TestRateLimitPerResource: a resource may make -rate-limit requests a
// minute from however many addresses.
func TestRateLimitPerResource(t *testing.T) {
	svc := apptest.Start(t, func(c *app.Config) { c.Limits.RateLimit = 4; behindProxy(c) })
	for i := range 4 {
		if res, b := svc.DoHeader(t, "POST", generatePath, generate(fmt.Sprint("t", i), "alice"), from(fmt.Sprint("192.0.2.", i))); res.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, b)
		}
	}
	res, b := svc.DoHeader(t, "GET", "/api/memory/threads?resourceId=alice", "", from("192.0.2.50"))
	if res.StatusCode != 429 || errorOf(t, b) != `resource "alice" made more than 4 requests in a minute, its limit (-rate-limit): try again in 15s` {
		t.Fatalf("the fifth request: %d %s", res.StatusCode, b)
	}
	if res, b := svc.DoHeader(t, "POST", generatePath, generate("t9", "bob"), from("192.0.2.51")); res.StatusCode != 200 {
		t.Fatalf("another resource: %d %s", res.StatusCode, b)
	}
}

// TestRateLimitSharedThroughRedis: two instances on one Redis share each
// key's budget: what one admitted, the other does not admit again.
func TestRateLimitSharedThroughRedis(t *testing.T) {
	url := redistest.ServerURL()
	redistest.Options(t) // skips, or fails in CI, without Redis
	configure := func(c *app.Config) { c.Limits.RateLimit = 6; c.Storage.RedisURL = redact.Secret(url); behindProxy(c) }
	a, b := apptest.Start(t, configure), apptest.Start(t, configure)
	resource := unique("shared")
	admitted := 0
	for i := range 10 {
		svc := a
		if i%2 == 1 {
			svc = b
		}
		res, body := svc.DoHeader(t, "POST", generatePath, generate(fmt.Sprint("t", i), resource), from(fmt.Sprintf("10.%d.0.1", i)))
		switch res.StatusCode {
		case 200:
			admitted++
		case 429:
		default:
			t.Fatalf("request %d: %d %s", i, res.StatusCode, body)
		}
	}
	if admitted != 6 {
		t.Fatalf("the two instances admitted %d of 10 requests for one resource, want 6 in all", admitted)
	}
	if m := metricsOf(t, a); !strings.Contains(m, "companion_rate_limits_shared 1") {
		t.Fatalf("the gauge does not say the limits are shared:\n%s", grep(m, "shared"))
	}
}

// TestRateLimitWithoutRedis: with Redis unreachable the service keeps
// serving, limiting in process, and says so in its log and a metric.
func TestRateLimitWithoutRedis(t *testing.T) {
	logs := &testkit.Buffer{}
	svc := apptest.StartLogged(t, jsonLog(logs), func(c *app.Config) {
		c.Limits.RateLimit = 3
		c.Storage.RedisURL = "redis://127.0.0.1:1/0" // nothing listens there
		behindProxy(c)
	})
	statuses := []int{}
	for i := range 4 {
		res, _ := svc.DoHeader(t, "POST", generatePath, generate(fmt.Sprint("t", i), "carol"), from(fmt.Sprint("192.0.2.", i)))
		statuses = append(statuses, res.StatusCode)
	}
	if fmt.Sprint(statuses) != "[200 200 200 429]" {
		t.Fatalf("statuses %v, want three served and the fourth limited in process", statuses)
	}
	if !strings.Contains(logs.String(), "Redis cannot be reached: rate limits are kept by this instance alone") {
		t.Fatalf("the log does not say Redis is down:\n%s", logs.String())
	}
	if m := metricsOf(t, svc); !strings.Contains(m, "companion_rate_limits_shared 0") {
		t.Fatalf("the gauge does not say the limits are not shared:\n%s", grep(m, "shared"))
	}
}

func metricsOf(t *testing.T, svc *apptest.Service) string {
	t.Helper()
	res, b := svc.Do(t, "GET", "/metrics", "")
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func jsonLog(w *testkit.Buffer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
