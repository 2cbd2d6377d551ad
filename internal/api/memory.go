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
