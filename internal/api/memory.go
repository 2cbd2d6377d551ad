package api

import "encoding/json"

// Thread is a conversation thread in the threads API.
type Thread struct {
	ID         string         `json:"id"`
	ResourceID string         `json:"resourceId"`
	Title      string         `json:"title"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  string         `json:"createdAt"`
	UpdatedAt  string         `json:"updatedAt"`
}

// ThreadList is a page of a resource's threads.
type ThreadList struct {
	Threads []Thread `json:"threads"`
	// Total counts all the resource's threads; HasMore says a later page
	// has some.
	Total   int  `json:"total"`
	Page    int  `json:"page"`
	PerPage int  `json:"perPage"`
	HasMore bool `json:"hasMore"`
}

// MessageList is a page of a thread's messages, oldest first, in the shape
// of response.uiMessages.
type MessageList struct {
	Messages []UIMessage `json:"messages"`
	Total    int         `json:"total"`
	Page     int         `json:"page"`
	PerPage  int         `json:"perPage"`
	HasMore  bool        `json:"hasMore"`
}

// ThreadUpdate is the body of PATCH /api/memory/threads/{threadId}: a new
// title, new metadata, or both (null or absent keeps either). ResourceID
// may only repeat the thread's owner: a thread cannot change hands.
type ThreadUpdate struct {
	Title      *string         `json:"title"`
	Metadata   json.RawMessage `json:"metadata"`
	ResourceID *string         `json:"resourceId"`
}

// DeleteResult is the body of a successful DELETE of a thread.
type DeleteResult struct {
	Result string `json:"result"`
}

// UsageReport is the body of GET /api/memory/usage: a resource's usage per
// UTC day (days without usage left out), and per thread within each day.
type UsageReport struct {
	ResourceID string     `json:"resourceId"`
	Currency   string     `json:"currency"`
	Days       []DayUsage `json:"days"`
	Total      struct {
		Tokens int64   `json:"tokens"`
		Cost   float64 `json:"cost"`
	} `json:"total"`
}

// DayUsage is one day of a UsageReport.
type DayUsage struct {
	Day     string        `json:"day"`
	Tokens  int64         `json:"tokens"`
	Cost    float64       `json:"cost"`
	Threads []ThreadUsage `json:"threads"`
}

// ThreadUsage is one thread's usage on a day.
type ThreadUsage struct {
	ThreadID string  `json:"threadId"`
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
}

// WorkingMemory is the answer of GET
// /api/memory/threads/{threadId}/working-memory, in Mastra 0.24's shape.
type WorkingMemory struct {
	// WorkingMemory is the block (Markdown, or a JSON object as a string
	// in schema mode); null while none is stored.
	WorkingMemory *string `json:"workingMemory"`
	// Source is "resource" or "thread": where the block is kept.
	Source                string                `json:"source"`
	WorkingMemoryTemplate WorkingMemoryTemplate `json:"workingMemoryTemplate"`
	ThreadExists          bool                  `json:"threadExists"`
	// Version counts the block's versions (0: none yet); UpdatedAt is
	// when the current one was stored. Not in Mastra's shape: added.
	Version   int64  `json:"version"`
	UpdatedAt string `json:"updatedAt,omitempty"`
}

// WorkingMemoryTemplate is working memory's template: Markdown text, or
// for a JSON schema, the empty object it describes.
type WorkingMemoryTemplate struct {
	Format  string          `json:"format"`
	Content json.RawMessage `json:"content"`
}

// WorkingMemoryUpdate is the body of POST
// /api/memory/threads/{threadId}/working-memory: the whole new block.
type WorkingMemoryUpdate struct {
	WorkingMemory *string `json:"workingMemory"`
	ResourceID    string  `json:"resourceId"`
}

// WorkingMemoryUpdated answers a stored update.
type WorkingMemoryUpdated struct {
	Success bool  `json:"success"`
	Version int64 `json:"version"`
}

// WorkingMemoryVersions is the answer of GET
// /api/memory/threads/{threadId}/working-memory/versions: every version
// kept, newest first.
type WorkingMemoryVersions struct {
	Source   string                 `json:"source"`
	Versions []WorkingMemoryVersion `json:"versions"`
}

// WorkingMemoryVersion is one version of working memory.
type WorkingMemoryVersion struct {
	Version       int64  `json:"version"`
	WorkingMemory string `json:"workingMemory"`
	UpdatedAt     string `json:"updatedAt"`
}

// WorkingMemoryRestore is the body of POST
// /api/memory/threads/{threadId}/working-memory/restore: the version to
// make current again.
type WorkingMemoryRestore struct {
	Version    int64  `json:"version"`
	ResourceID string `json:"resourceId"`
}

// SearchResponse is the answer of GET /api/memory/search, in Mastra's
// shape.
type SearchResponse struct {
	Results []SearchResult `json:"results"`
	Count   int            `json:"count"`
	Query   string         `json:"query"`
	// SearchScope is "resource" or "thread"; SearchType "text" (full-text
	// ranking) or "hybrid" (with an embedding model's).
	SearchScope string `json:"searchScope"`
	SearchType  string `json:"searchType"`
}

// SearchResult is one message found, with the messages around it.
type SearchResult struct {
	ID          string        `json:"id"`
	Role        string        `json:"role"`
	Content     string        `json:"content"`
	CreatedAt   string        `json:"createdAt"`
	ThreadID    string        `json:"threadId"`
	ThreadTitle string        `json:"threadTitle"`
	Context     SearchContext `json:"context"`
}

// SearchContext are the messages before and after a result in its thread.
type SearchContext struct {
	Before []SearchMessage `json:"before"`
	After  []SearchMessage `json:"after"`
}

// SearchMessage is a message around a result.
type SearchMessage struct {
	ID        string `json:"id"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

// SaveMessages is the body of POST /api/memory/save-messages: messages of
// a history moved in from elsewhere, each naming its thread and resource.
type SaveMessages struct {
	Messages []SavedMessage `json:"messages"`
}

// SavedMessage is one message of SaveMessages. Content is a string, an
// array of text parts, or Mastra's {"format": 2, "parts": [...]}; a
// missing id is made up, a missing createdAt is now.
type SavedMessage struct {
	ID         string          `json:"id,omitempty"`
	ThreadID   string          `json:"threadId"`
	ResourceID string          `json:"resourceId"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	CreatedAt  string          `json:"createdAt,omitempty"`
	Type       string          `json:"type,omitempty"`
}

// SaveMessagesResult answers SaveMessages with the messages stored (those
// whose id their thread held already are left out), content as text.
type SaveMessagesResult struct {
	Messages []StoredMessage `json:"messages"`
}

// StoredMessage is a message stored by save-messages, with its thread and
// resource.
type StoredMessage struct {
	ID         string `json:"id"`
	ThreadID   string `json:"threadId"`
	ResourceID string `json:"resourceId"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	CreatedAt  string `json:"createdAt"`
}

// ResourceErased answers DELETE /api/memory/resources/{resourceId}: what
// was erased.
type ResourceErased struct {
	Result          string `json:"result"`
	Threads         int64  `json:"threads"`
	Messages        int64  `json:"messages"`
	WorkingMemories int64  `json:"workingMemories"`
	UsageRows       int64  `json:"usageRows"`
}
