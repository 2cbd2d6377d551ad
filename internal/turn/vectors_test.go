package turn_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/embed"
)

// search asks the search route for query among resource's conversations.
func (c client) search(resource, query string) api.SearchResponse {
	c.t.Helper()
	status, b := c.do("GET", memoryPath+"/search?agentId=companionAgent&resourceId="+url.QueryEscape(resource)+"&searchQuery="+url.QueryEscape(query), "")
	var sr api.SearchResponse
	if status != 200 || json.Unmarshal(b, &sr) != nil {
		c.t.Fatalf("search: %d %s", status, b)
	}
	return sr
}

func ids(sr api.SearchResponse) []string {
	var out []string
	for _, r := range sr.Results {
		out = append(out, r.ID)
	}
	return out
}

// TestHybridRecall: with an embedding model (the fake), messages are
// embedded off the reply's path, and a search or a recall finds by vector
// what words alone miss: here a misspelt name, which the fake's character
// trigrams bring close.
func TestHybridRecall(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		hybrid := func(c *app.Config) {
			c.Memory.Embed = embed.Config{Provider: embed.ProviderFake}
			c.Memory.EmbedMinSimilarity = 0.1
			c.Memory.Recall.EmbedWait = 10 * time.Second
		}
		c := start(t, db, hybrid)
		history := importBody(
			saved("m1", "past-1", "u1", "user", "My favourite band is Radiohead.", "2026-04-10T09:00:00Z"),
			saved("m2", "past-1", "u1", "assistant", "Great taste in music!", "2026-04-10T09:00:05Z"),
			saved("m3", "past-2", "u1", "user", "We adopted a puppy named Max.", "2026-04-11T09:00:00Z"),
		)
		if status, b := c.do("POST", memoryPath+"/save-messages?agentId=companionAgent", history); status != 200 {
			t.Fatalf("save-messages: %d %s", status, b)
		}
		// Words alone find nothing for a misspelt name: the search is hybrid,
		// and finds it once the indexer has embedded the import.
		deadline := time.Now().Add(10 * time.Second)
		var sr api.SearchResponse
		for {
			sr = c.search("u1", "radiohed")
			if sr.SearchType != "hybrid" {
				t.Fatalf("search type %q, want hybrid", sr.SearchType)
			}
			if len(sr.Results) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := ids(sr); len(got) == 0 || got[0] != "m1" || sr.Results[0].Context.After[0].ID != "m2" {
			t.Fatalf("hybrid search for a misspelt name: %+v", sr)
		}
		// A word that matches ranks as before.
		if got := ids(c.search("u1", "puppy")); len(got) == 0 || got[0] != "m3" {
			t.Fatalf("search for puppy: %v", got)
		}
		// Recall in a turn finds it too, and the model is shown it.
		g := c.generate("now", "u1", "Are radiohed touring?")
		if sys := system(g); !strings.Contains(sys, `the user said: "My favourite band is Radiohead."`) {
			t.Fatalf("the model's instructions: %s", sys)
		}
		// The turn's messages are embedded too, off its path: the three
		// imported and the turn's two.
		deadline = time.Now().Add(10 * time.Second)
		for !strings.Contains(c.metrics(), "companion_embedded_messages_total 5\n") {
			if time.Now().After(deadline) {
				t.Fatalf("the turn's messages were not embedded: %s", c.metrics())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if m := c.metrics(); !strings.Contains(m, `companion_recall_searches_total{type="hybrid"}`) || !strings.Contains(m, `companion_embedding_calls_total{outcome="ok"}`) {
			t.Fatalf("metrics: %s", m)
		}

		// Without an embedding model, the same search finds nothing.
		plain := start(t, db, nil)
		if status, b := plain.do("POST", memoryPath+"/save-messages?agentId=companionAgent", strings.ReplaceAll(strings.ReplaceAll(history, "u1", "u9"), "past-", "other-")); status != 200 {
			t.Fatalf("save-messages: %d %s", status, b)
		}
		if sr := plain.search("u9", "radiohed"); sr.SearchType != "text" || len(sr.Results) != 0 {
			t.Fatalf("text search for a misspelt name: %+v", sr)
		}
	})
}

// metrics is the text of /metrics.
func (c client) metrics() string {
	c.t.Helper()
	_, b := c.do("GET", "/metrics", "")
	return string(b)
}

// TestTurnDoesNotWaitForEmbeddings: an embedding model that does not
// answer delays no turn: recall ranks by words alone.
func TestTurnDoesNotWaitForEmbeddings(t *testing.T) {
	stuck := make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stuck) })
	c := start(t, apptest.SQLiteURL(t), func(c *app.Config) {
		c.Memory.Embed = embed.Config{Provider: embed.ProviderOpenAI, Model: "slow", BaseURL: srv.URL + "/v1", Dimensions: 8}
	})
	if status, b := c.do("POST", memoryPath+"/save-messages?agentId=companionAgent", importBody(
		saved("m1", "past-1", "u1", "user", "We adopted a puppy named Max.", "2026-04-11T09:00:00Z"))); status != 200 {
		t.Fatalf("save-messages: %d %s", status, b)
	}
	done := make(chan api.GenerateResponse, 1)
	go func() { done <- c.generate("now", "u1", "How is my puppy?") }()
	select {
	case g := <-done:
		if sys := system(g); !strings.Contains(sys, "We adopted a puppy named Max.") {
			t.Fatalf("recall by words did not happen: %s", sys)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn waited for the embedding model")
	}
	if calls.Load() == 0 {
		t.Fatal("the embedding model was never asked")
	}
}
