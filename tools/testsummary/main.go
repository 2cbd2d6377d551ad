// Command testsummary runs `go test -json` with the arguments it is given
// and prints what `go test` would: each package's ok or FAIL line, the
// output of failed tests, build errors. Then it lists why tests were
// skipped, grouped by reason, and ends with one line:
//
//	tests: 812 passed, 0 failed, 14 skipped
//
// It exits with go test's status, or 1 when a test failed, so a failure
// still fails `make test`.
//
//	go run ./tools/testsummary -race -count=1 ./...
//
// Leading -dir flags run the same go test in each directory named, one
// after the other, with one summary of them all: a repository of several
// modules needs one run in each, since ./... stops at a nested go.mod.
//
//	go run ./tools/testsummary -dir . -dir deploy -race -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs go test -json with args in each directory of its leading -dir
// flags (the current one without them) and summarises their events on
// stdout; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	dirs, args, err := splitDirs(args)
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	s := newSummary(stdout)
	status := 0
	for _, dir := range dirs {
		// A failure in one module does not hide the results of the next.
		if code := s.goTest(dir, args, stderr); status == 0 {
			status = code
		}
	}
	s.finish()
	if status == 0 && (s.failed > 0 || len(s.failedPackages) > 0) {
		status = 1
	}
	return status
}

// splitDirs takes the leading -dir flags off args: the directories to run
// go test in, "." when there are none, and what go test gets.
func splitDirs(args []string) (dirs, rest []string, err error) {
	for len(args) > 0 {
		if d, ok := strings.CutPrefix(args[0], "-dir="); ok {
			dirs, args = append(dirs, d), args[1:]
			continue
		}
		if args[0] != "-dir" {
			break
		}
		if len(args) < 2 {
			return nil, nil, errors.New("-dir needs a directory")
		}
		dirs, args = append(dirs, args[1]), args[2:]
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	return dirs, args, nil
}

// goTest runs go test -json args in dir, adding its events to the
// summary; it returns go test's exit status.
func (s *summary) goTest(dir string, args []string, stderr io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 1
	}
	s.read(events)
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintln(stderr, "testsummary: go test:", err)
		return 1
	}
	return 0
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail
}

// testKey names a test within its package.
type testKey struct{ pkg, test string }

// summary follows the event stream: it prints as it goes and counts.
type summary struct {
	w                       io.Writer
	passed, failed, skipped int
	output                  map[testKey][]string // output of running tests
	pending                 map[string][]string  // what a package printed, shown when it ends
	failedInPkg             map[string]int
	failedPackages          []string            // packages that failed with no failing test
	skips                   map[string][]string // reason -> tests
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, output: map[testKey][]string{}, pending: map[string][]string{}, failedInPkg: map[string]int{}, skips: map[string][]string{}}
}

// read consumes the event stream.
func (s *summary) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.w, "%s\n", line) // not an event: pass it on
			continue
		}
		s.add(e)
	}
}

// framing reports lines go test prints only in verbose mode.
func framing(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func (s *summary) add(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.w, e.Output)
		return
	case "build-fail":
		return // the package's own fail event follows
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			if e.Output != "PASS\n" {
				s.pending[e.Package] = append(s.pending[e.Package], e.Output)
			}
		case "fail":
			// Tests still running when their package failed (a panic, a
			// timeout) end here as failures.
			var unfinished []string
			for k, lines := range s.output {
				if k.pkg == e.Package {
					s.failed++
					s.failedInPkg[e.Package]++
					unfinished = append(unfinished, fmt.Sprintf("--- FAIL: %s (did not finish)\n", k.test))
					unfinished = append(unfinished, visible(lines)...)
					delete(s.output, k)
				}
			}
			s.pending[e.Package] = append(unfinished, s.pending[e.Package]...)
			if s.failedInPkg[e.Package] == 0 {
				s.failedPackages = append(s.failedPackages, e.Package)
			}
			s.flush(e.Package)
		case "pass", "skip":
			s.flush(e.Package)
		}
		return
	}
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "run":
		s.output[k] = nil
	case "output":
		s.output[k] = append(s.output[k], e.Output)
	case "pass":
		s.passed++
		delete(s.output, k)
	case "fail":
		s.failed++
		s.failedInPkg[e.Package]++
		// go test without -v puts the --- FAIL line above the test's log.
		var head, rest []string
		for _, l := range visible(s.output[k]) {
			if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL: "+e.Test+" ") {
				head = append(head, l)
			} else {
				rest = append(rest, l)
			}
		}
		s.pending[e.Package] = append(append(s.pending[e.Package], head...), rest...)
		delete(s.output, k)
	case "skip":
		s.skipped++
		reason := skipReason(s.output[k])
		s.skips[reason] = append(s.skips[reason], e.Package+"."+e.Test)
		delete(s.output, k)
	}
}

// visible is the part of a test's output go test shows without -v.
func visible(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !framing(l) {
			out = append(out, l)
		}
	}
	return out
}

// flush prints what a package printed, once it has ended, so that packages
// run in parallel do not interleave, as with go test.
func (s *summary) flush(pkg string) {
	for _, l := range s.pending[pkg] {
		fmt.Fprint(s.w, l)
	}
	delete(s.pending, pkg)
}

// skipReason is what a skipped test said, without its framing lines.
func skipReason(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		if framing(l) || strings.HasPrefix(strings.TrimSpace(l), "--- SKIP") {
			continue
		}
		b.WriteString("    " + strings.TrimSpace(l) + "\n")
	}
	if b.Len() == 0 {
		return "    (no reason given)\n"
	}
	return b.String()
}

// finish prints the skip reasons and the closing line.
func (s *summary) finish() {
	// Output of packages that never ended (go test was killed).
	pkgs := make([]string, 0, len(s.pending))
	for p := range s.pending {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		s.flush(p)
	}
	if len(s.skips) > 0 {
		reasons := make([]string, 0, len(s.skips))
		for r := range s.skips {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if a, b := len(s.skips[reasons[i]]), len(s.skips[reasons[j]]); a != b {
				return a > b
			}
			return reasons[i] < reasons[j]
		})
		fmt.Fprintln(s.w, "\nskipped tests, by reason:")
		for _, r := range reasons {
			tests := s.skips[r]
			shown := tests
			more := ""
			if len(shown) > 3 {
				shown, more = shown[:3], fmt.Sprintf(" and %d more", len(tests)-3)
			}
			fmt.Fprintf(s.w, "  %d skipped (%s%s):\n%s", len(tests), strings.Join(shown, ", "), more, r)
		}
	}
	if len(s.failedPackages) > 0 {
		fmt.Fprintf(s.w, "\npackages that failed to build or run: %s\n", strings.Join(s.failedPackages, ", "))
	}
	fmt.Fprintf(s.w, "\ntests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}
