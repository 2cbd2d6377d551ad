//go:build linux

// Package proc runs the child processes of the benchmark harnesses (the
// service, a fake upstream): their output goes to a log file, and Start
// returns once a line of it announces the base URL they serve at.
package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/companionhq/companion/tools/internal/gotool"
)

// Proc is a running child process.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	// URL is the base URL it announced; Log the file its output goes to.
	URL, Log string
	done     chan struct{}
	err      error // set before done is closed
}

// Start runs bin with args and exactly env as its environment, writes its
// output to logPath, and returns once announce finds its base URL in a
// line of that output; it fails when the process exits first, after a
// minute, or when ctx ends. The process dies with the harness, even when
// the harness is killed.
func Start(ctx context.Context, name, logPath string, announce func(line string) (string, bool), env []string, bin string, args ...string) (*Proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	pw.Close()
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	urls := make(chan string, 1)
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		// Lines are scanned until the announcement; the rest (a service
		// logs each request) is copied to the file as it comes.
		defer copied.Done()
		defer logFile.Close()
		br := bufio.NewReader(pr)
		for {
			line, err := br.ReadString('\n')
			_, _ = logFile.WriteString(line)
			if u, ok := announce(strings.TrimSpace(line)); ok {
				urls <- u
				break
			}
			if err != nil {
				return
			}
		}
		_, _ = io.Copy(logFile, br)
	}()
	go func() {
		err := cmd.Wait()
		copied.Wait()
		pr.Close()
		p.err = err
		close(p.done)
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case p.URL = <-urls:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it listened (%v):\n%s", name, p.err, gotool.Tail(logPath))
	case <-timer.C:
		p.Stop()
		return nil, fmt.Errorf("%s did not listen within a minute:\n%s", name, gotool.Tail(logPath))
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
}

// Stop asks the process to end (SIGTERM), waits for it a while, then kills
// it.
func (p *Proc) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// AnnouncedByFakes reads the fakes' "openai listening on http://..." line.
func AnnouncedByFakes(line string) (string, bool) {
	_, u, ok := strings.Cut(line, " listening on ")
	return u, ok
}

// AnnouncedByService reads the service's JSON "listening" log line.
func AnnouncedByService(line string) (string, bool) {
	var l struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "listening" || l.Addr == "" {
		return "", false
	}
	return "http://" + l.Addr, true
}

// Env is the harness's environment without the settings of the service
// and of its providers (COMPANION_*, OTEL_*, OPENAI_*, CO_API_KEY), so a
// shell's settings do not change what is measured, with extra after it.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "COMPANION_") || strings.HasPrefix(kv, "OTEL_") ||
			strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "CO_API_KEY") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
