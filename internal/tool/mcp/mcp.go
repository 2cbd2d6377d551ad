// Package mcp offers the tools of MCP (Model Context Protocol) servers to
// the agent: stdio servers it starts and streamable HTTP servers it calls,
// named in an mcpServers file. Each server tool becomes a tool named
// <server>_<tool> with the server's JSON input schema.
//
// A server that is down, slow or failing fails the call, not the service: a
// broken connection is dropped and made again on the next call.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultCallTimeout    = 30 * time.Second
)

// Options configure Open. Zero values select the defaults.
type Options struct {
	// ConnectTimeout bounds connecting to a server and listing its tools.
	ConnectTimeout time.Duration
	// CallTimeout bounds a call whose context has no earlier deadline.
	CallTimeout time.Duration
	// Log receives the servers that cannot be reached at start-up.
	Log *slog.Logger
}

// Set is the servers' clients and their tools. Close it to stop them.
type Set struct {
	clients []*client
	tools   []*Tool
}

// Tools are the servers' tools, in the order of the servers and of each
// server's list.
func (s *Set) Tools() []*Tool { return s.tools }

// Close ends every session, stopping the stdio servers.
func (s *Set) Close() error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// Open connects to each server and lists its tools. A server that cannot be
// reached is logged, not an error: its allow-listed tools are still offered
// (with an open schema) and fail until it answers; without an allow-list it
// offers nothing.
func Open(ctx context.Context, servers []Server, opts Options) *Set {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	set := &Set{}
	for _, srv := range servers {
		c := &client{srv: srv, opts: opts}
		set.clients = append(set.clients, c)
		listed, err := c.list(ctx)
		if err != nil {
			opts.Log.Warn("mcp server unreachable at start-up", "server", srv.Name, "err", err)
		}
		set.tools = append(set.tools, offered(c, listed)...)
	}
	return set
}

// offered are the tools of c to offer: those listed that the allow-list
// lets through, then the allow-listed ones the server did not list (it may
// be down for now).
func offered(c *client, listed []*sdk.Tool) []*Tool {
	var tools []*Tool
	seen := map[string]bool{}
	for _, t := range listed {
		if c.srv.Tools != nil && !slices.Contains(c.srv.Tools, t.Name) {
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = []byte(openSchema)
		}
		seen[t.Name] = true
		tools = append(tools, &Tool{c: c, remote: t.Name, description: t.Description, schema: schema})
	}
	for _, name := range c.srv.Tools {
		if !seen[name] {
			tools = append(tools, &Tool{c: c, remote: name, schema: []byte(openSchema)})
		}
	}
	return tools
}

// openSchema is the schema of a tool whose own is unknown.
const openSchema = `{"type":"object"}`

// Tool is one server tool, as the agent calls it. It is safe for concurrent
// use.
type Tool struct {
	c           *client
	remote      string
	description string
	schema      json.RawMessage
}

// Name is <server>_<tool>.
func (t *Tool) Name() string { return t.c.srv.Name + "_" + t.remote }

// Description is the server's, or says whose tool it is.
func (t *Tool) Description() string {
	if t.description != "" {
		return t.description
	}
	return fmt.Sprintf("Tool %s of the MCP server %s", t.remote, t.c.srv.Name)
}

// Parameters is the tool's JSON input schema.
func (t *Tool) Parameters() json.RawMessage { return t.schema }

// Run calls the tool. Its result is the server's structured content when it
// sends one, and otherwise its text content.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (any, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.c.opts.CallTimeout)
		defer cancel()
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := t.c.call(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		return nil, err
	}
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool failed without saying why"
		}
		return nil, fmt.Errorf("MCP server %s: %s", t.c.srv.Name, text)
	}
	if res.StructuredContent != nil {
		return res.StructuredContent, nil
	}
	return text, nil
}

// contentText is the text of content, one item a line; an item that is not
// text is named by its kind.
func contentText(content []sdk.Content) string {
	var b strings.Builder
	for i, c := range content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[image %s]", c.MIMEType)
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio %s]", c.MIMEType)
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *sdk.EmbeddedResource:
			if c.Resource != nil {
				if c.Resource.Text != "" {
					b.WriteString(c.Resource.Text)
				} else {
					fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
				}
			}
		default:
			b.WriteString("[content]")
		}
	}
	return b.String()
}

// client is the connection to one server, made on first use and again after
// it breaks.
type client struct {
	srv  Server
	opts Options

	mu      sync.Mutex
	session *sdk.ClientSession
}

// list connects and lists the server's tools.
func (c *client) list(ctx context.Context) ([]*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	cs, err := c.connected(ctx)
	if err != nil {
		return nil, err
	}
	var tools []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			c.drop(cs)
			return nil, fmt.Errorf("listing the tools of MCP server %s: %w", c.srv.Name, err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// call calls a tool, dropping the session when the call fails outside the
// tool, so that the next call connects again.
func (c *client) call(ctx context.Context, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	cs, err := c.connected(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		c.drop(cs)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %s did not answer in time", c.srv.Name)
		}
		return nil, fmt.Errorf("MCP server %s: %w", c.srv.Name, err)
	}
	return res, nil
}

// connected is the session, connecting when there is none.
func (c *client) connected(ctx context.Context) (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil {
		return c.session, nil
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "companion", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, c.transport(), nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s is unreachable: %w", c.srv.Name, err)
	}
	c.session = cs
	return cs, nil
}

// transport is a new transport to the server: a process for a stdio
// server, HTTP requests carrying its headers for the others.
func (c *client) transport() sdk.Transport {
	if c.srv.Command != "" {
		// Not bound to a call's context: the process outlives the call.
		cmd := exec.Command(c.srv.Command, c.srv.Args...)
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(c.srv.Env)) {
			cmd.Env = append(cmd.Env, k+"="+c.srv.Env[k])
		}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}
	}
	return &sdk.StreamableClientTransport{
		Endpoint:             c.srv.URL,
		HTTPClient:           &http.Client{Transport: headers{c.srv.Headers, http.DefaultTransport}},
		DisableStandaloneSSE: true,
		// A failed call is reported at once; the next one reconnects.
		MaxRetries: -1,
	}
}

// drop closes cs and forgets it, if it is still the session.
func (c *client) drop(cs *sdk.ClientSession) {
	c.mu.Lock()
	if c.session == cs {
		c.session = nil
	}
	c.mu.Unlock()
	go cs.Close() // a stuck server must not hold up the call's error
}

func (c *client) close() error {
	c.mu.Lock()
	cs := c.session
	c.session = nil
	c.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Close()
}

// headers adds a server's configured headers to each request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}
