package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// SmallFS mounts a filesystem of size bytes (a tmpfs) in a new directory of
// the test's and unmounts it when the test ends; mounting needs root (or
// CAP_SYS_ADMIN), which CI has.
func SmallFS(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "size=" + strconv.Itoa(size)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		Unavailable(t, "mounting a small filesystem: "+err.Error(), "run the tests as root")
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// FillFS writes a file in dir until the filesystem is full and returns a
// function that deletes it again.
func FillFS(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}
