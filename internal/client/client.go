// Package client is a Go client of the companion API (docs/api.md): generate,
// stream in the seed dialect (resumed after a break), resume and cancel; and
// what the service keeps of a person (docs/memory.md): working memory, search
// over past conversations, erasure. It speaks the wire types of internal/api;
// errors carry the service's {"error": ...} message and status.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/api"
)

// Client calls one companion service. Its fields may be set before the
// first call and not changed after; it is safe for concurrent use.
type Client struct {
	// BaseURL is the service's address, such as http://127.0.0.1:4111.
	BaseURL string
	// APIKey, when set, is sent as Authorization: Bearer.
	APIKey string
	// HTTPClient makes the requests; http.DefaultClient when nil. Streams
	// last as long as their run, so it should have no overall timeout.
	HTTPClient *http.Client
	// MaxResumes is how many times a stream that breaks before its end is
	// resumed (after the last event read) before the break is reported.
	MaxResumes int
}

// New returns a client of the service at baseURL (http or https), sending
// apiKey when it is not empty, that resumes a broken stream once.
func New(baseURL, apiKey string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the service URL %q must be http:// or https:// and a host, such as http://127.0.0.1:4111", baseURL)
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey, MaxResumes: 1}, nil
}

// Error is a request the service refused or failed: its HTTP status and the
// message of its {"error": ...} body.
type Error struct {
	Status  int
	Message string
	// RetryAfter is the service's Retry-After, when it sent one.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

// agentPath is the path of the agent's route rest.
func agentPath(rest string) string { return "/api/agents/" + api.AgentID + "/" + rest }

// Health checks that the service answers GET /health.
func (c *Client) Health(ctx context.Context) error {
	res, err := c.do(ctx, http.MethodGet, "/health", nil, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	return res.Body.Close()
}

// Generate runs the agent on req and returns the whole run
// (POST .../generate).
func (c *Client) Generate(ctx context.Context, req api.GenerateRequest) (*api.GenerateResponse, error) {
	body, err := c.GenerateBody(ctx, req)
	if err != nil {
		return nil, err
	}
	var out api.GenerateResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("the generate response does not decode: %w", err)
	}
	return &out, nil
}

// GenerateBody is Generate returning the response body as the service sent
// it.
func (c *Client) GenerateBody(ctx context.Context, req api.GenerateRequest) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	res, err := c.do(ctx, http.MethodPost, agentPath("generate"), b, nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the generate response: %w", err)
	}
	return body, nil
}

// Stream starts a run of req and returns its event stream
// (POST .../stream, seed dialect). A refusal before the run produced
// anything is an *Error. The stream must be closed.
func (c *Client) Stream(ctx context.Context, req api.GenerateRequest) (*Stream, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	res, err := c.do(ctx, http.MethodPost, agentPath("stream"), b, streamHeader(0))
	if err != nil {
		return nil, err
	}
	if err := isEventStream(res); err != nil {
		return nil, err
	}
	return &Stream{c: c, ctx: ctx, resourceID: req.ResourceID, body: res.Body}, nil
}

// Resume opens the stream of run runID after event after (every event when
// after is 0) (GET .../runs/{runId}/stream with Last-Event-ID). resourceID
// is the resource the run was started for ("" for the credential's own).
func (c *Client) Resume(ctx context.Context, runID, resourceID string, after int64) (*Stream, error) {
	res, err := c.do(ctx, http.MethodGet, agentPath("runs/"+url.PathEscape(runID)+"/stream")+resourceQuery(resourceID), nil, streamHeader(after))
	if err != nil {
		return nil, err
	}
	if err := isEventStream(res); err != nil {
		return nil, err
	}
	return &Stream{c: c, ctx: ctx, resourceID: resourceID, runID: runID, last: after, body: res.Body}, nil
}

// Cancel stops run runID (POST .../runs/{runId}/cancel): its streams end
// with an error event (CANCELLED) and run-finish, and none of its reply is
// stored. Cancelling a run that has ended is not an error.
func (c *Client) Cancel(ctx context.Context, runID, resourceID string) error {
	res, err := c.do(ctx, http.MethodPost, agentPath("runs/"+url.PathEscape(runID)+"/cancel")+resourceQuery(resourceID), nil, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	return res.Body.Close()
}

func resourceQuery(resourceID string) string {
	if resourceID == "" {
		return ""
	}
	return "?resourceId=" + url.QueryEscape(resourceID)
}

func streamHeader(after int64) http.Header {
	h := http.Header{"Accept": {"text/event-stream"}, "X-Stream-Format": {"seed"}}
	if after > 0 {
		h.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	return h
}

// isEventStream checks that a 200 answer is an event stream, and closes it
// when not.
func isEventStream(res *http.Response) error {
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		res.Body.Close()
		return fmt.Errorf("the service answered %q, not an event stream", res.Header.Get("Content-Type"))
	}
	return nil
}

// do sends a request and returns a 2xx response, or the service's error.
func (c *Client) do(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the service at %s cannot be reached: %w", c.BaseURL, unwrapURLError(err))
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		return nil, errorOf(res)
	}
	return res, nil
}

// unwrapURLError drops the method and URL net/http puts around a transport
// error: the caller says which service it was.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// errorOf reads a non-2xx response into an *Error.
func errorOf(res *http.Response) *Error {
	e := &Error{Status: res.StatusCode}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
		e.Message = eb.Error
		return e
	}
	// Not the service's JSON: a proxy in front, say.
	e.Message = http.StatusText(res.StatusCode)
	if t := strings.TrimSpace(string(b)); t != "" {
		if len(t) > 200 {
			t = t[:200] + "..."
		}
		e.Message += ": " + t
	}
	return e
}
