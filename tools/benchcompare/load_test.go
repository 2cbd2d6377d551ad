//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := quantile(d, c.q); got != c.want {
			t.Errorf("quantile(1..100 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile of nothing = %v, want 0", got)
	}
}

// TestMeasure: a stream that ends with its terminal event counts, with its
// time to first event; one cut short and a refusal count as errors by kind.
func TestMeasure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("kind") {
		case "refuse":
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case "cut":
			fmt.Fprint(w, "data: {\"type\":\"start\"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 1\ndata: {\"type\":\"start\"}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(2 * time.Millisecond)
		fmt.Fprint(w, "id: 2\ndata: {\"type\":\"run-finish\"}\n\n")
	}))
	defer srv.Close()
	done := func(last []byte) bool { return string(last) == `{"type":"run-finish"}` }
	for _, c := range []struct {
		kind    string
		wantErr string
	}{{"ok", ""}, {"cut", "incomplete stream"}, {"refuse", "503"}} {
		tg := target{url: srv.URL + "?kind=" + c.kind, body: func(uint64) []byte { return nil }, stream: true, done: done}
		st := measure(context.Background(), tg, 2, 50*time.Millisecond, 200*time.Millisecond, nil)
		if c.wantErr == "" {
			if st.n == 0 || st.errors() != 0 {
				t.Fatalf("%s: %d answers, errors %v", c.kind, st.n, st.errs)
			}
			if p50 := quantile(st.lat, 0.5); p50 < 2*time.Millisecond {
				t.Errorf("%s: p50 %v, shorter than the stream", c.kind, p50)
			}
			if f := quantile(st.ttfe, 0.5); f <= 0 || f > quantile(st.lat, 0.5) {
				t.Errorf("%s: time to first event %v, latency %v", c.kind, f, quantile(st.lat, 0.5))
			}
			continue
		}
		if st.n != 0 || st.errs[c.wantErr] == 0 {
			t.Errorf("%s: %d answers, errors %v; want only %q", c.kind, st.n, st.errs, c.wantErr)
		}
	}
}

// TestTargetsOnce: each target is said once, whether the run measured one
// connection count or two.
func TestTargetsOnce(t *testing.T) {
	st := func(n int, lat time.Duration) stats {
		return stats{n: n, elapsed: time.Second, lat: []time.Duration{lat}}
	}
	for _, counts := range [][]int{{1}, {1, 16}} {
		var rows []row
		for _, c := range counts {
			rows = append(rows,
				row{system: sysUpstream, endpoint: "stream", conns: c, st: st(1000, time.Millisecond)},
				row{system: sysProxied, endpoint: "generate", conns: c, st: st(400, 2*time.Millisecond)})
		}
		var out strings.Builder
		printTargets(&out, rows)
		for _, c := range counts {
			line := "service/upstream throughput >= 0.5, generate, " + connections(c) + ": 0.40 MISSED"
			if n := strings.Count(out.String(), line); n != 1 {
				t.Errorf("conns %v: %q appears %d times, want once:\n%s", counts, line, n, out.String())
			}
		}
	}
}

// TestServiceEnv: -service-env takes NAME=value words and refuses others.
func TestServiceEnv(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"GOMAXPROCS=1  GOGC=200", []string{"GOMAXPROCS=1", "GOGC=200"}, true},
		{"GODEBUG=", []string{"GODEBUG="}, true},
		{"GOMAXPROCS", nil, false},
		{"=1", nil, false},
	} {
		c, err := parseFlags([]string{"-service-env", tc.flag}, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("-service-env %q: error %v, want ok %v", tc.flag, err, tc.ok)
			continue
		}
		if tc.ok && !slices.Equal(c.serviceEnv, tc.want) {
			t.Errorf("-service-env %q: %q, want %q", tc.flag, c.serviceEnv, tc.want)
		}
	}
}

// TestQuietService: a log level that hides the service's "listening" line,
// in -service-args or -service-env, is refused at once instead of the
// harness waiting a minute for the line.
func TestQuietService(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-service-args", "-history-window 50"}, true},
		{[]string{"-service-args", "-log-level debug"}, true},
		{[]string{"-service-args", "--log-level=INFO"}, true},
		{[]string{"-service-args", "-log-level warn"}, false},
		{[]string{"-service-args", "-history-window 5 --log-level=Error"}, false},
		{[]string{"-service-args", "-log-level=info+4"}, false},
		{[]string{"-service-args", "-log-level=warn-4"}, true},
		{[]string{"-service-args", "-log-level=warn-2"}, false},
		{[]string{"-service-args", "-log-level loud"}, true},           // the service refuses it itself
		{[]string{"-service-args", "-trace-content -log-level"}, true}, // the service refuses it itself
		{[]string{"-service-env", "COMPANION_LOG_LEVEL=debug"}, true},
		{[]string{"-service-env", "GOGC=200 COMPANION_LOG_LEVEL=warn"}, false},
		{[]string{"-service-env", "COMPANION_LOG_LEVEL=warn", "-service-args", "-log-level info"}, true},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

// TestSystems: -systems takes names of allSystems, all of them by default,
// and refuses others; -streams needs a store among them.
func TestSystems(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		ok   bool
	}{
		{nil, allSystems, true},
		{[]string{"-systems", "postgres"}, []string{"postgres"}, true},
		{[]string{"-systems", "via, upstream"}, []string{"upstream", "via"}, true},
		{[]string{"-systems", "sqlite,sqlite"}, []string{"sqlite"}, true},
		{[]string{"-systems", "mysql"}, nil, false},
		{[]string{"-systems", ""}, nil, false},
		{[]string{"-streams", "10", "-systems", "postgres"}, []string{"postgres"}, true},
		{[]string{"-streams", "10", "-systems", "via"}, nil, false},
	} {
		c, err := parseFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok %v", tc.args, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		var got []string
		for _, s := range allSystems {
			if c.systems[s] {
				got = append(got, s)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: systems %q, want %q", tc.args, got, tc.want)
		}
	}
}
