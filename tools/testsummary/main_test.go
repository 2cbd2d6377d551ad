package main

import (
	"strings"
	"testing"

	_ "github.com/companionhq/companion/internal/testkit"
)

// TestRun runs go test on a sample package, passing and failing.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	for _, tc := range []struct {
		fail     string
		exit     int
		closing  string
		contains []string
	}{
		{"0", 0, "tests: 2 passed, 0 failed, 1 skipped\n", []string{"ok  \t", "no widget here", "1 skipped (github.com/companionhq/companion/tools/testsummary/testdata/sample.TestSkips)"}},
		{"1", 1, "tests: 1 passed, 1 failed, 1 skipped\n", []string{"--- FAIL: TestMayFail (", "--- FAIL: TestMayFail (0.00s)\n    sample_test.go:16: the widget broke\n", "FAIL\tgithub.com/companionhq/companion/tools/testsummary/testdata/sample"}},
	} {
		t.Run("SAMPLE_FAIL="+tc.fail, func(t *testing.T) {
			t.Setenv("SAMPLE_FAIL", tc.fail)
			var out, errs strings.Builder
			exit := run([]string{"-count=1", "./testdata/sample"}, &out, &errs)
			if exit != tc.exit || !strings.HasSuffix(out.String(), tc.closing) {
				t.Fatalf("exit %d, want %d; output:\n%s\nstderr:\n%s", exit, tc.exit, out.String(), errs.String())
			}
			for _, want := range tc.contains {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), "=== RUN") || strings.Contains(out.String(), "--- PASS") {
				t.Errorf("verbose lines in the output:\n%s", out.String())
			}
		})
	}
}

// TestDirs: -dir runs go test in each module named, the nested one too,
// though ./... of the outer stops at its go.mod; a failure in the first
// does not stop the second, and the closing line counts both.
func TestDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	for _, tc := range []struct {
		fail    string
		exit    int
		closing string
	}{
		{"0", 0, "tests: 3 passed, 0 failed, 0 skipped\n"},
		{"1", 1, "tests: 2 passed, 1 failed, 0 skipped\n"},
	} {
		t.Run("SAMPLE_FAIL="+tc.fail, func(t *testing.T) {
			t.Setenv("SAMPLE_FAIL", tc.fail)
			var out, errs strings.Builder
			exit := run([]string{"-dir", "testdata/modules", "-dir=testdata/modules/nested", "-count=1", "./..."}, &out, &errs)
			if exit != tc.exit || !strings.HasSuffix(out.String(), tc.closing) {
				t.Fatalf("exit %d, want %d; output:\n%s\nstderr:\n%s", exit, tc.exit, out.String(), errs.String())
			}
			if strings.Count(out.String(), "example.com/outer/nested") != 1 || !strings.Contains(out.String(), "ok  \texample.com/outer/nested\t") {
				t.Errorf("the nested module ran other than once:\n%s", out.String())
			}
		})
	}
	var out, errs strings.Builder
	if exit := run([]string{"-dir"}, &out, &errs); exit != 2 || !strings.Contains(errs.String(), "-dir needs a directory") {
		t.Errorf("a -dir without a directory: exit %d, stderr %q", exit, errs.String())
	}
}

// TestBuildFailure: a package that does not build fails the run, and says
// so though no test failed.
func TestBuildFailure(t *testing.T) {
	stream := `{"ImportPath":"example.com/broken [example.com/broken.test]","Action":"build-output","Output":"# example.com/broken\n"}
{"ImportPath":"example.com/broken [example.com/broken.test]","Action":"build-output","Output":"broken.go:3:1: syntax error\n"}
{"ImportPath":"example.com/broken [example.com/broken.test]","Action":"build-fail"}
{"Action":"start","Package":"example.com/broken"}
{"Action":"output","Package":"example.com/broken","Output":"FAIL\texample.com/broken [build failed]\n"}
{"Action":"fail","Package":"example.com/broken","Elapsed":0,"FailedBuild":"example.com/broken [example.com/broken.test]"}
`
	var out strings.Builder
	s := newSummary(&out)
	s.read(strings.NewReader(stream))
	s.finish()
	for _, want := range []string{"syntax error", "FAIL\texample.com/broken [build failed]", "packages that failed to build or run: example.com/broken", "tests: 0 passed, 0 failed, 0 skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if len(s.failedPackages) != 1 {
		t.Errorf("failed packages %v", s.failedPackages)
	}
}

// TestUnfinishedTests: tests still running when their package failed (a
// panic, a timeout) count as failed, with their output.
func TestUnfinishedTests(t *testing.T) {
	stream := `{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"    hangs_test.go:9: waiting\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`
	var out strings.Builder
	s := newSummary(&out)
	s.read(strings.NewReader(stream))
	s.finish()
	for _, want := range []string{"panic: test timed out", "--- FAIL: TestHangs (did not finish)", "hangs_test.go:9: waiting", "tests: 0 passed, 1 failed, 0 skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
