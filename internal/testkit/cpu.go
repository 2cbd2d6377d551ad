package testkit

import (
	"syscall"
	"testing"
	"time"
)

// CPUPerOp starts counting the process's CPU time (user and system) and
// returns what reports it, divided by b.N, as the metric cpu-ns/op: on a
// shared machine it is steadier than the wall time. Call it after the
// benchmark's set-up, and the function it returns once the loop is done.
func CPUPerOp(b *testing.B) (report func()) {
	b.Helper()
	start := cpuTime(b)
	return func() { b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op") }
}

func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
