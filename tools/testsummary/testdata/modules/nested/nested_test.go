// Package nested is a module of its own inside testsummary's outer sample
// module, which ./... there does not reach: one test passes.
package nested

import "testing"

func TestNested(t *testing.T) {}
