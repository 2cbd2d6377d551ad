package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// guard is a second opinion: a moderation endpoint or a guard model.
type guard interface {
	SelfHarm(ctx context.Context, text string) (bool, error)
}

// moderation asks an OpenAI-compatible moderation endpoint. It is small
// on purpose: the tool's second opinion, not the service's client.
type moderation struct {
	url, model, key string
	http            *http.Client
}

func newModeration(base, model, key string) *moderation {
	return &moderation{
		url:   strings.TrimSuffix(base, "/") + "/v1/moderations",
		model: model,
		key:   key,
		http:  &http.Client{Timeout: 30 * time.Second},
	}
}

// selfHarmCategories are the moderation categories that count as a
// crisis.
var selfHarmCategories = []string{"self-harm", "self-harm/intent", "self-harm/instructions"}

// SelfHarm reports whether the endpoint flags text under a self-harm
// category.
func (m *moderation) SelfHarm(ctx context.Context, text string) (bool, error) {
	body, err := json.Marshal(map[string]string{"model": m.model, "input": text})
	if err != nil {
		return false, fmt.Errorf("encoding the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("moderation request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.key != "" {
		req.Header.Set("Authorization", "Bearer "+m.key)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("moderation request: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, fmt.Errorf("reading the moderation response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("moderation: %s: %s", resp.Status, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	var out struct {
		Results []struct {
			Categories map[string]bool `json:"categories"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return false, fmt.Errorf("decoding the moderation response: %w", err)
	}
	if len(out.Results) == 0 {
		return false, errors.New("moderation response without results")
	}
	for _, c := range selfHarmCategories {
		if out.Results[0].Categories[c] {
			return true, nil
		}
	}
	return false, nil
}
