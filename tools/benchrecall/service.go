//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/memory/postgres/pgtest"
	"github.com/companionhq/companion/tools/internal/gotool"
	"github.com/companionhq/companion/tools/internal/proc"
)

// The service's side: the binary built and served on a fresh store, the
// set imported through the memory routes, and every question asked of its
// search, as a client would.

// agentID is the one agent the service has.
const agentID = "companionAgent"

// serve measures the service on each store of cfg: a store it cannot reach
// gets a note instead of figures.
func serve(ctx context.Context, cfg config, set *Set, stderr io.Writer) ([]*system, error) {
	root, err := gotool.ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "benchrecall-")
	if err != nil {
		return nil, err
	}
	if cfg.keep {
		fmt.Fprintln(stderr, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintln(stderr, "building the service")
	bin := filepath.Join(dir, "companion")
	build := exec.CommandContext(ctx, gotool.Command(), "build", "-o", bin, "./cmd/companion")
	build.Dir = root
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the service: %w", err)
	}
	var out []*system
	for _, store := range cfg.stores {
		s := &system{name: store}
		dbURL, drop, err := database(ctx, store, dir, cfg.postgres)
		if err != nil {
			s.note = err.Error()
			out = append(out, s)
			continue
		}
		err = func() error {
			defer drop()
			args := append([]string{"serve", "-addr", "127.0.0.1:0", "-rate-limit", "0", "-model", "fake", "-database-url", dbURL}, cfg.serviceArgs...)
			svc, err := proc.Start(ctx, "the service", filepath.Join(dir, store+".log"), proc.AnnouncedByService, proc.Env(), bin, args...)
			if err != nil {
				return err
			}
			defer svc.Stop()
			fmt.Fprintf(stderr, "%s: serving at %s\n", store, svc.URL)
			c := &client{base: svc.URL, http: &http.Client{Timeout: time.Minute}}
			return c.measure(ctx, set, cfg, s, stderr)
		}()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", store, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// database returns the URL of a fresh database of store, and what drops
// it.
func database(ctx context.Context, store, dir, postgres string) (string, func(), error) {
	if store == "sqlite" {
		return "sqlite://" + filepath.Join(dir, "recall.db"), func() {}, nil
	}
	if postgres == "" {
		return "", nil, errors.New("no PostgreSQL server given (-postgres)")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, drop, err := pgtest.NewSchema(cctx, postgres, "companion_recall_")
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL unreachable (%v); `make services` starts it", err)
	}
	return u, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = drop(ctx)
	}, nil
}

// client speaks the memory routes of one service.
type client struct {
	base string
	http *http.Client
}

// wireMessage is a message as save-messages takes it (Mastra's shape).
type wireMessage struct {
	ID         string    `json:"id"`
	ThreadID   string    `json:"threadId"`
	ResourceID string    `json:"resourceId"`
	Role       string    `json:"role"`
	Content    string    `json:"content"`
	CreatedAt  time.Time `json:"createdAt"`
}

// searchResponse is what the search route answers, as far as the score
// needs it.
type searchResponse struct {
	Results []struct {
		ID      string `json:"id"`
		Context struct {
			Before []struct {
				ID string `json:"id"`
			} `json:"before"`
			After []struct {
				ID string `json:"id"`
			} `json:"after"`
		} `json:"context"`
	} `json:"results"`
}

// measure imports the set and asks every question, recording the outcomes
// and latencies in s.
func (c *client) measure(ctx context.Context, set *Set, cfg config, s *system, stderr io.Writer) error {
	began := time.Now()
	n, err := c.importSet(ctx, set, cfg.batch)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: imported %d messages in %s\n", s.name, n, time.Since(began).Round(time.Millisecond))
	if slices.ContainsFunc(cfg.serviceArgs, func(a string) bool { return strings.HasPrefix(strings.TrimLeft(a, "-"), "embed-provider") }) {
		// The messages are embedded off the import's path: the questions
		// wait for all of them.
		began = time.Now()
		if err := c.waitEmbedded(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s: embedded %d messages in %s\n", s.name, n, time.Since(began).Round(time.Millisecond))
	}
	for _, q := range set.Questions {
		hits, took, err := c.search(ctx, q.PersonaID, q.Text, cfg.limit)
		if err != nil {
			return fmt.Errorf("question %s: %w", q.ID, err)
		}
		s.outcomes = append(s.outcomes, judge(q.Evidence, hits))
		s.latency = append(s.latency, took)
	}
	return nil
}

// waitEmbedded waits until the service's vector indexer has embedded n
// messages, as its metrics count them.
func (c *client) waitEmbedded(ctx context.Context, n int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/metrics", nil)
		if err != nil {
			return err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "companion_embedded_messages_total "); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && int(f) >= n {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the service had not embedded the %d messages imported after 10 minutes", n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// importSet posts every persona's sessions, in order, batch messages at a
// time, and returns how many it sent.
func (c *client) importSet(ctx context.Context, set *Set, batch int) (int, error) {
	sent := 0
	for _, p := range set.Personas {
		var msgs []wireMessage
		for _, s := range p.Sessions {
			for _, m := range s.Messages {
				msgs = append(msgs, wireMessage{ID: m.ID, ThreadID: s.ID, ResourceID: p.ID, Role: m.Role, Content: m.Content, CreatedAt: m.CreatedAt})
			}
		}
		for len(msgs) > 0 {
			part := msgs[:min(batch, len(msgs))]
			msgs = msgs[len(part):]
			body, err := json.Marshal(map[string]any{"messages": part})
			if err != nil {
				return sent, err
			}
			if err := c.do(ctx, http.MethodPost, "/api/memory/save-messages?agentId="+agentID, body, nil); err != nil {
				return sent, fmt.Errorf("importing %s: %w", p.ID, err)
			}
			sent += len(part)
		}
	}
	return sent, nil
}

// search asks the search route and returns its results with their context,
// and how long the answer took to arrive whole.
func (c *client) search(ctx context.Context, resource, query string, limit int) ([]hit, time.Duration, error) {
	v := url.Values{"agentId": {agentID}, "resourceId": {resource}, "searchQuery": {query}, "limit": {fmt.Sprint(limit)}}
	var resp searchResponse
	began := time.Now()
	if err := c.do(ctx, http.MethodGet, "/api/memory/search?"+v.Encode(), nil, &resp); err != nil {
		return nil, 0, err
	}
	took := time.Since(began)
	var hits []hit
	for _, r := range resp.Results {
		h := hit{id: r.ID}
		for _, m := range r.Context.Before {
			h.context = append(h.context, m.ID)
		}
		for _, m := range r.Context.After {
			h.context = append(h.context, m.ID)
		}
		hits = append(hits, h)
	}
	return hits, took, nil
}

// do sends a request and decodes a 2xx answer into out (when not nil);
// another status is an error that quotes the answer.
func (c *client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, strings.SplitN(path, "?", 2)[0], resp.Status, bytes.TrimSpace(b[:min(len(b), 500)]))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, strings.SplitN(path, "?", 2)[0], err)
		}
	}
	return nil
}
