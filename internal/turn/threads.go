package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
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

// Threads is the threads API: a resource's threads, their messages and
// usage, read, changed and deleted under the same ownership as a turn.
type Threads struct {
	cfg   *Config
	turns *Turns
}

// Threads returns the threads API over the turns' store.
func (t *Turns) Threads() *Threads { return &Threads{cfg: &t.cfg, turns: t} }

// ListThreads returns a page of resourceID's threads. Only the resource's
// own threads are listed; a resourceId is required.
func (t *Threads) ListThreads(ctx context.Context, resourceID string, order memory.ThreadOrder, page, perPage int) (Page[memory.Thread], error) {
	if resourceID == "" {
		return Page[memory.Thread]{}, apperr.New(apperr.Invalid, "resourceId is required: threads are listed per resource, e.g. ?resourceId=user-1")
	}
	page, perPage = pageBounds(page, perPage)
	ths, total, err := t.cfg.Store.Threads(ctx, resourceID, order, page*perPage, perPage)
	if err != nil {
		return Page[memory.Thread]{}, storeErr(err)
	}
	return Page[memory.Thread]{Items: ths, Total: total, Page: page, PerPage: perPage, HasMore: page*perPage+len(ths) < total}, nil
}

// Thread returns thread threadID if resourceID owns it.
func (t *Threads) Thread(ctx context.Context, threadID, resourceID string) (memory.Thread, error) {
	return owned(ctx, t.cfg.Store, threadID, resourceID)
}

// Messages returns a page of thread threadID's messages, oldest first, if
// resourceID owns it, and the thread.
func (t *Threads) Messages(ctx context.Context, threadID, resourceID string, page, perPage int) (memory.Thread, Page[memory.Message], error) {
	th, err := owned(ctx, t.cfg.Store, threadID, resourceID)
	if err != nil {
		return th, Page[memory.Message]{}, err
	}
	page, perPage = pageBounds(page, perPage)
	msgs, total, err := t.cfg.Store.Messages(ctx, threadID, page*perPage, perPage)
	if errors.Is(err, memory.ErrNotFound) {
		return th, Page[memory.Message]{}, apperr.Wrap(apperr.NotFound, err, "thread %q not found", threadID)
	}
	if err != nil {
		return th, Page[memory.Message]{}, storeErr(err)
	}
	return th, Page[memory.Message]{Items: msgs, Total: total, Page: page, PerPage: perPage, HasMore: page*perPage+len(msgs) < total}, nil
}

// ThreadUpdate is a change of a thread: the title when not nil, the
// metadata (a JSON object, replacing the old) when not nil.
type ThreadUpdate struct {
	Title    *string
	Metadata json.RawMessage
}

// UpdateThread changes the title and the metadata of thread threadID if
// resourceID owns it.
func (t *Threads) UpdateThread(ctx context.Context, threadID, resourceID string, u ThreadUpdate) (memory.Thread, error) {
	if u.Title == nil && u.Metadata == nil {
		return memory.Thread{}, apperr.New(apperr.Invalid, `nothing to change: send "title" or "metadata"`)
	}
	if u.Title != nil && (len(*u.Title) > maxTitleBytes || strings.ContainsRune(*u.Title, 0)) {
		return memory.Thread{}, apperr.New(apperr.Invalid, "title must be at most %d bytes, without NUL characters", maxTitleBytes)
	}
	if u.Metadata != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(u.Metadata, &obj); err != nil || obj == nil {
			return memory.Thread{}, apperr.New(apperr.Invalid, `metadata must be a JSON object, e.g. {"topic": "travel"}`)
		}
		if bytes.Contains(u.Metadata, []byte(`\u0000`)) {
			return memory.Thread{}, apperr.New(apperr.Invalid, "metadata must not contain NUL characters")
		}
	}
	if _, err := owned(ctx, t.cfg.Store, threadID, resourceID); err != nil {
		return memory.Thread{}, err
	}
	th, err := t.cfg.Store.UpdateThread(ctx, threadID, resourceID, u.Title, u.Metadata, t.cfg.Now())
	if errors.Is(err, memory.ErrNotFound) {
		// Deleted since it was checked.
		return memory.Thread{}, apperr.Wrap(apperr.NotFound, err, "thread %q not found", threadID)
	}
	if err != nil {
		return memory.Thread{}, storeErr(err)
	}
	return th, nil
}

// DeleteThread deletes thread threadID and its messages if resourceID owns
// it. It waits for the thread's turn, so a run in progress finishes first.
func (t *Threads) DeleteThread(ctx context.Context, threadID, resourceID string) error {
	if _, err := owned(ctx, t.cfg.Store, threadID, resourceID); err != nil {
		return err
	}
	turn, err := lock(ctx, t.cfg.Store, threadID, t.cfg.LockWait)
	if err != nil {
		return err
	}
	defer turn.Unlock()
	// Owned again under the lock: the thread may have been deleted and
	// re-created meanwhile.
	if _, err := owned(ctx, t.cfg.Store, threadID, resourceID); err != nil {
		return err
	}
	if err := turn.Delete(ctx); err != nil {
		return storeErr(err)
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

// MaxUsageDays bounds the days a usage report covers.
const MaxUsageDays = 90

// Usage reports resourceID's usage on the last days UTC days, today
// included: per day, and per thread within it. Days without usage are left
// out.
func (t *Threads) Usage(ctx context.Context, resourceID string, days int) ([]memory.DayUsage, error) {
	if resourceID == "" {
		return nil, apperr.New(apperr.Invalid, "resourceId is required: usage is reported per resource, e.g. ?resourceId=user-1")
	}
	if days < 1 || days > MaxUsageDays {
		return nil, apperr.New(apperr.Invalid, "days must be a whole number from 1 to %d", MaxUsageDays)
	}
	now := t.cfg.Now()
	out, err := t.cfg.Store.UsageBetween(ctx, resourceID, memory.Day(now.AddDate(0, 0, -(days-1))), memory.Day(now))
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}
