package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/testkit"
)

// readmeExample is one of the README's curl examples: the commands of a
// sh block and the output the README shows for them (in the block after a
// "# HTTP" line, or in the json or text block that follows it), if any.
type readmeExample struct {
	line    int
	command string
	want    string
}

// readmeService is where the README's examples send their requests.
const readmeService = "http://127.0.0.1:4111"

// readmeExamples reads the curl examples of the Markdown file at path, in
// order: the sh blocks whose every command is a curl of readmeService that
// needs no variable of an earlier step.
func readmeExamples(t *testing.T, path string) []readmeExample {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type block struct {
		line       int
		lang, body string
	}
	var blocks []block
	var cur *block
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			lang, _, _ := strings.Cut(strings.TrimPrefix(l, "```"), " ")
			cur = &block{line: n, lang: lang}
		case cur != nil && l == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body += l + "\n"
		}
	}
	var out []readmeExample
	for i, bl := range blocks {
		if bl.lang != "sh" {
			continue
		}
		ex := readmeExample{line: bl.line, command: bl.body}
		if cmd, want, ok := strings.Cut(bl.body, "\n# HTTP "); ok {
			_, want, _ = strings.Cut(want, "\n")
			ex.command, ex.want = cmd+"\n", want
		} else if i+1 < len(blocks) && (blocks[i+1].lang == "json" || blocks[i+1].lang == "text") {
			ex.want = blocks[i+1].body
		}
		if curlsOnly(ex.command) {
			out = append(out, ex)
		}
	}
	return out
}

// curlsOnly reports whether every command of a sh block is a curl of
// readmeService without shell variables (one that needs an earlier step's
// output, such as a run id, is left to the tests of that feature). A line
// that goes on a command (an option, a pipe, a body's next line) is
// indented.
func curlsOnly(body string) bool {
	if strings.Contains(body, "$") || !strings.Contains(body, readmeService) {
		return false
	}
	for _, l := range strings.Split(body, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "curl ") {
			return false
		}
	}
	return true
}

// TestREADMEExamples runs the curl examples of the README and of the docs
// that have them, top to bottom, each file against a fresh service on its
// defaults (SQLite, the fake model, the fake Open-Meteo), as a reader
// following it with `make run` would, and checks that each prints what
// the page shows: ids, run ids, trace ids and times differ from run to
// run; "..." in a shown output stands for lines left out; a JSON output
// shown may leave fields out.
func TestREADMEExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			testkit.Unavailable(t, tool+" is not installed", "bash .ci/jq installs jq")
		}
	}
	for _, tc := range []struct {
		path string
		// least is how many examples, each with its output, the page
		// shows; fewer means the reader above no longer finds them, not
		// that they went.
		least int
	}{
		{"../../README.md", 7},
		{"../../docs/memory.md", 5},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			examples := readmeExamples(t, tc.path)
			if len(examples) < tc.least {
				t.Fatalf("found %d curl examples, want at least %d", len(examples), tc.least)
			}
			svc := apptest.Start(t, nil)
			for _, ex := range examples {
				cmd := exec.Command("bash", "-c", "set -eo pipefail\n"+strings.ReplaceAll(ex.command, readmeService, svc.URL))
				got, err := cmd.Output()
				if err != nil {
					t.Errorf("line %d: %v\n%s", ex.line, err, ex.command)
					continue
				}
				if err := sameOutput(ex.want, string(got)); err != nil {
					t.Errorf("line %d: %v\n--- the page shows:\n%s--- the service printed:\n%s", ex.line, err, ex.want, clip(got))
				}
			}
		})
	}
}

// clip is the start of a long output, enough to see where it went wrong.
func clip(b []byte) string {
	const most = 2000
	if len(b) > most {
		return string(b[:most]) + "...\n"
	}
	return string(b)
}

// variable matches what differs from run to run: UUIDs, trace ids, times.
var variable = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

func normalise(s string) string { return variable.ReplaceAllString(s, "<id>") }

// sameOutput reports how got differs from want, the output the README
// shows (nothing to compare when want is empty).
func sameOutput(want, got string) error {
	want, got = normalise(strings.TrimSpace(want)), normalise(strings.TrimSpace(got))
	if want == "" {
		return nil
	}
	var w, g any
	if json.Unmarshal([]byte(want), &w) == nil {
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			return fmt.Errorf("the README shows JSON, the service printed something else: %v", err)
		}
		return subset("", w, g)
	}
	return sameLines(strings.Split(want, "\n"), strings.Split(got, "\n"))
}

// subset reports where want, a JSON value, is not part of got: an object's
// fields may be left out, an array's elements may not.
func subset(at string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", at, got)
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", at, k)
			}
			if err := subset(at+"."+k, v, gv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %v", at, len(w), got)
		}
		for i := range w {
			if err := subset(fmt.Sprintf("%s[%d]", at, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Errorf("%s: want %v, got %v", at, want, got)
		}
		return nil
	}
}

// sameLines reports how got differs from want line by line, where a
// line "..." in want stands for any lines: the part before the first one
// starts got, the part after the last one ends it, and those between come
// in order.
func sameLines(want, got []string) error {
	var parts [][]string
	part := []string{}
	for _, l := range want {
		if strings.TrimSpace(l) == "..." {
			parts = append(parts, part)
			part = []string{}
			continue
		}
		part = append(part, l)
	}
	parts = append(parts, part)
	if len(parts) == 1 {
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			return fmt.Errorf("the output differs")
		}
		return nil
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(got) < len(first)+len(last) || !equalLines(first, got[:len(first)]) || !equalLines(last, got[len(got)-len(last):]) {
		return fmt.Errorf("the output's start or end differs")
	}
	rest := got[len(first) : len(got)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := indexLines(rest, p)
		if i < 0 {
			return fmt.Errorf("the lines %q are not in the output, in order", p)
		}
		rest = rest[i+len(p):]
	}
	return nil
}

func equalLines(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// indexLines is where the lines of p start in s, or -1.
func indexLines(s, p []string) int {
	for i := 0; i+len(p) <= len(s); i++ {
		if equalLines(p, s[i:i+len(p)]) {
			return i
		}
	}
	return -1
}
