package pricing_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
)

func TestCost(t *testing.T) {
	table := pricing.Default()
	for _, tc := range []struct {
		name            string
		provider, model string
		usage           model.Usage
		want            pricing.Cost
	}{
		{"the fake model", "fake", "fake", model.Usage{InputTokens: 205, OutputTokens: 41, CachedInputTokens: 87},
			pricing.Cost{Input: 118e-6, CachedInput: 43.5e-6, Output: 82e-6}},
		{"cached at the input price when the model has none", "cohere", "command-a-03-2025", model.Usage{InputTokens: 1000, OutputTokens: 100, CachedInputTokens: 400},
			pricing.Cost{Input: 600 * 2.5e-6, CachedInput: 400 * 2.5e-6, Output: 100 * 10e-6}},
		{"more cached than input counts the input only", "openai", "gpt-4o-mini", model.Usage{InputTokens: 10, CachedInputTokens: 50},
			pricing.Cost{CachedInput: 10 * 0.075e-6}},
		{"a model the table lacks", "ollama", "llama3", model.Usage{InputTokens: 1000, OutputTokens: 1000}, pricing.Cost{}},
		{"no usage", "fake", "fake", model.Usage{}, pricing.Cost{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := table.Cost(tc.provider, tc.model, tc.usage)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-15 }
			if !near(got.Input, tc.want.Input) || !near(got.CachedInput, tc.want.CachedInput) || !near(got.Output, tc.want.Output) {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
			if !near(got.Total(), tc.want.Input+tc.want.CachedInput+tc.want.Output) {
				t.Fatalf("total %v", got.Total())
			}
		})
	}
}

func TestLookup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(file, []byte(`{"models":{"fake/fake":{"input":7,"output":8},"llama3":{"input":0.1,"output":0.2}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	table, err := pricing.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider, model string
		want            pricing.Price
		ok              bool
	}{
		{"fake", "fake", pricing.Price{Input: 7, Output: 8}, true},                                   // the file replaces the shipped price
		{"openai", "gpt-4o-mini", pricing.Price{Input: 0.15, Output: 0.6, CachedInput: 0.075}, true}, // the shipped one stays
		{"ollama", "llama3", pricing.Price{Input: 0.1, Output: 0.2}, true},                           // by model name alone
		{"ollama", "mistral", pricing.Price{}, false},
	} {
		if got, ok := table.Lookup(tc.provider, tc.model); got != tc.want || ok != tc.ok {
			t.Errorf("%s/%s: %+v %v, want %+v %v", tc.provider, tc.model, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{"models":`, "unexpected EOF"},
		{"an unknown field", `{"models":{"fake/fake":{"input":1,"output":2,"cached":1}}}`, `unknown field "cached"`},
		{"a misspelt top level", `{"model":{}}`, `unknown field "model"`},
		{"a negative price", `{"models":{"fake/fake":{"input":-1,"output":2}}}`, `model "fake/fake": prices must be numbers, not negative`},
		{"a price as a string", `{"models":{"fake/fake":{"input":"1","output":2}}}`, "cannot unmarshal string"},
		{"an empty name", `{"models":{"":{"input":1,"output":2}}}`, "a model with an empty name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "prices.json")
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := pricing.Load(file); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := pricing.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "reading the prices file") {
		t.Fatalf("a missing file: %v", err)
	}
}
