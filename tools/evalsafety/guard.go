package main

import (
	"context"
	"net/http/httptest"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/redact"
	"github.com/companionhq/companion/internal/safety/moderation"
)

// guard is a second opinion: a moderation endpoint or a guard model.
type guard interface {
	SelfHarm(ctx context.Context, text string) (bool, error)
}

// checker is a guard through the service's own moderation client: the
// second opinion the moderation processor gives it.
type checker struct{ moderation.Checker }

func (c checker) SelfHarm(ctx context.Context, text string) (bool, error) {
	v, err := c.Check(ctx, text)
	return v.SelfHarm, err
}

// newGuard is the guard at base: an OpenAI-compatible /v1/moderations, or
// with asGuard a guard model behind /v1/chat/completions.
func newGuard(base, model, key string, asGuard bool) guard {
	cfg := moderation.Config{BaseURL: base, Model: model, APIKey: redact.Secret(key)}
	if asGuard {
		return checker{moderation.NewGuard(cfg)}
	}
	return checker{moderation.NewOpenAI(cfg)}
}

// fakeGuard starts the fake upstream's guard model (fake-guard), in
// process, and returns it with the function that stops it: the guard
// make eval-safety measures with, offline.
func fakeGuard() (guard, func()) {
	srv := httptest.NewServer(fakeopenai.New(upstream.Options{}))
	return newGuard(srv.URL, fakeopenai.GuardModel, "eval", true), srv.Close
}
