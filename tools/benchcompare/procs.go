//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
