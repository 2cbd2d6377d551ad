package moderation

import (
	"context"
	"errors"
)

// OpenAI checks through an OpenAI-compatible moderations endpoint:
// POST {base}/v1/moderations with {"model", "input"}, answered with
// {"results": [{"flagged", "categories": {name: bool}, ...}]}. It is safe
// for concurrent use.
type OpenAI struct {
	c client
}

var _ Checker = (*OpenAI)(nil)

// NewOpenAI returns a checker for cfg.
func NewOpenAI(cfg Config) *OpenAI {
	return &OpenAI{c: newClient(cfg, "/moderations", "openai")}
}

type moderationRequest struct {
	Model string `json:"model,omitempty"`
	Input string `json:"input"`
}

type moderationResponse struct {
	Results []struct {
		Flagged    bool            `json:"flagged"`
		Categories map[string]bool `json:"categories"`
	} `json:"results"`
}

// Check implements Checker. Every result counts (a server may split a long
// input): a category flagged in any is flagged.
func (o *OpenAI) Check(ctx context.Context, text string) (Verdict, error) {
	var res moderationResponse
	if err := o.c.post(ctx, moderationRequest{Model: o.c.cfg.Model, Input: text}, &res); err != nil {
		return Verdict{}, err
	}
	if len(res.Results) == 0 {
		return Verdict{}, o.c.fail(errors.New("the answer holds no result"))
	}
	flagged := false
	var categories []string
	for _, r := range res.Results {
		flagged = flagged || r.Flagged
		for name, on := range r.Categories {
			if on {
				categories = append(categories, name)
			}
		}
	}
	return verdict(flagged, categories), nil
}
