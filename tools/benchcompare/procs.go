//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/companionhq/companion/tools/internal/gotool"
)

// build compiles the service and the fakes from the module at root into dir.
func build(ctx context.Context, root, dir string, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, gotool.Command(), "build", "-o", dir+string(filepath.Separator), "./cmd/companion", "./fakes/cmd/fakes")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the service and the fakes: %w", err)
	}
	return nil
}

// proc is a child process: a fake upstream or the service.
type proc struct {
	name string
	cmd  *exec.Cmd
	// url is the base URL it announced.
	url  string
	log  string
	done chan struct{}
	err  error // set before done is closed
}

// startProc runs bin with args and env (added to the harness's own), writes
// its output to logPath, and returns once a line of its output gives its
// base URL by announce, or fails after a timeout or when it exits.
func startProc(ctx context.Context, name, logPath string, announce func(line string) (string, bool), env []string, bin string, args ...string) (*proc, error) {
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
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = pw, pw
	// The child dies with the harness, even when the harness is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	pw.Close()
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
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
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case p.url = <-urls:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it listened (%v):\n%s", name, p.err, gotool.Tail(logPath))
	case <-timer.C:
		p.stop()
		return nil, fmt.Errorf("%s did not listen within a minute:\n%s", name, gotool.Tail(logPath))
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// stop asks the process to end (SIGTERM), waits for it a while, then kills
// it.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process ended on its own.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// announcedByFakes reads the fakes' "openai listening on http://..." line.
func announcedByFakes(line string) (string, bool) {
	_, u, ok := strings.Cut(line, " listening on ")
	return u, ok
}

// announcedByService reads the service's JSON "listening" log line.
func announcedByService(line string) (string, bool) {
	var l struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "listening" || l.Addr == "" {
		return "", false
	}
	return "http://" + l.Addr, true
}

// rss returns the resident memory of process pid in bytes (VmRSS).
func rss(pid int) (int64, error) { return statusKB(pid, "VmRSS:") }

// anonRSS returns the anonymous part of process pid's resident memory
// (RssAnon: heap, stacks), in bytes. The rest is mostly the mapped pages of
// the binary itself, which vary by megabytes for the same binary with how
// the kernel happens to cache its file (a binary the linker just wrote maps
// larger pages than a copy of it).
func anonRSS(pid int) (int64, error) { return statusKB(pid, "RssAnon:") }

// statusKB reads a "NAME: 123 kB" field of /proc/<pid>/status, in bytes.
func statusKB(pid int, name string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte(name)); ok {
			f := strings.Fields(string(v)) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", name, pid)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuTime returns the CPU time (user and system) process pid has used.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are counted
	// after its closing parenthesis, where field 3 (state) is the first.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// selfCPU returns the CPU time the harness has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFileLimit raises the harness's limit of open files to at least want
// (children inherit it): the soft limit up to the hard one, and the hard
// one too when allowed.
func raiseFileLimit(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Max < want {
		raised := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return want, nil
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}
