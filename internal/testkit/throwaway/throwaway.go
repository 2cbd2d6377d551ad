// Package throwaway runs private servers for tests: a process of the test
// binary's own, on a free loopback port, with its data in a temporary
// folder, that lives as long as the test binary and is stopped, and its
// folder removed, when the binary exits, however it exits.
//
// A test binary has no hook that runs at its exit without a TestMain in
// every package, and a server killed with its test binary would leave its
// folder behind. So each server gets a reaper: a small shell process
// holding the read end of a pipe whose write end only the test binary
// holds. When the binary exits (normally, by a panic, a timeout, Ctrl-C or
// SIGKILL), the kernel closes the write end, the reaper reads end-of-file,
// signals the server, waits for it, kills what is left and removes the
// folder. Server and reaper run in process groups of their own, so a
// Ctrl-C at the terminal reaches the test binary and the reaper does the
// rest.
package throwaway

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// reaperScript waits for end-of-file on its standard input, then stops the
// server ($1, signal $2), waits up to 10 seconds for it to exit, kills its
// process group if it has not, and removes the folder $3.
const reaperScript = `trap '' INT HUP TERM
cat >/dev/null
kill "-$2" "$1" 2>/dev/null
i=0
while kill -0 "$1" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 "-$1" 2>/dev/null
rm -rf -- "$3"
`

// folderReaperScript waits for end-of-file on its standard input, then
// removes the folder $1.
const folderReaperScript = `trap '' INT HUP TERM
cat >/dev/null
rm -rf -- "$1"
`

// Process is a running server with its reaper.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	// alive is the write end of the reaper's pipe: kept open, and
	// reachable (an unreachable *os.File is closed by its finalizer), for
	// as long as the test binary runs.
	alive *os.File
}

// Dir makes a folder for a server's data, named after it. Start removes it
// when the test binary exits.
func Dir(name string) (string, error) {
	return os.MkdirTemp("", "companion-"+name+"-")
}

// TempDir makes a folder, named after what it is for, that is removed when
// the test binary exits, however it exits: for what lives as long as the
// test binary, such as a binary the tests build once.
func TempDir(name string) (string, error) {
	dir, err := Dir(name)
	if err != nil {
		return "", err
	}
	w, err := startReaper(exec.Command("sh", "-c", folderReaperScript, "reaper", dir))
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	folders.Lock()
	folders.alive = append(folders.alive, w)
	folders.Unlock()
	return dir, nil
}

// folders keeps the write ends of the folder reapers' pipes open and
// reachable while the test binary runs.
var folders struct {
	sync.Mutex
	alive []*os.File
}

// startReaper starts reaper, in a process group of its own, reading a pipe
// whose write end it returns: the reaper's work begins when that closes.
func startReaper(reaper *exec.Cmd) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	reaper.Stdin = r
	reaper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = reaper.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting a reaper: %w", err)
	}
	// The reaper outlives the test binary on purpose; nothing waits for it
	// here, and init reaps it.
	_ = reaper.Process.Release()
	return w, nil
}

// FreePort is a loopback TCP port nothing listened on a moment ago. Another
// process may take it before the server does: callers retry on a bind
// failure.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts cmd in a process group of its own and a reaper that, when
// the test binary exits, sends it stop, then removes dir. cmd.SysProcAttr
// may hold a Credential; Setpgid is set here.
func Start(cmd *exec.Cmd, stop syscall.Signal, dir string) (*Process, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("no sh to run the reaper of %s: %w", cmd.Path, err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()

	w, err := startReaper(exec.Command(sh, "-c", reaperScript, "reaper", strconv.Itoa(cmd.Process.Pid), strconv.Itoa(int(stop)), dir))
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s: %w", cmd.Path, err)
	}
	p.alive = w
	return p, nil
}

// Pid is the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the server has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitError describes how the server exited, once it has.
func (p *Process) ExitError() error {
	select {
	case <-p.exited:
		return errors.New(p.cmd.ProcessState.String())
	default:
		return nil
	}
}

// Kill kills the server's process group at once and waits until it has
// exited, for a server that never became ready; its reaper, if it has one,
// still removes the folder when the test binary exits.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}
