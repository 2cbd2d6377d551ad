//go:build !linux

package main

import (
	"fmt"
	"os"
)

// The harness reads /proc for memory and CPU and sets Linux process
// attributes on its children: it runs on Linux only.
func main() {
	fmt.Fprintln(os.Stderr, "benchcompare runs on Linux only")
	os.Exit(1)
}
