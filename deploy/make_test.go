package deploy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/testkit"
)

// TestMakeServesAtThePortGiven runs `make run PORT=` and `make fakes
// FAKES_PORT=` from the repository's root, as the README tells, and checks
// that each serves at the port it was given and that stopping make's
// process group leaves nothing listening there.
func TestMakeServesAtThePortGiven(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service and the fakes")
	}
	if _, err := exec.LookPath("make"); err != nil {
		testkit.Unavailable(t, "make is not on PATH", "install make")
	}
	tests := []struct {
		target, portVar, path string
		// health: the answer must be 200; else any HTTP answer will do.
		health bool
	}{
		{target: "run", portVar: "PORT", path: "/health", health: true},
		{target: "fakes", portVar: "FAKES_PORT", path: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			addr := testkit.FreeAddr(t)
			_, port, _ := net.SplitHostPort(addr)
			cmd := exec.Command("make", "--no-print-directory", tt.target, tt.portVar+"="+port)
			cmd.Dir = ".."
			cmd.Env = makeEnv(t)
			// Its own process group: `go run` starts the program as a child
			// of its own, and the group is how both are stopped.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out testkit.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			stopped := false
			stop := func() {
				if stopped {
					return
				}
				stopped = true
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(15 * time.Second):
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-exited
				}
			}
			t.Cleanup(stop)

			// go run compiles first: the build cache makes it quick, but a
			// cold cache may take most of a minute.
			url := "http://" + addr + tt.path
			deadline := time.Now().Add(60 * time.Second)
			for {
				status, err := get(url)
				if err == nil {
					if tt.health && status != http.StatusOK {
						t.Fatalf("GET %s = %d, want 200\n%s", url, status, out.String())
					}
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("make %s %s=%s exited (%v) before answering at %s:\n%s", tt.target, tt.portVar, port, err, addr, out.String())
				case <-time.After(200 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("nothing answers at %s 60s after make %s %s=%s:\n%s", url, tt.target, tt.portVar, port, out.String())
				}
			}

			stop()
			// The group's last process may close its listener a moment after
			// make itself has gone.
			deadline = time.Now().Add(5 * time.Second)
			for {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					break
				}
				c.Close()
				if time.Now().After(deadline) {
					t.Fatalf("%s still listens after make %s's process group was stopped", addr, tt.target)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// get is the status of GET url, or the error of a request that got no
// HTTP answer.
func get(url string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// makeEnv is the test's environment without the settings that would move
// the service elsewhere (its address, store, Redis, exporters), and with
// its store in a directory of the test's: make run's default,
// data/companion.db, would land in the repository.
func makeEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "COMPANION_") || strings.HasPrefix(name, "OTEL_") || name == "PORT" || name == "FAKES_PORT" || name == "MAKEFLAGS" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, fmt.Sprintf("COMPANION_DATABASE_URL=sqlite://%s", filepath.Join(t.TempDir(), "companion.db")))
}
