package cohere_test

import (
	"net/http"
	"testing"

	fakecohere "github.com/companionhq/companion/fakes/cohere"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/cohere"
	"github.com/companionhq/companion/internal/model/modeltest"
	_ "github.com/companionhq/companion/internal/testkit"
)

func newModel(t *testing.T, baseURL string) model.Model {
	t.Helper()
	m, err := cohere.New(cohere.Config{Model: "command-a-03-2025", APIKey: modeltest.Key, BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		Provider: cohere.Provider,
		Fake: func(opts upstream.Options) (http.Handler, *upstream.Core) {
			s := fakecohere.New(opts)
			return s, s.Core
		},
		New: newModel,
	})
}
