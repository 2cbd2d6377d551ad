package modeltest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/companionhq/companion/internal/model"
)

// FuzzStream fuzzes how a provider decodes a streamed answer: arbitrary
// bytes as the body of one call, seeded with the files fixtures matches
// (the fake's recorded streams) and seeds. Whatever the body, the parts keep
// the model.Part contract (CheckStream: one finish or one error at the end,
// deltas and ends only for open calls, client-safe error messages), and
// reading the body in small pieces, as a network delivers it, gives the
// same parts and error as reading it whole. newModel builds the provider
// with the given HTTP client.
func FuzzStream(f *testing.F, provider, fixtures string, newModel func(*http.Client) (model.Model, error), seeds ...string) {
	files, err := filepath.Glob(fixtures)
	if err != nil || len(files) == 0 {
		f.Fatalf("no fixtures match %s (%v): the corpus would be empty", fixtures, err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// streamOf decodes body, read piece bytes at a time (0: whole).
	streamOf := func(t *testing.T, body []byte, piece int) []Yield {
		t.Helper()
		m, err := newModel(&http.Client{Transport: Serve{Body: body, Piece: piece}})
		if err != nil {
			t.Fatal(err)
		}
		return Drain(context.Background(), m, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		whole := streamOf(t, body, 0)
		if err := CheckStream(provider, whole); err != nil {
			t.Fatalf("%v\nparts: %+v", err, whole)
		}
		if pieces := streamOf(t, body, Piece(len(body))); !SameStream(whole, pieces) {
			t.Fatalf("read whole: %+v\nread in pieces: %+v", whole, pieces)
		}
	})
}
