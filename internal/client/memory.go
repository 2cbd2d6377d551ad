package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/companionhq/companion/internal/api"
)

// What the service keeps of a person beyond a thread's messages: working
// memory (what the companion knows of them), search over their past
// conversations, and the erasure of everything (docs/memory.md).

// memoryQuery is the query of a memory route: resourceID when set ("" lets
// the service take the credential's resource), then the pairs of more.
func memoryQuery(resourceID string, more ...string) string {
	q := url.Values{}
	if resourceID != "" {
		q.Set("resourceId", resourceID)
	}
	for i := 0; i+1 < len(more); i += 2 {
		q.Set(more[i], more[i+1])
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func workingMemoryPath(threadID string) string {
	return "/api/memory/threads/" + url.PathEscape(threadID) + "/working-memory"
}

// WorkingMemory returns what the companion knows of resourceID, as a turn
// of thread threadID would see it (GET .../threads/{threadId}/working-memory):
// the resource's block, or the thread's when the service keeps one per
// thread. The thread need not exist yet.
func (c *Client) WorkingMemory(ctx context.Context, threadID, resourceID string) (*api.WorkingMemory, error) {
	var out api.WorkingMemory
	if err := c.call(ctx, http.MethodGet, workingMemoryPath(threadID)+memoryQuery(resourceID), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetWorkingMemory replaces what the companion knows of resourceID with
// content, the whole block (POST .../threads/{threadId}/working-memory); the
// service keeps the version before.
func (c *Client) SetWorkingMemory(ctx context.Context, threadID, resourceID, content string) (*api.WorkingMemoryUpdated, error) {
	var out api.WorkingMemoryUpdated
	if err := c.call(ctx, http.MethodPost, workingMemoryPath(threadID)+memoryQuery(resourceID), api.WorkingMemoryUpdate{WorkingMemory: &content}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Search returns resourceID's past messages that match query, best first,
// at most limit of them (the service's default when 0)
// (GET /api/memory/search).
func (c *Client) Search(ctx context.Context, resourceID, query string, limit int) (*api.SearchResponse, error) {
	more := []string{"searchQuery", query}
	if limit > 0 {
		more = append(more, "limit", strconv.Itoa(limit))
	}
	var out api.SearchResponse
	if err := c.call(ctx, http.MethodGet, "/api/memory/search"+memoryQuery(resourceID, more...), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EraseResource erases everything the service keeps about resourceID: its
// threads and messages, what the companion knows of it, its usage
// (DELETE /api/memory/resources/{resourceId}). It cannot be undone. A
// mark as a minor stays (SetMinor clears it).
func (c *Client) EraseResource(ctx context.Context, resourceID string) (*api.ResourceErased, error) {
	if resourceID == "" {
		return nil, errors.New("the resource to erase must be named")
	}
	var out api.ResourceErased
	if err := c.call(ctx, http.MethodDelete, "/api/memory/resources/"+url.PathEscape(resourceID), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// call sends a request with in as its JSON body (none when nil) and
// decodes the JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	res, err := c.do(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(io.LimitReader(res.Body, maxAnswerBytes)).Decode(out); err != nil {
		return fmt.Errorf("the answer of %s %s does not decode: %w", method, path, err)
	}
	return nil
}

// maxAnswerBytes bounds a JSON answer read by call: a hundred search
// results with their context, and more.
const maxAnswerBytes = 16 << 20
