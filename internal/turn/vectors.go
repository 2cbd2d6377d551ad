package turn

import (
	"context"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/embed"
	"github.com/companionhq/companion/internal/memory"
)

// With an embedding model, a search ranks by vector as well as by words
// (hybrid): the store's full-text matches and the messages whose vectors
// are nearest the query's are fused by their ranks (reciprocal rank
// fusion). The messages' vectors come from the store's vector index, which
// an indexer fills off the reply's path (internal/embedindex); the query's
// is one call to the model. A turn does not wait for that call: it starts
// as the turn begins, and recall uses the vector if it has come by the time
// recall runs (RecallConfig.EmbedWait lets it wait a little); otherwise
// recall ranks by words alone.

// QueryEmbedder embeds a search's text; an embed.Embedder is one.
type QueryEmbedder interface {
	Embed(ctx context.Context, texts []string, kind embed.Kind) ([][]float32, error)
	// Model names the vectors it makes, as the store keeps them.
	Model() string
}

// DefaultEmbedMinSimilarity is the least cosine similarity of a message's
// vector with the query's for vector ranking to count it: the nearest
// messages are not always near (the right bound depends on the model; see
// docs/memory.md).
const DefaultEmbedMinSimilarity = 0.25

// similar keeps the results whose cosine similarity is at least least.
func similar(rs []memory.SearchResult, least float64) []memory.SearchResult {
	kept := rs[:0]
	for _, r := range rs {
		if r.Score >= least {
			kept = append(kept, r)
		}
	}
	return kept
}

// DefaultEmbedWeight is EmbedWeight's default: see docs/memory.md for what
// it was chosen from.
const DefaultEmbedWeight = 0.5

// DefaultSearchEmbedTimeout bounds the search route's embedding call: past
// it, the search ranks by words alone.
const DefaultSearchEmbedTimeout = 5 * time.Second

// fusionK is reciprocal rank fusion's constant: a result's fused score is
// the sum, over the rankings that hold it, of 1/(fusionK + its rank).
const fusionK = 60

// Search types, as the search route reports them.
const (
	SearchText   = "text"
	SearchHybrid = "hybrid"
)

// embedQuery returns the query vector of text, or nil when there is no
// embedder, no text, or the call failed (logged: the search goes on by
// words).
func (t *Turns) embedQuery(ctx context.Context, text string) []float32 {
	if t.cfg.Embedder == nil || strings.TrimSpace(text) == "" {
		return nil
	}
	ctx, span := t.startSpan(ctx, "embed query")
	defer span.End()
	vs, err := t.cfg.Embedder.Embed(ctx, []string{text}, embed.Query)
	if err != nil || len(vs) != 1 || len(vs[0]) == 0 {
		if err != nil && ctx.Err() == nil {
			t.cfg.Logger.WarnContext(ctx, "embedding a search's text failed; searching by words alone", "err", err)
		}
		return nil
	}
	return vs[0]
}

// startQueryVector starts embedding the turn's new user message, for
// recall; s.queryVec receives the vector (nil when there is none).
func (t *Turns) startQueryVector(ctx context.Context, s *State) error {
	cfg := t.cfg.Recall
	if t.cfg.Embedder == nil || cfg.Off || s.In.ResourceID == "" || s.tripped() {
		return nil
	}
	text := lastUserText(s.In.Messages)
	if len(memory.SearchTerms(text)) == 0 {
		return nil
	}
	ch := make(chan []float32, 1)
	s.queryVec = ch
	go func() { ch <- t.embedQuery(ctx, text) }()
	return nil
}

// awaitQueryVector is the turn's query vector if it has come, waiting for
// it at most RecallConfig.EmbedWait; nil otherwise.
func (t *Turns) awaitQueryVector(ctx context.Context, s *State) []float32 {
	if s.queryVec == nil {
		return nil
	}
	select {
	case v := <-s.queryVec:
		return v
	default:
	}
	wait := t.cfg.Recall.EmbedWait
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case v := <-s.queryVec:
		return v
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil
}

// fuse merges the full-text results and the vector results into one
// ranking by reciprocal rank fusion, a vector rank counting weight of a
// full-text one; a message in both comes once, with its full-text
// result's fields. Among equal fused scores, the full-text
// ranking's order comes first.
func fuse(text, vec []memory.SearchResult, weight float64) []memory.SearchResult {
	type key struct{ thread, id string }
	at := map[key]int{}
	out := make([]memory.SearchResult, 0, len(text)+len(vec))
	for i, r := range text {
		r.Score = 1 / float64(fusionK+i+1)
		at[key{r.ThreadID, r.Message.ID}] = len(out)
		out = append(out, r)
	}
	for i, r := range vec {
		s := weight / float64(fusionK+i+1)
		if j, ok := at[key{r.ThreadID, r.Message.ID}]; ok {
			out[j].Score += s
			continue
		}
		r.Score = s
		out = append(out, r)
	}
	sortByScore(out)
	return out
}

// stored wakes the indexer, if any, after messages were stored.
func (t *Turns) stored() {
	if t.cfg.Stored != nil {
		t.cfg.Stored()
	}
}
