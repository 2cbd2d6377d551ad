package turn

import (
	"cmp"
	"context"
	"slices"

	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
)

// What a search shows, for the search route and for recall alike: the
// store's best matches, spread over the resource's conversations, each with
// the messages around it.

// spread is how many more matches than it shows a search asks the store
// for, so that diversify has some to choose from.
const spread = 3

// plainShare is the share of a search's results, in percent, taken in the
// store's order before the rest are spread over other conversations.
const plainShare = 50

// search asks the store for q's best matches, each with the context
// messages before and after it, and keeps q.Limit of them spread over the
// conversations (diversify).
//
// With vec, the query's vector, the messages nearest it are fused with the
// full-text matches (vectors.go).
func (t *Turns) search(ctx context.Context, q memory.SearchQuery, context int, vec []float32) ([]memory.SearchResult, error) {
	limit := q.Limit
	// The store reads the context of every match with the matches, in
	// the same statement (a round trip less than reading the kept ones'
	// after: on PostgreSQL, more of the service's CPU than the few rows
	// more).
	q.Limit, q.Context = limit*spread, context
	found, err := t.cfg.Store.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	favourUser(found)
	if vec != nil {
		near, err := t.cfg.Store.SearchVectors(ctx, q, t.cfg.Embedder.Model(), vec)
		if err != nil {
			return nil, err
		}
		found = fuse(found, similar(near, t.cfg.EmbedMinSimilarity), t.cfg.EmbedWeight)
	}
	return diversify(found, context, limit), nil
}

// diversify keeps up to limit of results, best first: the first
// plainShare percent as the store ranked them, then those that are not
// among the messages around one kept already (within context of it in its
// thread: they come with it as its context anyway, and their places go to
// other conversations), then, if places are left, the others in order.
func diversify(results []memory.SearchResult, context, limit int) []memory.SearchResult {
	kept := make([]memory.SearchResult, 0, min(limit, len(results)))
	plain := limit * plainShare / 100
	var later []memory.SearchResult
	for _, r := range results {
		if len(kept) == limit {
			break
		}
		if len(kept) < plain || !nearKept(kept, r, context) {
			kept = append(kept, r)
			continue
		}
		later = append(later, r)
	}
	for _, r := range later {
		if len(kept) == limit {
			break
		}
		kept = append(kept, r)
	}
	return kept
}

// nearKept reports whether r is within context messages of a kept result
// in its thread.
func nearKept(kept []memory.SearchResult, r memory.SearchResult, context int) bool {
	for _, k := range kept {
		if d := k.Message.Seq - r.Message.Seq; k.ThreadID == r.ThreadID && d <= int64(context) && d >= -int64(context) {
			return true
		}
	}
	return false
}

// userWeight is what a match in a user's message counts for beside one in
// a reply: recall is about the user, and what they said of themselves is
// in their own messages; a reply that echoes it is found with it, as its
// context.
const userWeight = 2.0

// favourUser weighs the users' messages of results by userWeight and
// orders them again, best first (the store's order among equals).
func favourUser(results []memory.SearchResult) {
	for i := range results {
		if results[i].Message.Role == model.RoleUser {
			results[i].Score *= userWeight
		}
	}
	sortByScore(results)
}

// sortByScore orders results best first, keeping the order of equals.
func sortByScore(results []memory.SearchResult) {
	slices.SortStableFunc(results, func(a, b memory.SearchResult) int { return cmp.Compare(b.Score, a.Score) })
}
