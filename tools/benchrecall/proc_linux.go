package main

import "syscall"

// childAttr makes the service die with the harness, even when the harness
// is killed.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
