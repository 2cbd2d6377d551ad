// Package pricing turns a run's token usage into what it costs: a table of
// prices per model, in US dollars per million tokens.
package pricing

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/companionhq/companion/internal/model"
)

// Price is what a model charges, in US dollars per million tokens. Cached
// input tokens are a part of the input tokens, charged at CachedInput
// instead of Input (at Input when CachedInput is 0).
type Price struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CachedInput float64 `json:"cachedInput,omitempty"`
}

// Cost is what a usage costs, in US dollars.
type Cost struct {
	Input       float64
	CachedInput float64
	Output      float64
}

// Total is the whole cost.
func (c Cost) Total() float64 { return c.Input + c.CachedInput + c.Output }

// Add returns the sum of c and o.
func (c Cost) Add(o Cost) Cost {
	return Cost{Input: c.Input + o.Input, CachedInput: c.CachedInput + o.CachedInput, Output: c.Output + o.Output}
}

// Table holds the prices of models, keyed "provider/model" (as -model names
// them, e.g. "openai/gpt-4o-mini"), or by model alone for any provider.
type Table struct {
	prices map[string]Price
}

// Default is the table shipped with the service: the models the README
// names, at their providers' list prices when this was written (check
// yours: -prices overrides them), and the fake model at a nominal price so
// that costs show in development. Models it lacks (a local Ollama, say)
// cost 0.
func Default() *Table {
	return &Table{prices: map[string]Price{
		"fake/fake":                     {Input: 1, Output: 2, CachedInput: 0.5},
		"cohere/command-a-03-2025":      {Input: 2.5, Output: 10},
		"cohere/command-r-plus-08-2024": {Input: 2.5, Output: 10},
		"cohere/command-r-08-2024":      {Input: 0.15, Output: 0.6},
		"openai/gpt-4o-mini":            {Input: 0.15, Output: 0.6, CachedInput: 0.075},
		"openai/gpt-4o":                 {Input: 2.5, Output: 10, CachedInput: 1.25},
	}}
}

// file is the shape of a prices file: {"models": {"openai/gpt-4o-mini":
// {"input": 0.15, "output": 0.6, "cachedInput": 0.075}}}.
type file struct {
	Models map[string]Price `json:"models"`
}

// Load reads a prices file. Its models replace the default table's of the
// same name and add to the rest.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the prices file: %w", err)
	}
	var f file
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("the prices file %s: %w", path, err)
	}
	t := Default()
	for name, p := range f.Models {
		if name == "" {
			return nil, fmt.Errorf("the prices file %s: a model with an empty name: name it \"provider/model\" or \"model\"", path)
		}
		if !finite(p.Input) || !finite(p.Output) || !finite(p.CachedInput) || p.Input < 0 || p.Output < 0 || p.CachedInput < 0 {
			return nil, fmt.Errorf("the prices file %s: model %q: prices must be numbers, not negative", path, name)
		}
		t.prices[name] = p
	}
	return t, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Lookup is the price of a provider's model: by "provider/model", else by
// the model's name alone; ok is false for a model the table lacks.
func (t *Table) Lookup(provider, modelID string) (Price, bool) {
	if p, ok := t.prices[provider+"/"+modelID]; ok {
		return p, true
	}
	p, ok := t.prices[modelID]
	return p, ok
}

// Cost is what u cost on a provider's model; zero for a model the table
// lacks.
func (t *Table) Cost(provider, modelID string, u model.Usage) Cost {
	p, ok := t.Lookup(provider, modelID)
	if !ok {
		return Cost{}
	}
	cached := min(u.CachedInputTokens, u.InputTokens)
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	const million = 1e6
	return Cost{
		Input:       float64(u.InputTokens-cached) * p.Input / million,
		CachedInput: float64(cached) * cachedPrice / million,
		Output:      float64(u.OutputTokens) * p.Output / million,
	}
}
