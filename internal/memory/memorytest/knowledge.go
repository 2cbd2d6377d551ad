package memorytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory"
)

// runKnowledge runs the cases of memory.Knowledge.
func runKnowledge(t *testing.T, h Harness) {
	t.Run("WorkingMemoryKeepsVersions", func(t *testing.T) { t.Parallel(); testWorkingMemory(t, h) })
	t.Run("WorkingMemoryUpdatesSeeEachOther", func(t *testing.T) { t.Parallel(); testWorkingMemoryConcurrent(t, h) })
	t.Run("DeleteThreadDropsItsWorkingMemory", func(t *testing.T) { t.Parallel(); testDeleteThreadWorkingMemory(t, h) })
	t.Run("SearchFindsMessagesOfAResource", func(t *testing.T) { t.Parallel(); testSearch(t, h) })
	t.Run("SearchKeepsResourcesApart", func(t *testing.T) { t.Parallel(); testSearchResources(t, h) })
	t.Run("SearchIndexFollowsTurns", func(t *testing.T) { t.Parallel(); testSearchFollowsTurns(t, h) })
	t.Run("SearchReadsABoundedShareOfALongHistory", func(t *testing.T) { t.Parallel(); testSearchLongHistory(t, h) })
	t.Run("ImportAddsWhatIsNew", func(t *testing.T) { t.Parallel(); testImport(t, h) })
	t.Run("ImportIsCheckedBeforeItWrites", func(t *testing.T) { t.Parallel(); testImportCheck(t, h) })
	t.Run("SetTitleIfEmpty", func(t *testing.T) { t.Parallel(); testSetTitleIfEmpty(t, h) })
	t.Run("SearchShowsTitlesAsSet", func(t *testing.T) { t.Parallel(); testSearchTitles(t, h) })
	t.Run("EraseResource", func(t *testing.T) { t.Parallel(); testEraseResource(t, h) })
	runVectors(t, h)
}

// set is a working memory update that sets content.
func set(content string) memory.WorkingMemoryUpdate {
	return func(memory.WorkingMemory) (string, error) { return content, nil }
}

func updateWM(t *testing.T, s memory.Store, scope, key, owner string, at time.Time, update memory.WorkingMemoryUpdate) memory.WorkingMemory {
	t.Helper()
	wm, err := s.UpdateWorkingMemory(context.Background(), memory.WorkingMemory{Scope: scope, Key: key, ResourceID: owner, UpdatedAt: at}, update)
	if err != nil {
		t.Fatalf("updating working memory %s/%s: %v", scope, key, err)
	}
	return wm
}

func testWorkingMemory(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	none, err := s.WorkingMemory(ctx, memory.ScopeResource, "alice")
	if err != nil || none.Version != 0 || none.Content != "" || none.Scope != memory.ScopeResource || none.Key != "alice" {
		t.Fatalf("working memory never written: %+v, %v", none, err)
	}
	// The first update sees none, and stores version 1 as given.
	first := updateWM(t, s, memory.ScopeResource, "alice", "alice", base, func(cur memory.WorkingMemory) (string, error) {
		if cur.Version != 0 || cur.Content != "" {
			t.Errorf("the first update saw %+v", cur)
		}
		return "# Alice\n- likes tea", nil
	})
	want := memory.WorkingMemory{Scope: memory.ScopeResource, Key: "alice", ResourceID: "alice", Version: 1, Content: "# Alice\n- likes tea", UpdatedAt: base}
	if first != want {
		t.Fatalf("first version %+v, want %+v", first, want)
	}
	if got, err := s.WorkingMemory(ctx, memory.ScopeResource, "alice"); err != nil || got != want {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	// An update sees the current version; one that changes nothing stores
	// nothing, and one that fails stores nothing either.
	second := updateWM(t, s, memory.ScopeResource, "alice", "alice", base.Add(time.Minute), func(cur memory.WorkingMemory) (string, error) {
		if cur != want {
			t.Errorf("the second update saw %+v", cur)
		}
		return cur.Content + "\n- has a dog", nil
	})
	if second.Version != 2 || second.Content != "# Alice\n- likes tea\n- has a dog" || !second.UpdatedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("second version %+v", second)
	}
	if same := updateWM(t, s, memory.ScopeResource, "alice", "alice", base.Add(time.Hour), set(second.Content)); same != second {
		t.Fatalf("an update that changes nothing returned %+v, want %+v", same, second)
	}
	refused := errors.New("refused")
	if _, err := s.UpdateWorkingMemory(ctx, memory.WorkingMemory{Scope: memory.ScopeResource, Key: "alice", ResourceID: "alice", UpdatedAt: base.Add(time.Hour)},
		func(memory.WorkingMemory) (string, error) { return "", refused }); !errors.Is(err, refused) {
		t.Fatalf("a failing update: %v", err)
	}
	versions, err := s.WorkingMemoryVersions(ctx, memory.ScopeResource, "alice", 10)
	if err != nil || len(versions) != 2 || versions[0] != second || versions[1] != want {
		t.Fatalf("versions %+v, %v", versions, err)
	}
	// Scopes and keys are apart: a thread of the same id, another resource.
	updateWM(t, s, memory.ScopeThread, "alice", "alice", base, set("thread notes"))
	updateWM(t, s, memory.ScopeResource, "bob", "bob", base, set("bob"))
	if got, _ := s.WorkingMemory(ctx, memory.ScopeResource, "alice"); got != second {
		t.Fatalf("alice's after other keys were written: %+v", got)
	}
	if got, _ := s.WorkingMemory(ctx, memory.ScopeThread, "alice"); got.Version != 1 || got.Content != "thread notes" {
		t.Fatalf("the thread's: %+v", got)
	}

	// The oldest versions go beyond the most a store keeps.
	const n = memory.MaxWorkingMemoryVersions + 5
	for i := 3; i <= n; i++ {
		updateWM(t, s, memory.ScopeResource, "alice", "alice", base.Add(time.Duration(i)*time.Minute), set(fmt.Sprint("version ", i)))
	}
	versions, err = s.WorkingMemoryVersions(ctx, memory.ScopeResource, "alice", 1000)
	if err != nil || len(versions) != memory.MaxWorkingMemoryVersions {
		t.Fatalf("%d versions kept (%v), want %d", len(versions), err, memory.MaxWorkingMemoryVersions)
	}
	for i, v := range versions {
		if v.Version != int64(n-i) || v.Content != fmt.Sprint("version ", n-i) {
			t.Fatalf("version %d of those kept is %+v, want %d", i, v, n-i)
		}
	}
	if top, err := s.WorkingMemoryVersions(ctx, memory.ScopeResource, "alice", 3); err != nil || len(top) != 3 || top[0].Version != n {
		t.Fatalf("the last 3 versions: %+v, %v", top, err)
	}
	if none, err := s.WorkingMemoryVersions(ctx, memory.ScopeResource, "carol", 10); err != nil || len(none) != 0 {
		t.Fatalf("versions of a key never written: %+v, %v", none, err)
	}
}

