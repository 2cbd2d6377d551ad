package cohere_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/cohere"
	"github.com/companionhq/companion/internal/model/modeltest"
)

// streamOf decodes body, read piece bytes at a time (0: whole), as the
// answer of one call.
func streamOf(t *testing.T, body []byte, piece int) []modeltest.Yield {
	t.Helper()
	m, err := cohere.New(cohere.Config{Model: "command-a-03-2025", APIKey: modeltest.Key, BaseURL: "http://cohere.test",
		HTTPClient: &http.Client{Transport: modeltest.Serve{Body: body, Piece: piece}}})
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.Drain(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
}

// FuzzCohereStream decodes arbitrary bytes as the body of a v2 chat stream.
// Whatever the body, the parts keep the model.Part contract (see
// modeltest.CheckStream: one finish or one error at the end, deltas and ends
// only for open calls, client-safe error messages), and reading the body in
// small pieces, as a network delivers it, gives the same parts and error as
// reading it whole.
func FuzzCohereStream(f *testing.F) {
	fixtures, _ := filepath.Glob("../../../fakes/cohere/testdata/*.sse")
	for _, file := range fixtures {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte("data: [DONE]\n\n"))
	f.Add([]byte("event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"type\":\"tool-call-delta\",\"index\":3,\"delta\":{\"message\":{\"tool_calls\":{\"function\":{\"arguments\":\"{}\"}}}}}\n\n"))
	f.Add([]byte("data: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"NEW\",\"usage\":{\"tokens\":{\"input_tokens\":-1,\"output_tokens\":1e300}}}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		whole := streamOf(t, body, 0)
		if err := modeltest.CheckStream(cohere.Provider, whole); err != nil {
			t.Fatalf("%v\nparts: %+v", err, whole)
		}
		if pieces := streamOf(t, body, modeltest.Piece(len(body))); !modeltest.SameStream(whole, pieces) {
			t.Fatalf("read whole: %+v\nread in pieces: %+v", whole, pieces)
		}
	})
}
