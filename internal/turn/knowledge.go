package turn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
)

// The memory API beyond threads: a resource's working memory (read, edited,
// its versions restored), search over its conversations, history imported
// from elsewhere, and the erasure of everything kept about it. Each call
// names the resource asking, as the threads API's do.

// WorkingMemoryView is working memory as Mastra's route shows it.
type WorkingMemoryView struct {
	// Content is the current block ("" when none is stored yet: the
	// template says what it will look like).
	Content string
	Version int64
	// Source is the scope the block is kept in.
	Source string
	// Format and Template are the template's.
	Format, Template string
	// ThreadExists says whether the thread named exists.
	ThreadExists bool
	UpdatedAt    time.Time
}

// workingMemoryKey is the working memory a request about thread threadID,
// for resourceID, reads: after ownership of the thread, when it exists.
func (t *Threads) workingMemoryKey(ctx context.Context, threadID, resourceID string) (scope, key string, exists bool, err error) {
	_, err = owned(ctx, t.cfg.Store, threadID, resourceID)
	switch {
	case err == nil:
		exists = true
	case apperr.CodeOf(err) != apperr.NotFound:
		return "", "", false, err
	}
	scope, key = t.cfg.WorkingMemory.key(threadID, resourceID)
	return scope, key, exists, nil
}

// WorkingMemory returns the working memory a turn of thread threadID, for
// resourceID, would see.
func (t *Threads) WorkingMemory(ctx context.Context, threadID, resourceID string) (WorkingMemoryView, error) {
	cfg := t.cfg.WorkingMemory
	if cfg.Off {
		return WorkingMemoryView{}, apperr.New(apperr.NotFound, "working memory is off (-working-memory off)")
	}
	scope, key, exists, err := t.workingMemoryKey(ctx, threadID, resourceID)
	if err != nil {
		return WorkingMemoryView{}, err
	}
	wm, err := t.cfg.Store.WorkingMemory(ctx, scope, key)
	if err != nil {
		return WorkingMemoryView{}, storeErr(err)
	}
	template := cfg.Template
	if cfg.Format == FormatJSON {
		template = cfg.blank()
	}
	return WorkingMemoryView{Content: wm.Content, Version: wm.Version, Source: scope, Format: cfg.Format, Template: template,
		ThreadExists: exists, UpdatedAt: wm.UpdatedAt}, nil
}

// SetWorkingMemory replaces the working memory of thread threadID, for
// resourceID, with content, as a new version: a person's edit. In JSON
// mode content must be a JSON object.
func (t *Threads) SetWorkingMemory(ctx context.Context, threadID, resourceID, content string) (WorkingMemoryView, error) {
	cfg := t.cfg.WorkingMemory
	if cfg.Off {
		return WorkingMemoryView{}, apperr.New(apperr.NotFound, "working memory is off (-working-memory off)")
	}
	if strings.ContainsRune(content, 0) {
		return WorkingMemoryView{}, apperr.New(apperr.Invalid, "workingMemory must not contain NUL characters")
	}
	if cfg.Format == FormatJSON {
		var obj map[string]any
		if err := json.Unmarshal([]byte(content), &obj); err != nil || obj == nil {
			return WorkingMemoryView{}, apperr.New(apperr.Invalid, "workingMemory must be a JSON object: working memory follows a schema (-working-memory-template)")
		}
	}
	scope, key, _, err := t.workingMemoryKey(ctx, threadID, resourceID)
	if err != nil {
		return WorkingMemoryView{}, err
	}
	if _, err := t.turns.updateWorkingMemory(ctx, memory.WorkingMemory{Scope: scope, Key: key, ResourceID: resourceID, UpdatedAt: t.cfg.Now()}, cfg,
		func(memory.WorkingMemory) (string, error) { return content, nil }); err != nil {
		return WorkingMemoryView{}, err
	}
	return t.WorkingMemory(ctx, threadID, resourceID)
}

// WorkingMemoryVersions returns the versions kept of the working memory
// of thread threadID, for resourceID, newest first.
func (t *Threads) WorkingMemoryVersions(ctx context.Context, threadID, resourceID string) ([]memory.WorkingMemory, error) {
	scope, key, _, err := t.workingMemoryKey(ctx, threadID, resourceID)
	if err != nil {
		return nil, err
	}
	vs, err := t.cfg.Store.WorkingMemoryVersions(ctx, scope, key, memory.MaxWorkingMemoryVersions)
	if err != nil {
		return nil, storeErr(err)
	}
	return vs, nil
}

// RestoreWorkingMemory makes an earlier version of the working memory of
// thread threadID, for resourceID, the current one again (as a new
// version: nothing is lost).
func (t *Threads) RestoreWorkingMemory(ctx context.Context, threadID, resourceID string, version int64) (WorkingMemoryView, error) {
	vs, err := t.WorkingMemoryVersions(ctx, threadID, resourceID)
	if err != nil {
		return WorkingMemoryView{}, err
	}
	for _, v := range vs {
		if v.Version == version {
			return t.SetWorkingMemory(ctx, threadID, resourceID, v.Content)
		}
	}
	return WorkingMemoryView{}, apperr.New(apperr.NotFound, "working memory has no version %d: the versions kept are the last %d", version, memory.MaxWorkingMemoryVersions)
}

// SearchRequest asks for a resource's messages that match a text.
type SearchRequest struct {
	ResourceID, ThreadID, Query string
	Limit                       int
}

// Search defaults: Mastra's.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	// searchContext is how many messages come before and after each
	// result of the search route.
	searchContext = 2
)

// SearchResults are a search's results and what it searched.
type SearchResults struct {
	Results []memory.SearchResult
	// Scope is memory.ScopeResource or memory.ScopeThread; Type SearchText
	// or SearchHybrid (ranked by vector too).
	Scope, Type string
}