// testWorkingMemoryConcurrent runs updates of one key at once, from
// goroutines on two instances of the store: each appends a line to the
// content it is given, so an update that did not see the one before it
// loses that one's line.
func testWorkingMemoryConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	open0 := h.Fresh(t)
	stores := []memory.Store{mustOpen(t, open0), mustOpen(t, open0)}
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for i := range each {
				_, err := s.UpdateWorkingMemory(ctx, memory.WorkingMemory{Scope: memory.ScopeResource, Key: "r", ResourceID: "r", UpdatedAt: time.Now()},
					func(cur memory.WorkingMemory) (string, error) {
						return cur.Content + fmt.Sprintf("line %d.%d\n", w, i), nil
					})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cur, err := stores[1].WorkingMemory(ctx, memory.ScopeResource, "r")
	if err != nil {
		t.Fatal(err)
	}
	if cur.Version != workers*each {
		t.Errorf("version %d after %d updates", cur.Version, workers*each)
	}
	for w := range workers {
		for i := range each {
			if line := fmt.Sprintf("line %d.%d\n", w, i); strings.Count(cur.Content, line) != 1 {
				t.Errorf("%q is in the content %d times, want once:\n%s", line, strings.Count(cur.Content, line), cur.Content)
			}
		}
	}
}

func testDeleteThreadWorkingMemory(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	turn := lock(t, s, "t")
	open(t, turn, "t", "alice")
	updateWM(t, s, memory.ScopeThread, "t", "alice", base, set("one"))
	updateWM(t, s, memory.ScopeThread, "t", "alice", base, set("two"))
	updateWM(t, s, memory.ScopeThread, "k", "alice", base, set("kept"))
	updateWM(t, s, memory.ScopeResource, "t", "t", base, set("a resource named like the thread"))
	if err := turn.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if vs, err := s.WorkingMemoryVersions(ctx, memory.ScopeThread, "t", 10); err != nil || len(vs) != 0 {
		t.Fatalf("the deleted thread's working memory: %+v, %v", vs, err)
	}
	if wm, _ := s.WorkingMemory(ctx, memory.ScopeThread, "k"); wm.Content != "kept" {
		t.Fatalf("another thread's working memory: %+v", wm)
	}
	if wm, _ := s.WorkingMemory(ctx, memory.ScopeResource, "t"); wm.Content != "a resource named like the thread" {
		t.Fatalf("a resource's working memory: %+v", wm)
	}
}

// seedThread stores texts as the messages of thread id, owned by owner,
// one turn's Append; the message ids are id-1, id-2, ...
func seedThread(t *testing.T, s memory.Store, id, owner, title string, texts ...string) {
	t.Helper()
	turn := lock(t, s, id)
	defer turn.Unlock()
	open(t, turn, id, owner)
	var msgs []memory.Message
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, msg(fmt.Sprint(id, "-", i+1), role, text, i))
	}
	appendMsgs(t, turn, msgs...)
	if title != "" {
		if _, err := s.UpdateThread(context.Background(), id, owner, &title, nil, base); err != nil {
			t.Fatal(err)
		}
	}
}

