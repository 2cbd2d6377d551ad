package cohere_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

// TestDoneBeforeMessageEnd: a [DONE] with no message-end is a cut stream,
// retryable like a body that ends early when no part was sent yet, and not
// once the answer began.
func TestDoneBeforeMessageEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		temporary bool
	}{
		{"before any part", "event: message-start\ndata: {\"type\":\"message-start\",\"id\":\"m\",\"delta\":{\"message\":{\"role\":\"assistant\"}}}\n\ndata: [DONE]\n\n", true},
		{"after text", "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\ndata: [DONE]\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			var got error
			for _, err := range newModel(t, srv.URL).Stream(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}) {
				if err != nil {
					got = err
				}
			}
			var me *model.Error
			if !errors.As(got, &me) || me.Message != "the stream ended before message-end" || me.Temporary != tc.temporary {
				t.Fatalf("got %#v, want a cut stream with Temporary %v", got, tc.temporary)
			}
		})
	}
}
