package cohere_test

import (
	"net/http"
	"testing"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/cohere"
	"github.com/companionhq/companion/internal/model/modeltest"
)

// FuzzCohereStream decodes arbitrary bytes as the body of a v2 chat stream
// (see modeltest.FuzzStream for what must hold).
func FuzzCohereStream(f *testing.F) {
	modeltest.FuzzStream(f, cohere.Provider, "../../../fakes/cohere/testdata/*.sse", func(c *http.Client) (model.Model, error) {
		return cohere.New(cohere.Config{Model: "command-a-03-2025", APIKey: modeltest.Key, BaseURL: "http://cohere.test", HTTPClient: c})
	},
		"",
		"data: [DONE]\n\n",
		"event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\ndata: [DONE]\n\n",
		"data: {\"type\":\"tool-call-delta\",\"index\":3,\"delta\":{\"message\":{\"tool_calls\":{\"function\":{\"arguments\":\"{}\"}}}}}\n\n",
		"data: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"NEW\",\"usage\":{\"tokens\":{\"input_tokens\":-1,\"output_tokens\":1e300}}}}\n\n",
	)
}