func search(t *testing.T, s memory.Store, q memory.SearchQuery) []memory.SearchResult {
	t.Helper()
	rs, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("searching %+v: %v", q, err)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].Score > rs[i-1].Score {
			t.Fatalf("searching %+v: result %d scores %v, more than the one before it (%v)", q, i, rs[i].Score, rs[i-1].Score)
		}
	}
	return rs
}

// found is the ids of the messages of rs, in order.
func found(rs []memory.SearchResult) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Message.ID
	}
	return strings.Join(out, " ")
}

func testSearch(t *testing.T, h Harness) {
	s := h.open(t)
	seedThread(t, s, "pets", "alice", "Rex",
		"I adopted a dog named Rex last spring.",
		"That is wonderful! How is he settling in?",
		"He chases squirrels all day long.",
		"Lively! A long walk every morning might tire him out.")
	seedThread(t, s, "trip", "alice", "",
		"My sister is getting married in Lisbon.",
		"Congratulations to her! When is the wedding?",
		"In June. We booked a hotel by the river.")
	seedThread(t, s, "hotels", "alice", "", "Lisbon hotels cost a fortune in June.")
	seedThread(t, s, "city", "alice", "", "Lisbon has seven hills and yellow trams.")
	seedThread(t, s, "other", "bob", "", "My dog barks at the mailman.")

	// A word finds its stem: "dogs" the dog (and its neighbour), with its
	// thread's title.
	rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "What did I tell you about dogs?", Limit: 10})
	if found(rs) != "pets-1 pets-2" || rs[0].ThreadID != "pets" || rs[0].ThreadTitle != "Rex" || rs[0].Message.Text != "I adopted a dog named Rex last spring." ||
		rs[0].Message.Seq != 1 || rs[0].Message.Role != "user" || !rs[0].Message.CreatedAt.Equal(base) {
		t.Fatalf("dogs: %+v", rs)
	}
	// A message with more of the words comes first.
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "hotels in Lisbon", Limit: 10}); !strings.HasPrefix(found(rs), "hotels-1 ") {
		t.Fatalf("hotels in Lisbon: %s", found(rs))
	}
	// A message is found through its neighbours, after the message that
	// holds the word.
	rs = search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "squirrels", Limit: 10})
	if len(rs) != 3 || rs[0].Message.ID != "pets-3" || !strings.Contains(found(rs[1:]), "pets-2") || !strings.Contains(found(rs[1:]), "pets-4") {
		t.Fatalf("squirrels: %s", found(rs))
	}
	// One thread, or all but one.
	lisbon := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "Lisbon", Limit: 10})
	if len(lisbon) < 4 {
		t.Fatalf("Lisbon: %s", found(lisbon))
	}
	for _, r := range search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "Lisbon", ThreadID: "trip", Limit: 10}) {
		if r.ThreadID != "trip" {
			t.Fatalf("searching thread trip found %s of %s", r.Message.ID, r.ThreadID)
		}
	}
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "Lisbon", ThreadID: "trip", Limit: 10}); len(rs) == 0 {
		t.Fatal("searching thread trip found nothing")
	}
	rs = search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "Lisbon", ExcludeThreadID: "trip", Limit: 10})
	if found(rs) == "" {
		t.Fatal("searching all but thread trip found nothing")
	}
	for _, r := range rs {
		if r.ThreadID == "trip" {
			t.Fatalf("searching all but thread trip found %s", r.Message.ID)
		}
	}
	// At most Limit, the best first.
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "Lisbon", Limit: 2}); found(rs) != found(lisbon[:2]) {
		t.Fatalf("the first 2: %s, want %s", found(rs), found(lisbon[:2]))
	}
	// Context: the messages around each result, in its thread.
	rs = search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "squirrels", ThreadID: "pets", Limit: 1, Context: 2})
	if found(rs) != "pets-3" || strings.Join(ids(rs[0].Before), " ") != "pets-1 pets-2" || strings.Join(ids(rs[0].After), " ") != "pets-4" ||
		rs[0].Before[1].Text != "That is wonderful! How is he settling in?" {
		t.Fatalf("context of squirrels: %s before %v after %v", found(rs), ids(rs[0].Before), ids(rs[0].After))
	}
	rs = search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "adopted", Limit: 1, Context: 1})
	if found(rs) != "pets-1" || len(rs[0].Before) != 0 || strings.Join(ids(rs[0].After), " ") != "pets-2" {
		t.Fatalf("context of the first message: %s before %v after %v", found(rs), ids(rs[0].Before), ids(rs[0].After))
	}
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "adopted", Limit: 1}); len(rs[0].Before)+len(rs[0].After) != 0 {
		t.Fatalf("no context asked, got %v and %v", ids(rs[0].Before), ids(rs[0].After))
	}
	// Around reads the context of results found without it, all at once,
	// replacing what they held.
	rs = append(search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "squirrels", ThreadID: "pets", Limit: 1}),
		search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "adopted", Limit: 1})...)
	rs[0].After = []memory.Message{{ID: "stale"}}
	if err := s.Around(context.Background(), rs, 1); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rs {
		got[r.Message.ID] = strings.Join(ids(r.Before), " ") + "|" + strings.Join(ids(r.After), " ")
	}
	if len(rs) != 2 || got["pets-3"] != "pets-2|pets-4" || got["pets-1"] != "|pets-2" {
		t.Fatalf("Around: %v", got)
	}
	if err := s.Around(context.Background(), nil, 1); err != nil {
		t.Fatalf("Around of no results: %v", err)
	}
	// Nothing to look for: stop words, punctuation, a query's syntax.
	for _, text := range []string{"What is it that you do?", "", "  ?!  ", `" OR * NOT ( AND`} {
		if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: text, Limit: 10}); len(rs) != 0 {
			t.Errorf("%q found %s", text, found(rs))
		}
	}
	// Words a full-text syntax would read as operators are only words.
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: `dog" OR "mailman NOT near:(x) res:*`, Limit: 10}); found(rs) != "pets-1 pets-2" {
		t.Errorf("a query with syntax in it found %s", found(rs))
	}
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "dog", Limit: 0}); len(rs) != 0 {
		t.Errorf("a limit of 0 found %s", found(rs))
	}
}

