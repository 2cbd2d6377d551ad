package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api/apitest"
	"github.com/companionhq/companion/internal/testkit"
)

const testKey = "sk-e2e-0123456789abcdef"

func TestModelSettings(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		wantLog []string
	}{
		{name: "no setting is the fake", wantLog: []string{`no model configured: answering with the deterministic fake model`}},
		{name: "cohere without its key", args: []string{"-model", "cohere/command-a-03-2025"}, wantErr: `model "cohere/command-a-03-2025" needs a Cohere API key: set CO_API_KEY`},
		{name: "openai without its key", env: map[string]string{"COMPANION_MODEL": "openai/gpt-4o-mini", "CO_API_KEY": "x"}, wantErr: `model "openai/gpt-4o-mini" needs an OpenAI API key: set OPENAI_API_KEY`},
		{name: "cohere", args: []string{"-model", "cohere/command-a-03-2025"}, env: map[string]string{"CO_API_KEY": testKey},
			wantLog: []string{`"provider":"cohere"`, `"model":"command-a-03-2025"`, `"base_url":"https://api.cohere.com"`, `"api_key":"set from CO_API_KEY"`}},
		{name: "openai", env: map[string]string{"COMPANION_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": testKey},
			wantLog: []string{`"provider":"openai"`, `"base_url":"https://api.openai.com/v1"`, `"api_key":"set from OPENAI_API_KEY"`}},
		{name: "ollama needs no key", args: []string{"-model", "ollama/llama3.2"},
			wantLog: []string{`"provider":"ollama"`, `"model":"llama3.2"`, `"base_url":"http://localhost:11434/v1"`, `"api_key":"none"`}},
		{name: "any OpenAI-compatible URL", args: []string{"-model", "meta-llama/Llama-3.1-8B-Instruct", "-model-base-url", "http://user:pw@127.0.0.1:8000/v1"},
			wantLog: []string{`"provider":"openai-compatible"`, `"model":"meta-llama/Llama-3.1-8B-Instruct"`, `"base_url":"http://user:xxxxx@127.0.0.1:8000/v1"`}},
		{name: "a base URL needs a model", args: []string{"-model-base-url", "http://127.0.0.1:8000/v1"}, wantErr: "a model base URL needs a model name"},
		{name: "unknown model", args: []string{"-model", "gpt-4o"}, wantErr: `model "gpt-4o" is not known`},
		{name: "bad base URL", args: []string{"-model", "ollama/x", "-model-base-url", "localhost:11434"}, wantErr: `must start with http:// or https://`},
		{name: "bad retries", args: []string{"-model-max-retries", "-1"}, wantErr: "model max retries must be from 0 to 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var logs strings.Builder
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-database-url", "sqlite://" + filepath.Join(t.TempDir(), "companion.db")}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard, pw)
				pw.Close()
				done <- err
			}()
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				logs.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), `"msg":"listening"`) {
					cancel()
				}
			}
			err := <-done
			cancel()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v\n%s", err, logs.String())
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("the log lacks %s:\n%s", w, logs.String())
				}
			}
			if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), ":pw@") {
				t.Errorf("the log shows a secret:\n%s", logs.String())
			}
		})
	}
}

func TestKeysAreNotPrinted(t *testing.T) {
	cfg, _, err := parseConfig(nil, func(k string) string {
		return map[string]string{"CO_API_KEY": testKey, "OPENAI_API_KEY": testKey}[k]
	}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Model.CohereAPIKey) != testKey || string(cfg.Model.OpenAIAPIKey) != testKey {
		t.Fatal("keys not read from CO_API_KEY and OPENAI_API_KEY")
	}
	if s := fmt.Sprintf("%+v %v", cfg, cfg); strings.Contains(s, testKey) {
		t.Fatalf("the configuration prints a key: %s", s)
	}
}

// TestRunAgainstFakeProcesses runs the built service against the built
// fakes exactly as a user runs it against a real provider: the fake as a
// process, the service pointed at it with -model and -model-base-url (or
// their variables) and the provider's key variable.
func TestRunAgainstFakeProcesses(t *testing.T) {
	dir := buildAll(t)
	weather := startFake(t, filepath.Join(dir, "fakes"), "openmeteo")
	for _, tc := range []struct {
		fake, model, baseSuffix, keyVar string
		flags                           bool
	}{
		{fake: "cohere", model: "cohere/command-a-03-2025", keyVar: "CO_API_KEY", flags: true},
		{fake: "openai", model: "openai/gpt-4o-mini", baseSuffix: "/v1", keyVar: "OPENAI_API_KEY"},
	} {
		t.Run(tc.fake, func(t *testing.T) {
			upstreamURL := startFake(t, filepath.Join(dir, "fakes"), tc.fake, "-token-delay", "1ms", "-api-key", testKey)
			args := []string{"serve", "-addr", "127.0.0.1:0"}
			env := append(os.Environ(), tc.keyVar+"="+testKey, "COMPANION_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "companion.db"),
				"COMPANION_WEATHER_GEOCODING_URL="+weather, "COMPANION_WEATHER_FORECAST_URL="+weather)
			if tc.flags {
				args = append(args, "-model", tc.model, "-model-base-url", upstreamURL+tc.baseSuffix)
			} else {
				env = append(env, "COMPANION_MODEL="+tc.model, "COMPANION_MODEL_BASE_URL="+upstreamURL+tc.baseSuffix)
			}
			cmd := exec.Command(filepath.Join(dir, "companion"), args...)
			cmd.Env = env
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var logs strings.Builder
			addr := ""
			sc := bufio.NewScanner(stderr)
			for addr == "" && sc.Scan() {
				logs.WriteString(sc.Text() + "\n")
				addr, _ = testkit.LoggedAddr(sc.Bytes(), "listening")
			}
			if addr == "" {
				t.Fatalf("the service never listened:\n%s", logs.String())
			}
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			if strings.Contains(logs.String(), testKey) || !strings.Contains(logs.String(), `"api_key":"set from `+tc.keyVar+`"`) {
				t.Errorf("start-up log:\n%s", logs.String())
			}
			res, err := http.Post("http://"+addr+"/api/agents/companionAgent/stream", "application/json",
				strings.NewReader(`{"threadId":"t1","messages":[{"role":"user","content":"What's the weather in Berlin?"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			events, err := apitest.ReadSSE(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if err := apitest.Check(events); err != nil {
				t.Fatal(err)
			}
			types := strings.Join(apitest.Types(events), " ")
			if !strings.Contains(types, "tool-call tool-result") || !strings.Contains(apitest.Text(events), "Berlin") || !strings.HasSuffix(types, "step-finish run-finish") {
				t.Errorf("events %s, text %q", types, apitest.Text(events))
			}
		})
	}
}

// startFake runs `fakes <name> -addr 127.0.0.1:0 args...` and returns its
// base URL.
func startFake(t *testing.T, bin, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{name, "-addr", "127.0.0.1:0"}, args...)...)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		url, ok := strings.CutPrefix(l, name+" listening on ")
		if !ok {
			t.Fatalf("fakes %s printed %q", name, l)
		}
		return url
	case <-time.After(10 * time.Second):
		t.Fatalf("fakes %s did not start", name)
	}
	return ""
}
