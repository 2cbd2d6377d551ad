// Package redistest gives tests a Redis: the shared test server, with a key
// prefix of their own, or a private server they may stop and start.
//
// The shared server is the one named by COMPANION_TEST_REDIS_URL when it is
// set (CI's service containers set it). Otherwise each test binary starts a
// private, throwaway redis-server the first time a test asks for one: on a
// free loopback port, saving nothing, its folder in a temporary one,
// stopped and removed when the test binary exits. The machine's own Redis is
// never used.
//
// When redis-server is not installed, or the server cannot be reached,
// tests are skipped with a message saying how to provide it, except with
// CI=true, where they fail: CI must test Redis.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/throwaway"
)

// remedy tells how to give the tests a Redis.
const remedy = "install redis-server (`COMPANION_INSTALL=1 make test` installs Debian's redis-server), " +
	"or set COMPANION_TEST_REDIS_URL to a server the tests may write to"

// shared is the test binary's private server: started once, kept until it
// exits.
var shared struct {
	once sync.Once
	url  string
	err  error
	proc *throwaway.Process
}

// ServerURL is the URL of the shared test server: COMPANION_TEST_REDIS_URL,
// or the test binary's private server, started on first use. When there is
// none it is empty, and Options skips the test (or fails it in CI) saying
// why.
func ServerURL() string {
	if u := os.Getenv("COMPANION_TEST_REDIS_URL"); u != "" {
		return u
	}
	shared.once.Do(func() {
		shared.url, shared.proc, shared.err = startPrivate()
	})
	return shared.url
}

// Options returns client options for the shared test server, once it has
// answered a PING.
func Options(t testing.TB) *redis.Options {
	t.Helper()
	url := ServerURL()
	if url == "" {
		testkit.Unavailable(t, fmt.Sprintf("no Redis: %v", shared.err), remedy)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("COMPANION_TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		testkit.Unavailable(t, fmt.Sprintf("Redis at %s is unreachable: %v", opts.Addr, err), remedy)
	}
	return opts
}

// Client returns a client of the shared test server, closed when the test
// ends. Each call makes a new client, as separate instances would have.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(Options(t))
	t.Cleanup(func() { c.Close() })
	return c
}

// Prefix returns a key prefix no other test uses. When the test ends, every
// key of the shared server that contains it is deleted, whatever was put
// before it.
func Prefix(t testing.TB) string {
	t.Helper()
	opts := Options(t)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	t.Cleanup(func() {
		c := redis.NewClient(opts)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, "*"+id+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("deleting test key %s: %v", iter.Val(), err)
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("finding the test's keys: %v", err)
		}
	})
	return "companion_test:" + id + ":"
}

// Server is a private redis-server on a port of its own, without
// persistence, that a test may stop and start again on the same port.
type Server struct {
	t    testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *os.File
}

// StartServer starts a private redis-server, stopped when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testkit.Unavailable(t, "redis-server is not on PATH to run a private server", remedy)
	}
	port, err := throwaway.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: t.TempDir(), port: port}
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Start starts the server, when stopped, and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		s.t.Fatalf("starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done, s.log = cmd, done, log
	exited := func() error { return fmt.Errorf("it exited: %v", cmd.ProcessState) }
	if err := waitPing(s.Addr(), done, exited); err != nil {
		out, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		s.t.Fatalf("redis-server on %s does not answer: %v\n%s", s.Addr(), err, out)
	}
}

// Stop kills the server, when started, and waits until it has exited.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.log.Close()
	s.cmd, s.done, s.log = nil, nil, nil
}

// startPrivate starts the test binary's shared private server and waits
// until it answers.
func startPrivate() (string, *throwaway.Process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New("redis-server is not on PATH")
	}
	dir, err := throwaway.Dir("redis")
	if err != nil {
		return "", nil, err
	}
	// A port may be taken between choosing and binding it: a few tries.
	var lastErr error
	for range 3 {
		port, err := throwaway.FreePort()
		if err != nil {
			return "", nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		logPath := filepath.Join(dir, "redis.log")
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logPath)
		proc, err := throwaway.Start(cmd, syscall.SIGTERM, dir)
		if err != nil {
			return "", nil, fmt.Errorf("starting redis-server: %w", err)
		}
		if err = waitPing(addr, proc.Exited(), func() error { return fmt.Errorf("it exited: %v", proc.ExitError()) }); err == nil {
			return "redis://" + addr + "/0", proc, nil
		}
		proc.Kill()
		out, _ := os.ReadFile(logPath)
		lastErr = fmt.Errorf("redis-server on %s: %v\n%s", addr, err, out)
	}
	os.RemoveAll(dir)
	return "", nil, lastErr
}

// waitPing waits, up to 20 seconds, until the server at addr answers PING;
// when done is closed first, the server has exited, and exited says how.
func waitPing(addr string, done <-chan struct{}, exited func() error) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return exited()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it does not answer: %v", err)
		}
	}
}