// testSearchResources: a search finds its resource's messages, never
// another's, whatever their ids look like.
func testSearchResources(t *testing.T, h Harness) {
	s := h.open(t)
	owners := []string{"alice", "alice ", "Alice", "ålice", "", "a", "ed", "r61", "61", "alice\t", "al'ice\"OR"}
	for i, owner := range owners {
		seedThread(t, s, fmt.Sprint("t", i), owner, "", fmt.Sprintf("The secret of owner %d is marmalade.", i))
	}
	for i, owner := range owners {
		rs := search(t, s, memory.SearchQuery{ResourceID: owner, Text: "marmalade", Limit: 100})
		if found(rs) != fmt.Sprint("t", i, "-1") {
			t.Errorf("owner %q found %s", owner, found(rs))
		}
	}
	if rs := search(t, s, memory.SearchQuery{ResourceID: "nobody", Text: "marmalade", Limit: 100}); len(rs) != 0 {
		t.Errorf("a resource without threads found %s", found(rs))
	}
}

// testSearchFollowsTurns: what a turn stores is found at once (Begin's
// messages, Answer's reply, and the message before them through its new
// neighbour), and what is deleted is not found any more.
func testSearchFollowsTurns(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	q := func(text string) string {
		t.Helper()
		return found(search(t, s, memory.SearchQuery{ResourceID: "r", Text: text, Limit: 10}))
	}
	th := memory.Thread{ID: "t", ResourceID: "r", CreatedAt: base, UpdatedAt: base}
	turn := lock(t, s, "t")
	if _, _, err := turn.Begin(ctx, th, window, nil, func(memory.Thread, []memory.Message, map[string]bool) ([]memory.Message, error) {
		return []memory.Message{msg("u1", "user", "Where should I plant the tomatoes?", 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := q("tomato"); got != "u1" {
		t.Fatalf("Begin's message: found %q", got)
	}
	if _, _, err := turn.Answer(ctx, memory.Message{ID: "a1", Role: "assistant", Text: "Somewhere sunny, sheltered from the wind.",
		Model: json.RawMessage(`[]`), CreatedAt: base.Add(time.Second)}, memory.Usage{}); err != nil {
		t.Fatal(err)
	}
	turn.Unlock()
	// The reply; the question through it.
	if got := q("sunny"); got != "a1 u1" {
		t.Fatalf("Answer's reply: found %q", got)
	}
	if got := q("tomatoes"); got != "u1 a1" {
		t.Fatalf("after the reply: found %q", got)
	}
	turn = lock(t, s, "t")
	appendMsgs(t, turn, msg("u2", "user", "And the basil?", 2), msg("u3", "user", "It wilts.", 3))
	if got := q("basil"); !sameNeighbours(got, "u2 a1 u3") {
		t.Fatalf("an append: found %q", got)
	}
	if got := q("tomatoes"); got != "u1 a1" {
		t.Fatalf("the second neighbour of a message counts for nothing: found %q", got)
	}
	if err := turn.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	turn.Unlock()
	for _, w := range []string{"tomatoes", "sunny", "basil", "wilts"} {
		if got := q(w); got != "" {
			t.Fatalf("%s after the thread was deleted: found %q", w, got)
		}
	}
	// A thread of the same id starts afresh.
	seedThread(t, s, "t", "r", "", "Cucumbers need water.")
	if got := q("cucumbers tomatoes"); got != "t-1" {
		t.Fatalf("a new thread of the same id: found %q", got)
	}
	// Many messages at once (which a store may copy in), after one stored
	// before them.
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("Entry number%d of the log.", i))
	}
	seedThread(t, s, "log", "r", "", many[:1]...)
	turn = lock(t, s, "log")
	var msgs []memory.Message
	for i, text := range many[1:] {
		msgs = append(msgs, msg(fmt.Sprint("log-", i+2), "user", text, i+1))
	}
	appendMsgs(t, turn, msgs...)
	turn.Unlock()
	for _, c := range []struct{ text, want string }{{"number0", "log-1 log-2"}, {"number1", "log-2 log-1 log-3"}, {"number57", "log-58 log-57 log-59"}, {"number99", "log-100 log-99"}} {
		if got := q(c.text); !sameNeighbours(got, c.want) {
			t.Errorf("%s in a long append: found %q, want %q (the neighbours in either order)", c.text, got, c.want)
		}
	}
}

// sameNeighbours reports whether the ids found are those wanted: the
// first the same, the others (its neighbours, found through it) in any
// order.
func sameNeighbours(found, want string) bool {
	f, w := strings.Fields(found), strings.Fields(want)
	if len(f) != len(w) || len(f) == 0 || f[0] != w[0] {
		return false
	}
	slices.Sort(f[1:])
	slices.Sort(w[1:])
	return slices.Equal(f, w)
}

// imported is a message of an import: its own id, role, text and time.
func imported(id, role, text string, at time.Time) memory.Message {
	model, _ := json.Marshal([]map[string]string{{"role": role, "content": text}})
	return memory.Message{ID: id, Role: role, Text: text, Model: model, Pending: true, CreatedAt: at}
}

// allow is an ImportCheck that lets every import through, and records
// what it was shown.
type allow struct {
	threads []memory.Thread
	fresh   [][]string
}

func (a *allow) check(th memory.Thread, fresh []memory.Message) error {
	a.threads = append(a.threads, th)
	a.fresh = append(a.fresh, ids(fresh))
	return nil
}

func testImport(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	day := base.Add(-72 * time.Hour)
	// One thread that exists, with a message; one that does not.
	seedThread(t, s, "old", "alice", "Kept", "Hello there.")
	threads := []memory.ImportThread{
		{Thread: memory.Thread{ID: "new", ResourceID: "alice", Title: "From elsewhere", CreatedAt: day, UpdatedAt: day},
			Messages: []memory.Message{
				imported("n1", "user", "I collect stamps from Iceland.", day.Add(time.Minute)),
				imported("n2", "assistant", "What a lovely hobby!", day.Add(2*time.Minute)),
			}},
		{Thread: memory.Thread{ID: "old", ResourceID: "alice", Title: "ignored", CreatedAt: day, UpdatedAt: day},
			Messages: []memory.Message{
				imported("old-1", "user", "Hello there.", day),
				imported("o2", "user", "My parrot speaks French.", day.Add(3*time.Minute)),
				imported("o2", "user", "The same id again.", day.Add(4*time.Minute)),
			}},
	}
	var a allow
	n, err := s.Import(ctx, threads, a.check)
	if err != nil || n != 3 {
		t.Fatalf("Import: %d, %v; want 3 stored", n, err)
	}
	// check saw each thread as stored (or as it is created) with its new messages.
	if len(a.threads) != 2 || a.threads[0].ID != "new" || a.threads[0].ResourceID != "alice" || !a.threads[0].CreatedAt.Equal(day) || a.threads[0].Bytes != 0 ||
		a.threads[1].ID != "old" || a.threads[1].Title != "Kept" || !a.threads[1].CreatedAt.Equal(base) ||
		strings.Join(a.fresh[0], " ") != "n1 n2" || strings.Join(a.fresh[1], " ") != "o2" {
		t.Fatalf("check saw %+v with %v", a.threads, a.fresh)
	}
	th, err := s.Thread(ctx, "new")
	if err != nil || th.ResourceID != "alice" || th.Title != "From elsewhere" || !th.CreatedAt.Equal(day) || string(th.Metadata) != "{}" {
		t.Fatalf("the new thread: %+v, %v", th, err)
	}
	msgs, total, err := s.Messages(ctx, "new", 0, 10)
	if err != nil || total != 2 || strings.Join(ids(msgs), " ") != "n1 n2" {
		t.Fatalf("the new thread holds %v (%d): %v", ids(msgs), total, err)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.Pending || !m.CreatedAt.Equal(threads[0].Messages[i].CreatedAt) || m.Text != threads[0].Messages[i].Text {
			t.Fatalf("imported message %d: %+v", i, m)
		}
	}
	if th.Bytes != msgs[0].Size()+msgs[1].Size() {
		t.Fatalf("the new thread counts %d bytes, want %d", th.Bytes, msgs[0].Size()+msgs[1].Size())
	}
	msgs, _, _ = s.Messages(ctx, "old", 0, 10)
	if strings.Join(ids(msgs), " ") != "old-1 o2" || msgs[1].Seq != 2 || msgs[1].Text != "My parrot speaks French." {
		t.Fatalf("the old thread holds %v", ids(msgs))
	}
	// Indexed at once, and the message before them finds them as its neighbours.
	for text, want := range map[string]string{"stamps": "n1 n2", "parrot": "o2 old-1", "hobby": "n2 n1"} {
		if got := found(search(t, s, memory.SearchQuery{ResourceID: "alice", Text: text, Limit: 10})); got != want {
			t.Errorf("%s after the import: found %q, want %q", text, got, want)
		}
	}
	// Again: nothing is new.
	a = allow{}
	if n, err := s.Import(ctx, threads, a.check); err != nil || n != 0 {
		t.Fatalf("the same import again: %d, %v", n, err)
	}
	if strings.Join(a.fresh[0], " ")+strings.Join(a.fresh[1], " ") != "" {
		t.Fatalf("the same import again had new messages: %v", a.fresh)
	}
	if _, total, _ := s.Messages(ctx, "new", 0, 10); total != 2 {
		t.Fatalf("the same import again: the thread holds %d messages", total)
	}
	if got := found(search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "stamps", Limit: 10})); got != "n1 n2" {
		t.Fatalf("stamps after the import again: found %q", got)
	}
	// Many messages at once, after those stored.
	var many []memory.Message
	for i := range 150 {
		many = append(many, imported(fmt.Sprint("m", i), "user", fmt.Sprintf("Line%d of the diary.", i), day.Add(time.Duration(i)*time.Second)))
	}
	if n, err := s.Import(ctx, []memory.ImportThread{{Thread: memory.Thread{ID: "new", ResourceID: "alice", CreatedAt: day}, Messages: many}}, (&allow{}).check); err != nil || n != 150 {
		t.Fatalf("importing 150 messages: %d, %v", n, err)
	}
	if msgs, total, _ := s.Messages(ctx, "new", 100, 10); total != 152 || msgs[0].ID != "m98" || msgs[0].Seq != 101 {
		t.Fatalf("after 150 more: %d messages, %v", total, ids(msgs))
	}
	if got := found(search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "line0", Limit: 10})); !sameNeighbours(got, "m0 n2 m1") {
		t.Errorf("the first of 150 imported: found %q", got)
	}
}