// Search searches resourceID's conversations: all of them, or with a
// thread in thread scope, that thread alone (which must be the
// resource's).
func (t *Threads) Search(ctx context.Context, req SearchRequest) (SearchResults, error) {
	if req.ResourceID == "" {
		return SearchResults{}, apperr.New(apperr.Invalid, "resourceId is required: search covers one resource's conversations, e.g. ?resourceId=user-1")
	}
	if strings.TrimSpace(req.Query) == "" {
		return SearchResults{}, apperr.New(apperr.Invalid, "searchQuery is required: the words to look for")
	}
	if req.Limit == 0 {
		req.Limit = DefaultSearchLimit
	}
	if req.Limit < 1 || req.Limit > MaxSearchLimit {
		return SearchResults{}, apperr.New(apperr.Invalid, "limit must be a whole number from 1 to %d", MaxSearchLimit)
	}
	q := memory.SearchQuery{ResourceID: req.ResourceID, Text: req.Query, Limit: req.Limit}
	scope := memory.ScopeResource
	if req.ThreadID != "" && t.cfg.Recall.Scope == memory.ScopeThread {
		if _, err := owned(ctx, t.cfg.Store, req.ThreadID, req.ResourceID); err != nil {
			return SearchResults{}, err
		}
		q.ThreadID, scope = req.ThreadID, memory.ScopeThread
	}
	started := time.Now()
	ctx, span := t.turns.startSpan(ctx, "search")
	typ := SearchText
	ectx, cancel := context.WithTimeout(ctx, DefaultSearchEmbedTimeout)
	vec := t.turns.embedQuery(ectx, req.Query)
	cancel()
	if vec != nil {
		typ = SearchHybrid
	}
	results, err := t.turns.search(ctx, q, searchContext, vec)
	span.End()
	if err != nil {
		return SearchResults{}, storeErr(err)
	}
	t.cfg.Observer.Recalled(typ, time.Since(started), len(results))
	return SearchResults{Results: results, Scope: scope, Type: typ}, nil
}

// ImportMessage is a message of a history moved in from elsewhere.
type ImportMessage struct {
	ID, ThreadID, ResourceID, Role, Content string
	CreatedAt                               time.Time
}

// Import stores msgs in their threads, as turns would have stored them,
// with their dates: idempotent by id, under the ownership and the thread
// size of a turn, indexed for recall at once. It returns the messages it
// stored (those whose id their thread held already are left out).
func (t *Threads) Import(ctx context.Context, msgs []ImportMessage) ([]ImportMessage, error) {
	now := t.cfg.Now()
	var threads []memory.ImportThread
	at := map[string]int{}
	stored := map[string]ImportMessage{}
	for i, m := range msgs {
		if m.ID == "" {
			m.ID = t.cfg.NewID()
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		row, err := StoredMessage(agent.Message{ID: m.ID, Role: m.Role, Content: m.Content}, m.CreatedAt)
		if err != nil {
			return nil, apperr.Wrap(apperr.Internal, err, "internal server error: the details are in the server log")
		}
		j, ok := at[m.ThreadID]
		if !ok {
			j = len(threads)
			at[m.ThreadID] = j
			threads = append(threads, memory.ImportThread{Thread: memory.Thread{ID: m.ThreadID, ResourceID: m.ResourceID,
				Metadata: json.RawMessage(`{}`), CreatedAt: m.CreatedAt, UpdatedAt: m.CreatedAt}})
		}
		if owner := threads[j].Thread.ResourceID; owner != m.ResourceID {
			return nil, apperr.New(apperr.Invalid, "messages[%d] names thread %q with resourceId %q, and an earlier message names it with %q: a thread belongs to one resource", i, m.ThreadID, m.ResourceID, owner)
		}
		threads[j].Messages = append(threads[j].Messages, row)
		stored[m.ThreadID+"\x00"+m.ID] = m
		msgs[i] = m
	}
	var out []ImportMessage
	_, err := t.cfg.Store.Import(ctx, threads, func(th memory.Thread, fresh []memory.Message) error {
		if err := owns(th, threads[at[th.ID]].Thread.ResourceID); err != nil {
			return err
		}
		if err := t.cfg.MaxThreadBytes.Check(th, fresh); err != nil {
			return err
		}
		for _, f := range fresh {
			out = append(out, stored[th.ID+"\x00"+f.ID])
		}
		return nil
	})
	if errors.Is(err, memory.ErrConflict) {
		return nil, apperr.Wrap(apperr.Conflict, err, "the import clashes with what is stored: %v", err)
	}
	if err != nil {
		return nil, storeErr(err)
	}
	if len(out) > 0 {
		t.turns.stored()
	}
	return out, nil
}

// EraseResource erases everything kept about resourceID: its threads and
// messages, the recall index, working memory and its versions, usage. Its
// mark as a minor stays (settings.go).
func (t *Threads) EraseResource(ctx context.Context, resourceID string) (memory.Erased, error) {
	if resourceID == "" {
		return memory.Erased{}, apperr.New(apperr.Invalid, "resourceId is required: name the resource whose memory to erase")
	}
	erased, err := t.cfg.Store.EraseResource(ctx, resourceID)
	if err != nil {
		return erased, storeErr(err)
	}
	t.cfg.Observer.ResourceErased()
	return erased, nil
}

// importRoles are the roles an imported message may have.
var importRoles = []string{model.RoleUser, model.RoleAssistant}

// ImportRoles are the roles an imported message may have: user and
// assistant (system messages are instructions, never stored).
func ImportRoles() []string { return importRoles }
