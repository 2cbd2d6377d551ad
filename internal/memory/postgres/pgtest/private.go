package pgtest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/throwaway"
)

// Server is a private PostgreSQL server of one test's, which the test may
// stop as a crash would and start again on the same data and port: a
// database outage.
type Server struct {
	// URL is the server's, its database postgres.
	URL string

	bin, dir, data string
	port           int
	cred           *syscall.Credential
	proc           *throwaway.Process
	// crashed keeps the processes that Crash killed reachable: each holds
	// its reaper's pipe, which a finalizer would close, and the reaper
	// would then remove the data folder under the server started again.
	crashed []*throwaway.Process
}

// durable makes a commit that was acknowledged survive the server's crash
// (its process's, not the machine's: fsync stays off), as a deployment's
// does: the shared server trades that for speed.
const durable = "synchronous_commit=on"

// Private starts a server of the test's own (see the package comment for
// what it needs), stopped when the test ends.
func Private(t testing.TB) *Server {
	t.Helper()
	if os.Getenv("COMPANION_TEST_POSTGRES_URL") != "" {
		// A server given from outside cannot be stopped by a test; the
		// programs may still be there to start one.
		if _, err := binDir(); err != nil {
			t.Skipf("skipping: a private PostgreSQL needs the server programs: %v", err)
		}
	}
	s := &Server{}
	var err error
	if s.bin, err = binDir(); err == nil {
		s.cred, err = runAs()
	}
	if err != nil {
		testkit.Unavailable(t, "no PostgreSQL: "+err.Error(), remedy)
	}
	url, proc, dir, data, port, err := initPrivate(s.bin, s.cred, durable)
	if err != nil {
		testkit.Unavailable(t, "no PostgreSQL: "+err.Error(), remedy)
	}
	s.URL, s.proc, s.dir, s.data, s.port = url, proc, dir, data, port
	t.Cleanup(func() {
		if s.proc != nil {
			s.proc.Kill()
		}
		_ = os.RemoveAll(s.dir)
	})
	return s
}

// Crash kills the server at once, as a crash would: every connection to it
// breaks, and none can be made until Start.
func (s *Server) Crash(t testing.TB) {
	t.Helper()
	s.proc.Kill()
	s.crashed = append(s.crashed, s.proc)
	s.proc = nil
}

// Start starts the crashed server again, on its data and port, and waits
// until it takes connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	// The crashed server's backends notice their postmaster is gone and
	// exit, and hold its shared memory until they have: on a busy machine
	// that takes a moment, in which a new server refuses to start.
	deadline := time.Now().Add(15 * time.Second)
	for {
		// The crashed server's lock file names a process that is gone.
		_ = os.Remove(filepath.Join(s.data, "postmaster.pid"))
		_, proc, err := startServer(s.bin, s.dir, s.data, s.port, s.cred, durable)
		if err == nil {
			s.proc = proc
			return
		}
		if !strings.Contains(err.Error(), "pre-existing shared memory block") || time.Now().After(deadline) {
			t.Fatalf("starting the private PostgreSQL again: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
