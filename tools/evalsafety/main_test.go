package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSet(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReport: a small set through the detector and a fake moderation
// endpoint, which flags one message the detector misses.
func TestReport(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/moderations" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req struct{ Model, Input string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m" {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		seen = append(seen, req.Input)
		flagged := strings.Contains(req.Input, "zzz")
		json.NewEncoder(w).Encode(map[string]any{"results": []any{map[string]any{
			"categories": map[string]bool{"self-harm/intent": flagged, "violence": true},
		}}})
	}))
	defer srv.Close()
	path := writeSet(t,
		`{"text":"I want to die","label":"crisis","kind":"suicidal-ideation","note":"direct"}`,
		`{"text":"zzz an oblique one","label":"crisis","kind":"suicidal-ideation","note":"oblique"}`,
		`{"text":"I cut myself again","label":"crisis","kind":"self-harm","note":"act"}`,
		`{"text":"this workout is killing me","label":"safe","kind":"","note":"idiom"}`,
	)
	var out strings.Builder
	err := run(context.Background(), []string{"-set", path, "-guard-url", srv.URL, "-guard-model", "m", "-guard-key", "k"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Errorf("guard asked %d times, want 4", len(seen))
	}
	got := out.String()
	for _, want := range []string{
		"3 crisis (2 suicidal-ideation, 1 self-harm), 1 safe",
		"detector alone",
		"overall             0.667 (2/3)       0.000 (0/1)",
		"detector or guard",
		"overall             1.000 (3/3)       0.000 (0/1)",
		"misses (detector): 1",
		"zzz an oblique one",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

func TestBadSet(t *testing.T) {
	path := writeSet(t, `{"text":"x","label":"crisis","kind":"","note":""}`)
	if err := run(context.Background(), []string{"-set", path}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "set.jsonl:1") {
		t.Errorf("run = %v, want an error naming the line", err)
	}
}

func TestGuardError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	path := writeSet(t, `{"text":"hello","label":"safe","kind":"","note":""}`)
	err := run(context.Background(), []string{"-set", path, "-guard-url", srv.URL}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("run = %v, want the guard's 401", err)
	}
}

// TestTargets: -min-recall and -max-false-trips fail the run when the
// detector alone, over every set together, misses them, and only then.
func TestTargets(t *testing.T) {
	a := writeSet(t,
		`{"text":"I want to die","label":"crisis","kind":"suicidal-ideation","note":"direct"}`,
		`{"text":"this workout is killing me","label":"safe","kind":"","note":"idiom"}`,
	)
	b := filepath.Join(t.TempDir(), "b.jsonl")
	if err := os.WriteFile(b, []byte(`{"text":"zzz an oblique one","label":"crisis","kind":"suicidal-ideation","note":"oblique"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sets := a + "," + b // recall 1/2 together, no false trip
	for _, c := range []struct {
		flags []string
		fail  bool
	}{
		{nil, false},
		{[]string{"-min-recall", "0.5", "-max-false-trips", "0"}, false},
		{[]string{"-min-recall", "0.6"}, true},
		{[]string{"-set", a, "-min-recall", "1"}, false},
	} {
		args := append([]string{"-set", sets}, c.flags...)
		var out strings.Builder
		err := run(context.Background(), args, &out, io.Discard)
		if (err != nil) != c.fail {
			t.Errorf("%v: run = %v, want failure %v", c.flags, err, c.fail)
		}
		if err != nil && !strings.Contains(err.Error(), "recall is 0.500") {
			t.Errorf("%v: error %q does not give the recall", c.flags, err)
		}
	}
	// A false trip over the limit fails too.
	trip := writeSet(t, `{"text":"I want to die","label":"safe","kind":"","note":"mislabelled"}`)
	if err := run(context.Background(), []string{"-set", trip, "-max-false-trips", "0.5"}, io.Discard, io.Discard); err == nil {
		t.Error("a false-trip rate of 1 passed a limit of 0.5")
	}
}
