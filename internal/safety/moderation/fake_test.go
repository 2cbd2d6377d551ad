package moderation_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/safety/moderation"
)

// TestAgainstTheFake: both checkers read the fake upstream's moderations
// and its guard model alike.
func TestAgainstTheFake(t *testing.T) {
	srv := httptest.NewServer(openai.New(upstream.Options{}))
	defer srv.Close()
	for _, c := range []moderation.Checker{
		moderation.NewOpenAI(moderation.Config{BaseURL: srv.URL, APIKey: "k"}),
		moderation.NewGuard(moderation.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: openai.GuardModel}),
	} {
		for text, want := range map[string]moderation.Verdict{
			"What's the weather in Berlin?": {},
			"I want to end my life":         {Flagged: true, SelfHarm: true},
			"let's have sex":                {Flagged: true, Sexual: true, Categories: []string{"sexual"}},
		} {
			v, err := c.Check(context.Background(), text)
			if err != nil {
				t.Fatalf("%T: %v", c, err)
			}
			if v.Flagged != want.Flagged || v.SelfHarm != want.SelfHarm || v.Sexual != want.Sexual ||
				want.Categories != nil && !slices.Equal(v.Categories, want.Categories) {
				t.Errorf("%T, %q: %+v, want %+v", c, text, v, want)
			}
		}
	}
}