// testImportCheck: a check that refuses one thread stores nothing of the
// import; a thread of another resource is the check's to refuse.
func testImportCheck(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	seedThread(t, s, "bobs", "bob", "", "Bob's message.")
	threads := []memory.ImportThread{
		{Thread: memory.Thread{ID: "mine", ResourceID: "alice", CreatedAt: base, UpdatedAt: base},
			Messages: []memory.Message{imported("a1", "user", "Alice's first.", base)}},
		{Thread: memory.Thread{ID: "bobs", ResourceID: "alice", CreatedAt: base, UpdatedAt: base},
			Messages: []memory.Message{imported("x1", "user", "Into Bob's thread.", base)}},
	}
	var seen []string
	ownerOnly := func(th memory.Thread, fresh []memory.Message) error {
		seen = append(seen, th.ID+":"+th.ResourceID)
		if th.ResourceID != "alice" {
			return fmt.Errorf("thread %q: %w", th.ID, memory.ErrConflict)
		}
		return nil
	}
	n, err := s.Import(ctx, threads, ownerOnly)
	if !errors.Is(err, memory.ErrConflict) || n != 0 {
		t.Fatalf("an import the check refuses: %d, %v", n, err)
	}
	if strings.Join(seen, " ") != "mine:alice bobs:bob" {
		t.Fatalf("the check saw %v", seen)
	}
	if _, err := s.Thread(ctx, "mine"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a refused import created a thread: %v", err)
	}
	if _, total, _ := s.Messages(ctx, "bobs", 0, 10); total != 1 {
		t.Fatalf("a refused import stored into Bob's thread: %d messages", total)
	}
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "first", Limit: 10}); len(rs) != 0 {
		t.Fatalf("a refused import was indexed: %s", found(rs))
	}
	// Without the thread of another resource, it goes through.
	if n, err := s.Import(ctx, threads[:1], ownerOnly); err != nil || n != 1 {
		t.Fatalf("the import the check allows: %d, %v", n, err)
	}
}

