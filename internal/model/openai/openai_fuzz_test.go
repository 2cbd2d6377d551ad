package openai_test

import (
	"net/http"
	"testing"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/modeltest"
	"github.com/companionhq/companion/internal/model/openai"
)

// FuzzOpenAIStream decodes arbitrary bytes as the body of a chat completion
// stream (see modeltest.FuzzStream for what must hold).
func FuzzOpenAIStream(f *testing.F) {
	modeltest.FuzzStream(f, openai.ProviderOpenAI, "../../../fakes/openai/testdata/*.sse", func(c *http.Client) (model.Model, error) {
		return openai.New(openai.Config{Provider: openai.ProviderOpenAI, Model: "gpt-4o-mini", APIKey: modeltest.Key, BaseURL: "http://openai.test/v1", HTTPClient: c})
	},
		"",
		"data: [DONE]\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
		"data: {\"error\":{\"message\":\"overloaded\"}}\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\",\"arguments\":\"{\"}},{\"index\":1,\"function\":{\"name\":\"b\",\"arguments\":\"{\"}}]}}]}\n\n"+
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":-4,\"completion_tokens\":2}}\n\n",
	)
}
