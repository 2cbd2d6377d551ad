package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/companionhq/companion/internal/testkit"
)

// syncBuffer is a bytes.Buffer safe to write from run's goroutine while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitLine waits for the first complete line written to b.
func waitLine(t *testing.T, b *syncBuffer, done <-chan error) string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if line, _, ok := strings.Cut(b.String(), "\n"); ok {
			return line
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v before printing an address", err)
		case <-deadline:
			t.Fatal("no address printed within 5s")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestRunOpenMeteo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"openmeteo", "-addr", "127.0.0.1:0"}, &stdout, &stderr) }()

	line := waitLine(t, &stdout, done)
	base, ok := strings.CutPrefix(line, "openmeteo listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Fatalf("printed %q, want the listening address", line)
	}

	res, err := http.Get(base + "/v1/search?name=Berlin&count=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"Berlin"`) {
		t.Errorf("GET /v1/search: %d %s", res.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return within 5s of cancel")
	}
	if s := stderr.String(); s != "" {
		t.Errorf("stderr = %q, want nothing", s)
	}
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		name, wantErr string
		args          []string
	}{
		{"no subcommand", "", nil},
		{"unknown subcommand", `unknown fake "anthropic"`, []string{"anthropic"}},
		{"bad fault", `fault "teapot"`, []string{"cohere", "-fault", "teapot"}},
		{"bad flag", "flag provided but not defined: -port", []string{"openmeteo", "-port", "1"}},
		{"extra argument", `unexpected argument "now"`, []string{"openmeteo", "now"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if !errors.Is(err, errUsage) {
				t.Errorf("run = %v, want errUsage", err)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) || !strings.Contains(stderr.String(), "-addr") {
				t.Errorf("stderr = %q, want usage mentioning %q", stderr.String(), tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &stdout, &stderr); err != nil {
		t.Errorf("run help = %v", err)
	}
	if !strings.Contains(stdout.String(), "openmeteo") || !strings.Contains(stdout.String(), "cohere") || !strings.Contains(stdout.String(), "openai") {
		t.Errorf("help = %q, want the list of fakes", stdout.String())
	}
}

func TestRunListenError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"openmeteo", "-addr", "256.0.0.1:bad"}, &stdout, &stderr)
	if err == nil || errors.Is(err, errUsage) {
		t.Errorf("run = %v, want a listen error", err)
	}
}

// TestRunProviders: the model providers' fakes run as processes would, with
// their knobs: the first request meets the injected fault, the next one a
// streamed answer.
func TestRunProviders(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"cohere", "/v2/chat", `{"model":"command-a-03-2025","stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
		{"openai", "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr syncBuffer
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{tc.name, "-addr", "127.0.0.1:0", "-fault", "429:retry-after=2", "-token-delay", "1ms", "-api-key", "k"}, &stdout, &stderr)
			}()
			base, ok := strings.CutPrefix(waitLine(t, &stdout, done), tc.name+" listening on ")
			if !ok {
				t.Fatalf("printed %q", stdout.String())
			}
			post := func(key string) (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, base+tc.path, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res, string(b)
			}
			if res, _ := post("other"); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("a wrong key: %d", res.StatusCode)
			}
			if res, _ := post("k"); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "2" {
				t.Errorf("the fault: %d %q", res.StatusCode, res.Header.Get("Retry-After"))
			}
			if res, body := post("k"); res.StatusCode != http.StatusOK || !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Errorf("the answer: %d %q", res.StatusCode, body)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
}
