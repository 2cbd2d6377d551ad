package throwaway_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/testkit/throwaway"
)

// TestMain lets the test binary play the part of a test binary that starts
// a server and then exits in some way (the helper mode below).
func TestMain(m *testing.M) {
	if how := os.Getenv("THROWAWAY_HELPER"); how != "" {
		helper(how)
		return
	}
	os.Exit(m.Run())
}

// helper starts a server (sleep) with a folder, prints both, then exits as
// asked: "exit" returns, "kill" waits to be killed.
func helper(how string) {
	dir, err := throwaway.Dir("reaper-test")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o600); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	p, err := throwaway.Start(exec.Command("sleep", "600"), syscall.SIGTERM, dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	folder, err := throwaway.TempDir("reaper-test-folder")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(p.Pid(), dir, folder)
	if how == "kill" {
		time.Sleep(time.Minute)
	}
}

func TestReaperCleansUpAfterTheBinaryExits(t *testing.T) {
	for _, how := range []string{"exit", "kill"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "THROWAWAY_HELPER="+how)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			fields := strings.Fields(line)
			if len(fields) != 3 {
				_ = cmd.Process.Kill()
				t.Fatalf("helper said %q", line)
			}
			pid, perr := strconv.Atoi(fields[0])
			dir, folder := fields[1], fields[2]
			if perr != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("helper said %q", line)
			}
			if err := syscall.Kill(pid, 0); err != nil {
				t.Fatalf("the server is not running: %v", err)
			}
			if how == "kill" {
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()

			deadline := time.Now().Add(20 * time.Second)
			for {
				_, statErr := os.Stat(dir)
				_, folderErr := os.Stat(folder)
				gone := syscall.Kill(pid, 0) != nil
				if gone && os.IsNotExist(statErr) && os.IsNotExist(folderErr) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the test binary exited: server gone %v, its folder %s: %v, the other folder %s: %v", gone, dir, statErr, folder, folderErr)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

func TestFreePort(t *testing.T) {
	p, err := throwaway.FreePort()
	if err != nil || p <= 0 {
		t.Fatalf("%d %v", p, err)
	}
}
