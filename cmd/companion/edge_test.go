package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMetricsListener: with -metrics-addr, /metrics is served there and not
// on the API's listener.
func TestMetricsListener(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	// Port 0: a port found free beforehand may be taken by another test
	// before the service listens on it.
	url, done, logs := started(t, ctx, nil, "-metrics-addr", "127.0.0.1:0")
	defer func() { cancel(); <-done }()
	maddr := logs.addr(t, "serving metrics")
	get := func(u string) (int, string) {
		res, err := http.Get(u)
		if err != nil {
			t.Fatalf("%s: %v\n%s", u, err, logs)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("http://" + maddr + "/metrics"); code != 200 || !strings.Contains(body, "companion_model_calls_total") {
		t.Fatalf("metrics listener: %d %.200s", code, body)
	}
	if code, _ := get(url + "/metrics"); code != 404 {
		t.Fatalf("the API's listener still serves /metrics: %d", code)
	}
	if code, _ := get("http://" + maddr + "/health"); code != 404 {
		t.Fatalf("the metrics listener serves the API: %d", code)
	}
}

// TestLoudWarningWithoutAuthentication: listening beyond loopback without
// authentication logs a warning; on loopback, or with keys, it does not.
func TestLoudWarningWithoutAuthentication(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"loopback", nil, false},
		{"every address", []string{"-addr", "0.0.0.0:0"}, true},
		{"every address with keys", []string{"-addr", "0.0.0.0:0", "-api-keys-file", keysFile(t)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			_, done, logs := started(t, ctx, nil, tc.args...)
			cancel()
			<-done
			if got := strings.Contains(logs.String(), "AUTHENTICATION IS OFF"); got != tc.warn {
				t.Fatalf("warned %v, want %v:\n%s", got, tc.warn, logs)
			}
		})
	}
}

func keysFile(t *testing.T) string {
	t.Helper()
	path := t.TempDir() + "/keys"
	if err := writeFile(path, "k3y alice\n"); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigRefusesBadEdgeSettings: a wildcard origin, a malformed proxy
// network or Redis URL stop the service at start, each named.
func TestConfigRefusesBadEdgeSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cors-origins", "*"}, `CORS origin "*" is not accepted`},
		{[]string{"-cors-origins", "https://chat.example.com/path"}, "must be a scheme and host"},
		{[]string{"-trusted-proxies", "10.0.0.0/33"}, `trusted proxy "10.0.0.0/33" is not a CIDR`},
		{[]string{"-redis-url", "http://127.0.0.1:6379"}, "redis URL must start with redis://"},
		{[]string{"-api-keys-file", "/nonexistent/keys"}, "authentication"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-database-url", "sqlite://" + t.TempDir() + "/c.db"}, tc.args...),
			func(string) string { return "" }, io.Discard, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
