package memory

import (
	"context"
	"errors"
	"time"
)

// What a store keeps about a resource beyond its threads: working memory
// (a block of what is known of the user, in versions), the recall index
// (full-text search over every message, kept in the transaction that
// stores the message), imported history, and the erasure of all of it.

// Scopes of working memory and of search: one resource's threads all
// together, or one thread.
const (
	ScopeResource = "resource"
	ScopeThread   = "thread"
)

// ErrConflict: what a call asks clashes with what is stored (an imported
// message for a thread of another resource).
var ErrConflict = errors.New("conflict")

// WorkingMemory is one version of what is kept about a resource or a
// thread: a Markdown block, or a JSON object in schema mode.
type WorkingMemory struct {
	// Scope is ScopeResource or ScopeThread; Key the resource's or the
	// thread's id; ResourceID the owner.
	Scope, Key, ResourceID string
	// Version counts from 1; 0 is none stored yet.
	Version   int64
	Content   string
	UpdatedAt time.Time
}

// WorkingMemoryUpdate computes working memory's next content from its
// current version (Version 0 when there is none yet). It may be called more
// than once, so it must do nothing but compute; an error stores nothing.
type WorkingMemoryUpdate func(current WorkingMemory) (string, error)

// MaxWorkingMemoryVersions is how many versions a store keeps of one
// working memory: the oldest go as new ones come.
const MaxWorkingMemoryVersions = 100

// SearchQuery asks for the messages of a resource that match a text.
type SearchQuery struct {
	ResourceID string
	// ThreadID, when set, searches that thread alone; ExcludeThreadID
	// leaves a thread out (recall leaves out the thread of the turn, whose
	// history the model sees anyway).
	ThreadID, ExcludeThreadID string
	// Text is what to look for, in words; a store drops what its
	// full-text syntax would read as operators.
	Text string
	// Limit is the most results (none when 0 or less); Context how many
	// messages before and after each result come with it.
	Limit, Context int
}

// SearchResult is one message that matched, best first, with the messages
// around it in its thread.
type SearchResult struct {
	ThreadID, ThreadTitle string
	Message               Message
	// Score orders the results: higher is better; comparable within one
	// search only.
	Score         float64
	Before, After []Message
}

// ImportThread is a thread's share of an import: the thread as it is
// created when it does not exist yet, and the messages to add to it.
type ImportThread struct {
	Thread   Thread
	Messages []Message
}

// ImportCheck decides, from a thread as stored (or as it would be created)
// and the messages of an import that it does not hold yet, whether the
// import may go on; an error stores nothing of the import.
type ImportCheck func(th Thread, fresh []Message) error

// Erased counts what an erasure removed: WorkingMemories counts scopes and
// keys (each with all its versions); UsageRows the rows of the daily
// totals, the resource's and its threads'.
type Erased struct {
	Threads, Messages, WorkingMemories, UsageRows int64
}

// Knowledge is the part of a Store that knows a resource across its
// threads. internal/memory/memorytest checks it with the rest.
type Knowledge interface {
	// WorkingMemory returns the current version of working memory scope
	// and key, Version 0 when none is stored.
	WorkingMemory(ctx context.Context, scope, key string) (WorkingMemory, error)
	// UpdateWorkingMemory stores a new version of wm.Scope and wm.Key,
	// owned by wm.ResourceID, at wm.UpdatedAt: the content update
	// computes from the current version, read and written in one
	// transaction that no other update of the same key interleaves with,
	// so that two updates at once see each other. An update that changes
	// nothing stores no version. It returns the version now current.
	UpdateWorkingMemory(ctx context.Context, wm WorkingMemory, update WorkingMemoryUpdate) (WorkingMemory, error)
	// WorkingMemoryVersions returns the versions kept of scope and key,
	// newest first, at most limit.
	WorkingMemoryVersions(ctx context.Context, scope, key string, limit int) ([]WorkingMemory, error)
	// Search returns the messages of q.ResourceID's threads that best
	// match q.Text, from the full-text index kept with the messages, as
	// rank.go says (a bounded share of a long history). A text without
	// words to look for (SearchTerms: only stop words, or none) finds
	// nothing. A result's message, and those of its context, carry what
	// a search shows (seq, id, role, text, date); a store may leave out
	// their model messages, pending mark and run.
	Search(ctx context.Context, q SearchQuery) ([]SearchResult, error)
	// Around reads the n messages before and after each result's message
	// in its thread into its Before and After (replacing what they held),
	// for all of rs at once: a search reads the context of the results it
	// keeps, not of every match it ranked.
	Around(ctx context.Context, rs []SearchResult, n int) error
	// Import adds messages to threads, creating those that do not exist,
	// in one transaction: a message whose id its thread holds is skipped,
	// the others are appended in the order given, with their own
	// CreatedAt, and indexed for search at once. check sees each thread
	// with what is new for it first. It returns how many messages it
	// stored.
	Import(ctx context.Context, threads []ImportThread, check ImportCheck) (int, error)
	// SetTitleIfEmpty gives thread id the title when it has none yet (a
	// title the owner set wins), and reports whether it did (not when the
	// thread does not exist). It leaves the thread's UpdatedAt as it is
	// (now is not stored): a title given later (generated after a turn, or
	// to an imported thread) is not activity, and lists by activity keep
	// their order.
	SetTitleIfEmpty(ctx context.Context, id, title string, now time.Time) (bool, error)
	// EraseResource removes everything kept about resourceID, in one
	// transaction: its threads and their messages, the search index of
	// those, its working memories (the resource's, and its threads') with
	// every version, and its usage rows. Its settings (ResourceSettings)
	// stay: a safety setting must outlive an erasure the resource may ask
	// for.
	EraseResource(ctx context.Context, resourceID string) (Erased, error)
}

// SetAround puts msgs, the messages of r's thread around r's message
// (oldest first), into r.Before and r.After.
func SetAround(r *SearchResult, msgs []Message) {
	r.Before, r.After = nil, nil
	for _, m := range msgs {
		switch {
		case m.Seq < r.Message.Seq:
			r.Before = append(r.Before, m)
		case m.Seq > r.Message.Seq:
			r.After = append(r.After, m)
		}
	}
}