func testSetTitleIfEmpty(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	seedThread(t, s, "t", "alice", "", "Hi.")
	before, _ := s.Thread(ctx, "t")
	set, err := s.SetTitleIfEmpty(ctx, "t", "Greetings", base.Add(time.Hour))
	if err != nil || !set {
		t.Fatalf("a thread without a title: %v, %v", set, err)
	}
	th, _ := s.Thread(ctx, "t")
	if th.Title != "Greetings" || !th.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("after the title: %+v (updated at %v before)", th, before.UpdatedAt)
	}
	if set, err := s.SetTitleIfEmpty(ctx, "t", "Another", base.Add(time.Hour)); err != nil || set {
		t.Fatalf("a thread with a title: %v, %v", set, err)
	}
	// The title the owner sets wins, and stays.
	chosen := "Mine"
	if _, err := s.UpdateThread(ctx, "t", "alice", &chosen, nil, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if set, err := s.SetTitleIfEmpty(ctx, "t", "Generated", base.Add(time.Hour)); err != nil || set {
		t.Fatalf("after the owner's title: %v, %v", set, err)
	}
	if th, _ := s.Thread(ctx, "t"); th.Title != "Mine" {
		t.Fatalf("the owner's title became %q", th.Title)
	}
	if set, err := s.SetTitleIfEmpty(ctx, "missing", "x", base); err != nil || set {
		t.Fatalf("a missing thread: %v, %v", set, err)
	}
}

