// Package pgtest gives tests a fresh PostgreSQL schema of their own.
//
// The server is the one named by COMPANION_TEST_POSTGRES_URL when it is set
// (CI's service containers set it). Otherwise each test binary starts a
// private, throwaway server the first time a test asks for one, from the
// PostgreSQL programs installed on the machine (initdb and postgres, found
// on PATH, through pg_config, or in Debian's /usr/lib/postgresql/<version>/bin):
// its data in a temporary folder, on a free loopback port, with trust
// authentication set by initdb, stopped and removed when the test binary
// exits. The machine's own PostgreSQL and its configuration are never used
// or changed.
//
// PostgreSQL refuses to run as root; as root, the private server runs as
// the postgres user (which Debian's packages create), else as nobody.
//
// Without the programs, or when the server cannot start, tests are skipped
// with a message saying how to get them, except with CI=true, where they
// fail: CI must test PostgreSQL.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/throwaway"
)

// remedy tells how to give the tests a PostgreSQL.
const remedy = "install PostgreSQL's server programs (`COMPANION_INSTALL=1 make test` installs Debian's postgresql), " +
	"or set COMPANION_TEST_POSTGRES_URL to a server the tests may create schemas in"

// shared is the test binary's server: started once, kept until it exits.
var shared struct {
	once sync.Once
	url  string
	err  error
	proc *throwaway.Process
}

// server returns the URL of the server tests use, starting the private one
// on first use. It skips the test, or fails it with CI=true, when there is
// none.
func server(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("COMPANION_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	shared.once.Do(func() {
		shared.url, shared.proc, shared.err = startPrivate()
	})
	if shared.err != nil {
		testkit.Unavailable(t, fmt.Sprintf("no PostgreSQL: %v", shared.err), remedy)
	}
	return shared.url
}

// URL creates an empty schema for the test and returns a URL whose
// connections use it (search_path). The schema is dropped when the test
// ends, after the cleanups registered later (closing stores) have run.
func URL(t testing.TB) string {
	t.Helper()
	// The server first: starting the private one takes its own time, which
	// the schema's 10 seconds must not include.
	srv := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url, drop, err := NewSchema(ctx, srv, "companion_test_")
	if err != nil {
		t.Fatalf("the test PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Error(err)
		}
	})
	return url
}

// NewSchema creates an empty schema, named prefix and random hex digits, on
// the PostgreSQL server at server, and returns a URL whose connections use
// it (search_path) and a function that drops it.
func NewSchema(ctx context.Context, server, prefix string) (string, func(context.Context) error, error) {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", nil, fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	drop := func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			return fmt.Errorf("dropping schema %s: %w", schema, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			return fmt.Errorf("dropping schema %s: %w", schema, err)
		}
		return nil
	}
	sep := "?"
	if strings.Contains(server, "?") {
		sep = "&"
	}
	return server + sep + "search_path=" + schema, drop, nil
}

// binDir finds the folder holding initdb and postgres.
func binDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	// Debian's packages keep them off PATH, one folder per major version;
	// the newest first.
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	dirs = append(dirs, debian...)
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's initdb and postgres are not installed (looked on PATH, in pg_config --bindir and in /usr/lib/postgresql/*/bin)")
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// runAs is the user the server runs as: this process's own, or, as root,
// postgres or else nobody (nil: this process's).
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and there is neither a postgres nor a nobody user to run PostgreSQL as")
}

// startPrivate initialises a cluster in a temporary folder and starts it on
// a free port.
func startPrivate() (string, *throwaway.Process, error) {
	bin, err := binDir()
	if err != nil {
		return "", nil, err
	}
	cred, err := runAs()
	if err != nil {
		return "", nil, err
	}
	url, proc, _, _, _, err := initPrivate(bin, cred)
	return url, proc, err
}

// initPrivate initialises a cluster in a temporary folder and starts it on
// a free port, returning its URL, process, folder, data folder and port.
func initPrivate(bin string, cred *syscall.Credential, settings ...string) (url string, proc *throwaway.Process, dir, data string, port int, err error) {
	dir, err = throwaway.Dir("postgres")
	if err != nil {
		return "", nil, "", "", 0, err
	}
	data = filepath.Join(dir, "data")
	if cred != nil {
		// The folder is the server user's; the test binary, as root, may
		// still read its log and remove it.
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", nil, "", "", 0, err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, "", "", 0, fmt.Errorf("initdb in %s: %v\n%s", data, err, out)
	}

	// A port may be taken between choosing and binding it: a few tries.
	var lastErr error
	for range 3 {
		port, err := throwaway.FreePort()
		if err != nil {
			return "", nil, "", "", 0, err
		}
		url, proc, err := startServer(bin, dir, data, port, cred, settings...)
		if err == nil {
			return url, proc, dir, data, port, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return "", nil, "", "", 0, lastErr
}

// startServer starts postgres on port and waits until it takes
// connections. Its log is the folder's postgres.log.
func startServer(bin, dir, data string, port int, cred *syscall.Credential, settings ...string) (string, *throwaway.Process, error) {
	logPath := filepath.Join(dir, "postgres.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "", nil, err
	}
	defer log.Close()
	// Loopback TCP only, no Unix socket; durability traded for speed, as
	// the data is thrown away.
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200"}
	for _, kv := range settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGQUIT: PostgreSQL's immediate shutdown; nothing needs saving.
	proc, err := throwaway.Start(cmd, syscall.SIGQUIT, dir)
	if err != nil {
		return "", nil, fmt.Errorf("starting postgres: %w", err)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			cancel()
			return url, proc, nil
		}
		cancel()
		select {
		case <-proc.Exited():
			out, _ := os.ReadFile(logPath)
			return "", nil, fmt.Errorf("postgres on port %d exited (%v):\n%s", port, proc.ExitError(), out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			proc.Kill()
			out, _ := os.ReadFile(logPath)
			return "", nil, fmt.Errorf("postgres on port %d does not take connections: %v\n%s", port, err, out)
		}
	}
}
