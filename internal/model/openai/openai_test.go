package openai_test

import (
	"net/http"
	"testing"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/modeltest"
	"github.com/companionhq/companion/internal/model/openai"
	_ "github.com/companionhq/companion/internal/testkit"
)

func newModel(t *testing.T, baseURL string) model.Model {
	t.Helper()
	m, err := openai.New(openai.Config{Provider: openai.ProviderOpenAI, Model: "gpt-4o-mini", APIKey: modeltest.Key, BaseURL: baseURL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		Provider: openai.ProviderOpenAI,
		Fake: func(opts upstream.Options) (http.Handler, *upstream.Core) {
			s := fakeopenai.New(opts)
			return s, s.Core
		},
		New: newModel,
	})
}
