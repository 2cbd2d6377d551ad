package openai_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/modeltest"
	"github.com/companionhq/companion/internal/model/openai"
)

// streamOf decodes body, read piece bytes at a time (0: whole), as the
// answer of one call.
func streamOf(t *testing.T, body []byte, piece int) []modeltest.Yield {
	t.Helper()
	m, err := openai.New(openai.Config{Provider: openai.ProviderOpenAI, Model: "gpt-4o-mini", APIKey: modeltest.Key,
		BaseURL: "http://openai.test/v1", HTTPClient: &http.Client{Transport: modeltest.Serve{Body: body, Piece: piece}}})
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.Drain(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
}

// FuzzOpenAIStream decodes arbitrary bytes as the body of a chat completion
// stream. Whatever the body, the parts keep the model.Part contract (see
// modeltest.CheckStream: one finish or one error at the end, deltas and ends
// only for open calls, client-safe error messages), and reading the body in
// small pieces, as a network delivers it, gives the same parts and error as
// reading it whole.
func FuzzOpenAIStream(f *testing.F) {
	fixtures, _ := filepath.Glob("../../../fakes/openai/testdata/*.sse")
	for _, file := range fixtures {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte("data: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"overloaded\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\",\"arguments\":\"{\"}},{\"index\":1,\"function\":{\"name\":\"b\",\"arguments\":\"{\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":-4,\"completion_tokens\":2}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		whole := streamOf(t, body, 0)
		if err := modeltest.CheckStream(openai.ProviderOpenAI, whole); err != nil {
			t.Fatalf("%v\nparts: %+v", err, whole)
		}
		if pieces := streamOf(t, body, modeltest.Piece(len(body))); !modeltest.SameStream(whole, pieces) {
			t.Fatalf("read whole: %+v\nread in pieces: %+v", whole, pieces)
		}
	})
}
