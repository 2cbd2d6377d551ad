// Package sample is run by testsummary's tests: one test passes, one is
// skipped, one fails when SAMPLE_FAIL=1.
package sample

import (
	"os"
	"testing"
)

func TestPasses(t *testing.T) {}

func TestSkips(t *testing.T) { t.Skip("no widget here") }

func TestMayFail(t *testing.T) {
	if os.Getenv("SAMPLE_FAIL") == "1" {
		t.Error("the widget broke")
	}
}
