package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/companionhq/companion/internal/apperr"
)

// maxTitleBytes bounds a thread's title.
const maxTitleBytes = 1024

// Pagination defaults and bounds of the threads API.
const (
	DefaultPerPage = 100
	MaxPerPage     = 1000
)

// Page is one page of a list.
type Page[T any] struct {
	Items []T
	// Total counts all there are; Page counts from 0; HasMore says a later
	// page has some.
	Total, Page, PerPage int
	HasMore              bool
}

// ListThreads returns a page of resourceID's threads. Only the resource's
// own threads are listed; a resourceId is required.
func (m *Memory) ListThreads(ctx context.Context, resourceID string, order ThreadOrder, page, perPage int) (Page[Thread], error) {
	if resourceID == "" {
		return Page[Thread]{}, apperr.New(apperr.Invalid, "resourceId is required: threads are listed per resource, e.g. ?resourceId=user-1")
	}
	page, perPage = pageBounds(page, perPage)
	ths, total, err := m.cfg.Store.Threads(ctx, resourceID, order, page*perPage, perPage)
	if err != nil {
		return Page[Thread]{}, m.storeErr(err)
	}
	return Page[Thread]{Items: ths, Total: total, Page: page, PerPage: perPage, HasMore: page*perPage+len(ths) < total}, nil
}

// Thread returns thread threadID if resourceID owns it.
func (m *Memory) Thread(ctx context.Context, threadID, resourceID string) (Thread, error) {
	return m.owned(ctx, threadID, resourceID)
}

// Messages returns a page of thread threadID's messages, oldest first, if
// resourceID owns it, and the thread.
func (m *Memory) Messages(ctx context.Context, threadID, resourceID string, page, perPage int) (Thread, Page[Message], error) {
	th, err := m.owned(ctx, threadID, resourceID)
	if err != nil {
		return th, Page[Message]{}, err
	}
	page, perPage = pageBounds(page, perPage)
	msgs, total, err := m.cfg.Store.Messages(ctx, threadID, page*perPage, perPage)
	if errors.Is(err, ErrNotFound) {
		return th, Page[Message]{}, apperr.Wrap(apperr.NotFound, err, "thread %q not found", threadID)
	}
	if err != nil {
		return th, Page[Message]{}, m.storeErr(err)
	}
	return th, Page[Message]{Items: msgs, Total: total, Page: page, PerPage: perPage, HasMore: page*perPage+len(msgs) < total}, nil
}

// ThreadUpdate is a change of a thread: the title when not nil, the
// metadata (a JSON object, replacing the old) when not nil.
type ThreadUpdate struct {
	Title    *string
	Metadata json.RawMessage
}

// UpdateThread changes the title and the metadata of thread threadID if
// resourceID owns it.
func (m *Memory) UpdateThread(ctx context.Context, threadID, resourceID string, u ThreadUpdate) (Thread, error) {
	if u.Title == nil && u.Metadata == nil {
		return Thread{}, apperr.New(apperr.Invalid, `nothing to change: send "title" or "metadata"`)
	}
	if u.Title != nil && (len(*u.Title) > maxTitleBytes || strings.ContainsRune(*u.Title, 0)) {
		return Thread{}, apperr.New(apperr.Invalid, "title must be at most %d bytes, without NUL characters", maxTitleBytes)
	}
	if u.Metadata != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(u.Metadata, &obj); err != nil || obj == nil {
			return Thread{}, apperr.New(apperr.Invalid, `metadata must be a JSON object, e.g. {"topic": "travel"}`)
		}
		if bytes.Contains(u.Metadata, []byte(`\u0000`)) {
			return Thread{}, apperr.New(apperr.Invalid, "metadata must not contain NUL characters")
		}
	}
	if _, err := m.owned(ctx, threadID, resourceID); err != nil {
		return Thread{}, err
	}
	th, err := m.cfg.Store.UpdateThread(ctx, threadID, resourceID, u.Title, u.Metadata, m.cfg.Now())
	if errors.Is(err, ErrNotFound) {
		// Deleted since it was checked.
		return Thread{}, apperr.Wrap(apperr.NotFound, err, "thread %q not found", threadID)
	}
	if err != nil {
		return Thread{}, m.storeErr(err)
	}
	return th, nil
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
	// Owned again under the lock: the thread may have been deleted and
	// re-created meanwhile.
	if _, err := m.owned(ctx, threadID, resourceID); err != nil {
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
		perPage = DefaultPerPage
	}
	return page, min(perPage, MaxPerPage)
}
