package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
)

// maxTitleBytes bounds a thread's title.
const maxTitleBytes = 1024

// ListThreads returns a page of q.ResourceID's threads. Only the resource's
// own threads are listed; a resourceId is required.
func (m *Memory) ListThreads(ctx context.Context, q api.ThreadQuery) (api.ThreadList, error) {
	if q.ResourceID == "" {
		return api.ThreadList{}, apperr.New(apperr.Invalid, "resourceId is required: threads are listed per resource, e.g. ?resourceId=user-1")
	}
	page, perPage := pageBounds(q.Page, q.PerPage)
	order := ThreadOrder{ByUpdated: q.OrderBy == "updatedAt", Ascending: strings.EqualFold(q.SortDirection, "ASC")}
	ths, total, err := m.cfg.Store.Threads(ctx, q.ResourceID, order, page*perPage, perPage)
	if err != nil {
		return api.ThreadList{}, m.storeErr(err)
	}
	out := api.ThreadList{Threads: make([]api.Thread, 0, len(ths)), Total: total, Page: page, PerPage: perPage,
		HasMore: page*perPage+len(ths) < total}
	for _, th := range ths {
		out.Threads = append(out.Threads, apiThread(th))
	}
	return out, nil
}

// Thread returns thread threadID if resourceID owns it.
func (m *Memory) Thread(ctx context.Context, threadID, resourceID string) (api.Thread, error) {
	th, err := m.owned(ctx, threadID, resourceID)
	if err != nil {
		return api.Thread{}, err
	}
	return apiThread(th), nil
}

// Messages returns a page of thread threadID's messages, oldest first, if
// resourceID owns it.
func (m *Memory) Messages(ctx context.Context, threadID, resourceID string, q api.PageQuery) (api.MessageList, error) {
	th, err := m.owned(ctx, threadID, resourceID)
	if err != nil {
		return api.MessageList{}, err
	}
	page, perPage := pageBounds(q.Page, q.PerPage)
	msgs, total, err := m.cfg.Store.Messages(ctx, threadID, page*perPage, perPage)
	if errors.Is(err, ErrNotFound) {
		return api.MessageList{}, apperr.Wrap(apperr.NotFound, err, "thread %q not found", threadID)
	}
	if err != nil {
		return api.MessageList{}, m.storeErr(err)
	}
	out := api.MessageList{Messages: make([]api.UIMessage, 0, len(msgs)), Total: total, Page: page, PerPage: perPage,
		HasMore: page*perPage+len(msgs) < total}
	for _, msg := range msgs {
		out.Messages = append(out.Messages, uiMessage(th, msg))
	}
	return out, nil
}

// UpdateThread changes the title and the metadata of thread threadID if
// resourceID owns it. Metadata, when given, replaces the old.
func (m *Memory) UpdateThread(ctx context.Context, threadID, resourceID string, u api.ThreadUpdate) (api.Thread, error) {
	if u.Title == nil && u.Metadata == nil {
		return api.Thread{}, apperr.New(apperr.Invalid, `nothing to change: send "title" or "metadata"`)
	}
	if u.Title != nil && (len(*u.Title) > maxTitleBytes || strings.ContainsRune(*u.Title, 0)) {
		return api.Thread{}, apperr.New(apperr.Invalid, "title must be at most %d bytes, without NUL characters", maxTitleBytes)
	}
	if u.Metadata != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(u.Metadata, &obj); err != nil || obj == nil {
			return api.Thread{}, apperr.New(apperr.Invalid, `metadata must be a JSON object, e.g. {"topic": "travel"}`)
		}
		if bytes.Contains(u.Metadata, []byte(`\u0000`)) {
			return api.Thread{}, apperr.New(apperr.Invalid, "metadata must not contain NUL characters")
		}
	}
	if _, err := m.owned(ctx, threadID, resourceID); err != nil {
		return api.Thread{}, err
	}
	th, err := m.cfg.Store.UpdateThread(ctx, threadID, resourceID, u.Title, u.Metadata, m.cfg.Now())
	if errors.Is(err, ErrNotFound) {
		// Deleted since it was checked.
		return api.Thread{}, apperr.Wrap(apperr.NotFound, err, "thread %q not found", threadID)
	}
	if err != nil {
		return api.Thread{}, m.storeErr(err)
	}
	return apiThread(th), nil
}

// DeleteThread deletes thread threadID and its messages if resourceID owns
// it. It waits for the thread's turn, so a run in progress finishes first.
func (m *Memory) DeleteThread(ctx context.Context, threadID, resourceID string) error {
	if _, err := m.owned(ctx, threadID, resourceID); err != nil {
		return err
	}
	turn, err := m.lock(ctx, threadID)
	if err != nil {
		return err
	}
	defer turn.Unlock()
	// Owned again under the lock (the thread may have been deleted and
	// re-created meanwhile), read through the turn: on PostgreSQL the turn
	// holds a connection, and the pool may have no other to give.
	th, err := turn.Thread(ctx)
	if _, err := m.ownedAs(threadID, resourceID, th, err); err != nil {
		return err
	}
	if err := turn.Delete(ctx); err != nil {
		return m.storeErr(err)
	}
	return nil
}

func pageBounds(page, perPage int) (int, int) {
	if page < 0 {
		page = 0
	}
	if perPage <= 0 {
		perPage = api.DefaultPerPage
	}
	return page, min(perPage, api.MaxPerPage)
}

func apiThread(th Thread) api.Thread {
	// Decoded and encoded again, the metadata reads the same from every
	// store (PostgreSQL's jsonb reorders keys).
	meta := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(th.Metadata))
	dec.UseNumber()
	_ = dec.Decode(&meta)
	if meta == nil {
		meta = map[string]any{}
	}
	return api.Thread{ID: th.ID, ResourceID: th.ResourceID, Title: th.Title, Metadata: meta,
		CreatedAt: timestamp(th.CreatedAt), UpdatedAt: timestamp(th.UpdatedAt)}
}