// testEraseResource: everything kept about a resource goes, in one
// transaction, and nothing of another resource's.
func testEraseResource(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	day := memory.Day(base)
	for _, owner := range []string{"alice", "bob"} {
		seedThread(t, s, owner+"-1", owner, "", "The garden needs rain.", "It does.")
		seedThread(t, s, owner+"-2", owner, "", "The garden is dry.")
		updateWM(t, s, memory.ScopeResource, owner, owner, base, set("likes gardens"))
		updateWM(t, s, memory.ScopeResource, owner, owner, base, set("likes gardens a lot"))
		updateWM(t, s, memory.ScopeThread, owner+"-1", owner, base, set("about rain"))
		for _, th := range []string{owner + "-1", owner + "-2"} {
			if err := s.AddUsage(ctx, memory.Usage{ResourceID: owner, ThreadID: th, Day: day, Tokens: 10, Cost: 0.1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Searched before: a store that keeps what it searched lets it go.
	if got := found(search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "garden", Limit: 10})); !strings.Contains(got, "alice-1-1") {
		t.Fatalf("alice's index before the erasure: found %q", got)
	}
	e, err := s.EraseResource(ctx, "alice")
	if want := (memory.Erased{Threads: 2, Messages: 3, WorkingMemories: 2, UsageRows: 3}); err != nil || e != want {
		t.Fatalf("erasing alice: %+v, %v; want %+v", e, err, want)
	}
	if ths, total, err := s.Threads(ctx, "alice", memory.ThreadOrder{}, 0, 10); err != nil || total != 0 || len(ths) != 0 {
		t.Fatalf("alice's threads after the erasure: %d, %v", total, err)
	}
	if _, _, err := s.Messages(ctx, "alice-1", 0, 10); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("alice's messages after the erasure: %v", err)
	}
	if rs := search(t, s, memory.SearchQuery{ResourceID: "alice", Text: "garden", Limit: 10}); len(rs) != 0 {
		t.Fatalf("alice's index after the erasure: %s", found(rs))
	}
	for _, k := range [][2]string{{memory.ScopeResource, "alice"}, {memory.ScopeThread, "alice-1"}} {
		if vs, err := s.WorkingMemoryVersions(ctx, k[0], k[1], 10); err != nil || len(vs) != 0 {
			t.Fatalf("working memory %v after the erasure: %+v, %v", k, vs, err)
		}
	}
	if n, c, err := s.Used(ctx, "alice", day); err != nil || n != 0 || c != 0 {
		t.Fatalf("alice's usage after the erasure: %d, %v, %v", n, c, err)
	}
	if report, err := s.UsageBetween(ctx, "alice", day, day); err != nil || len(report) != 0 {
		t.Fatalf("alice's usage report after the erasure: %+v, %v", report, err)
	}
	// Bob's is all there.
	if _, total, err := s.Threads(ctx, "bob", memory.ThreadOrder{}, 0, 10); err != nil || total != 2 {
		t.Fatalf("bob's threads: %d, %v", total, err)
	}
	if got := found(search(t, s, memory.SearchQuery{ResourceID: "bob", Text: "garden", Limit: 10})); !strings.Contains(got, "bob-1-1") || !strings.Contains(got, "bob-2-1") {
		t.Fatalf("bob's index: found %q", got)
	}
	if wm, _ := s.WorkingMemory(ctx, memory.ScopeResource, "bob"); wm.Version != 2 {
		t.Fatalf("bob's working memory: %+v", wm)
	}
	if wm, _ := s.WorkingMemory(ctx, memory.ScopeThread, "bob-1"); wm.Version != 1 {
		t.Fatalf("bob's thread's working memory: %+v", wm)
	}
	if n, _, _ := s.Used(ctx, "bob", day); n != 20 {
		t.Fatalf("bob's usage: %d", n)
	}
	// Nothing left to erase.
	if e, err := s.EraseResource(ctx, "alice"); err != nil || e != (memory.Erased{}) {
		t.Fatalf("erasing alice again: %+v, %v", e, err)
	}
	// A thread of the same id starts afresh, owned by whoever creates it.
	seedThread(t, s, "alice-1", "carol", "", "Fresh start.")
	if got := found(search(t, s, memory.SearchQuery{ResourceID: "carol", Text: "garden fresh", Limit: 10})); got != "alice-1-1" {
		t.Fatalf("a new thread of an erased one's id: found %q", got)
	}
}

// testSearchTitles: a search shows its threads' titles as they are now,
// however they were set since the last search.
func testSearchTitles(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	seedThread(t, s, "t", "r", "", "My first cello lesson.")
	title := func() string {
		t.Helper()
		rs := search(t, s, memory.SearchQuery{ResourceID: "r", Text: "cello", Limit: 1})
		if len(rs) != 1 {
			t.Fatalf("found %q", found(rs))
		}
		return rs[0].ThreadTitle
	}
	if got := title(); got != "" {
		t.Fatalf("title %q, want none", got)
	}
	if set, err := s.SetTitleIfEmpty(ctx, "t", "Music", base); err != nil || !set {
		t.Fatalf("SetTitleIfEmpty: %v %v", set, err)
	}
	if got := title(); got != "Music" {
		t.Fatalf("after SetTitleIfEmpty: title %q", got)
	}
	rename := "Cello"
	if _, err := s.UpdateThread(ctx, "t", "r", &rename, nil, base); err != nil {
		t.Fatal(err)
	}
	if got := title(); got != "Cello" {
		t.Fatalf("after a rename: title %q", got)
	}
	if _, err := s.UpdateThread(ctx, "t", "r", nil, json.RawMessage(`{"a":1}`), base); err != nil {
		t.Fatal(err)
	}
	if got := title(); got != "Cello" {
		t.Fatalf("after a change of metadata: title %q", got)
	}
	// A new message in the thread keeps the title.
	turn := lock(t, s, "t")
	appendMsgs(t, turn, msg("x", "user", "The cello again.", 5))
	turn.Unlock()
	if got := title(); got != "Cello" {
		t.Fatalf("after an append: title %q", got)
	}
}

// testSearchLongHistory: in a history longer than a store ranks whole
// (memory.SearchExactMessages) and than memory.SearchRecentMessages, a
// word the recent messages hardly use is found in the oldest, and a
// common word in the recent messages alone (memory's rank.go).
func testSearchLongHistory(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t)
	n := max(memory.SearchRecentMessages, memory.SearchExactMessages) + 50
	old := memory.ImportThread{Thread: memory.Thread{ID: "old", ResourceID: "r", CreatedAt: base, UpdatedAt: base}, Messages: []memory.Message{
		imported("o1", "user", "We planted the garden the year we went to Zanzibar.", base),
		imported("o2", "assistant", "What a year that was.", base.Add(time.Minute)),
		imported("o3", "user", "The garden loved the rain.", base.Add(2*time.Minute)),
	}}
	recent := memory.ImportThread{Thread: memory.Thread{ID: "recent", ResourceID: "r", CreatedAt: base.Add(time.Hour), UpdatedAt: base.Add(time.Hour)}}
	for i := range n {
		recent.Messages = append(recent.Messages, imported(fmt.Sprint("r", i), "user", fmt.Sprintf("Garden diary, day %d: all quiet.", i), base.Add(time.Hour+time.Duration(i)*time.Minute)))
	}
	if _, err := s.Import(ctx, []memory.ImportThread{old, recent}, (&allow{}).check); err != nil {
		t.Fatal(err)
	}
	q := func(text string, limit int) []memory.SearchResult {
		t.Helper()
		return search(t, s, memory.SearchQuery{ResourceID: "r", Text: text, Limit: limit})
	}
	if got := found(q("zanzibar", 10)); !sameNeighbours(got, "o1 o2") {
		t.Errorf("a word of the oldest message alone: found %q", got)
	}
	// The rare word first, with the common one.
	if rs := q("garden in Zanzibar", 3); len(rs) == 0 || rs[0].Message.ID != "o1" {
		t.Errorf("a rare word and a common one: found %q", found(rs))
	}
	// A common word: the newest messages first, and none older than the
	// recent ones.
	rs := q("garden diary", n+10)
	if len(rs) == 0 || rs[0].Message.ID != fmt.Sprint("r", n-1) {
		t.Fatalf("a common word: found %d, the first %q", len(rs), found(rs[:min(len(rs), 1)]))
	}
	for _, r := range rs {
		if r.ThreadID == "old" {
			t.Fatalf("a common word was looked for beyond the %d newest messages: found %s", memory.SearchRecentMessages, r.Message.ID)
		}
	}
	if len(rs) > memory.SearchRecentMessages {
		t.Fatalf("a common word found %d messages, more than the %d newest", len(rs), memory.SearchRecentMessages)
	}
}
