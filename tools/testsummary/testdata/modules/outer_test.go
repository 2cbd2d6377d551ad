// Package outer is run by testsummary's tests with the module nested in
// it: one test passes, one fails when SAMPLE_FAIL=1.
package outer

import (
	"os"
	"testing"
)

func TestOuter(t *testing.T) {}

func TestOuterMayFail(t *testing.T) {
	if os.Getenv("SAMPLE_FAIL") == "1" {
		t.Error("the outer widget broke")
	}
}
