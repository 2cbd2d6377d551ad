package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/turn"
)

// The memory routes beyond threads, in Mastra's shapes where Mastra has
// them: working memory, search, save-messages; and the erasure of a
// resource.

// maxImportMessages bounds the messages of one save-messages request.
const maxImportMessages = 1000

// workingMemoryBody is view in Mastra's shape.
func workingMemoryBody(view turn.WorkingMemoryView) api.WorkingMemory {
	out := api.WorkingMemory{Source: view.Source, ThreadExists: view.ThreadExists, Version: view.Version}
	if view.Version > 0 {
		c := view.Content
		out.WorkingMemory = &c
		out.UpdatedAt = timestamp(view.UpdatedAt)
	}
	out.WorkingMemoryTemplate.Format = view.Format
	if view.Format == turn.FormatJSON {
		out.WorkingMemoryTemplate.Content = json.RawMessage(view.Template)
	} else {
		b, _ := json.Marshal(view.Template)
		out.WorkingMemoryTemplate.Content = b
	}
	return out
}

// handleGetWorkingMemory serves GET
// /api/memory/threads/{threadId}/working-memory: the working memory a turn
// of the thread sees (the resource's, in resource scope).
func (s *Server) handleGetWorkingMemory() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		view, err := s.cfg.Threads.WorkingMemory(r.Context(), id, rid)
		if err != nil {
			return nil, err
		}
		return workingMemoryBody(view), nil
	})
}

// handleUpdateWorkingMemory serves POST
// /api/memory/threads/{threadId}/working-memory: a new block, written by a
// person; the one before stays among the versions.
func (s *Server) handleUpdateWorkingMemory() http.HandlerFunc {
	return s.answerJSON(func(w http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		var body api.WorkingMemoryUpdate
		if err := s.readJSON(w, r, &body); err != nil {
			return nil, err
		}
		if body.WorkingMemory == nil {
			return nil, apperr.New(apperr.Invalid, `workingMemory is required: the whole new block, e.g. {"workingMemory": "# About the user\n- Name: Sam"}`)
		}
		if rid, err = s.bodyResource(r, rid, body.ResourceID); err != nil {
			return nil, err
		}
		view, err := s.cfg.Threads.SetWorkingMemory(r.Context(), id, rid, *body.WorkingMemory)
		if err != nil {
			return nil, err
		}
		return api.WorkingMemoryUpdated{Success: true, Version: view.Version}, nil
	})
}

// handleWorkingMemoryVersions serves GET
// /api/memory/threads/{threadId}/working-memory/versions: every version
// kept, newest first.
func (s *Server) handleWorkingMemoryVersions() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		vs, err := s.cfg.Threads.WorkingMemoryVersions(r.Context(), id, rid)
		if err != nil {
			return nil, err
		}
		out := api.WorkingMemoryVersions{Versions: make([]api.WorkingMemoryVersion, 0, len(vs))}
		for _, v := range vs {
			out.Source = v.Scope
			out.Versions = append(out.Versions, api.WorkingMemoryVersion{Version: v.Version, WorkingMemory: v.Content, UpdatedAt: timestamp(v.UpdatedAt)})
		}
		return out, nil
	})
}

// handleRestoreWorkingMemory serves POST
// /api/memory/threads/{threadId}/working-memory/restore: an earlier
// version made current again, as a new version.
func (s *Server) handleRestoreWorkingMemory() http.HandlerFunc {
	return s.answerJSON(func(w http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		var body api.WorkingMemoryRestore
		if err := s.readJSON(w, r, &body); err != nil {
			return nil, err
		}
		if body.Version < 1 {
			return nil, apperr.New(apperr.Invalid, `version is required: the version to restore, e.g. {"version": 3}`)
		}
		if rid, err = s.bodyResource(r, rid, body.ResourceID); err != nil {
			return nil, err
		}
		view, err := s.cfg.Threads.RestoreWorkingMemory(r.Context(), id, rid, body.Version)
		if err != nil {
			return nil, err
		}
		return workingMemoryBody(view), nil
	})
}

// handleSearch serves GET /api/memory/search: a resource's messages that
// match searchQuery, best first, each with two messages before and after.
func (s *Server) handleSearch() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		q, rid, err := s.ownerQuery(r, true, "searchQuery", "threadId", "limit")
		if err != nil {
			return nil, err
		}
		req := turn.SearchRequest{ResourceID: rid, Query: q.Get("searchQuery"), ThreadID: strings.TrimSpace(q.Get("threadId"))}
		if len(req.Query) > s.cfg.Limits.MaxMessageBytes {
			return nil, apperr.New(apperr.Invalid, "searchQuery is longer than %d bytes, the limit (-max-message-bytes)", s.cfg.Limits.MaxMessageBytes)
		}
		if req.ThreadID != "" {
			if err := checkID("threadId", req.ThreadID, s.cfg.Limits); err != nil {
				return nil, err
			}
		}
		if v := q.Get("limit"); v != "" {
			if req.Limit, err = strconv.Atoi(v); err != nil || req.Limit < 1 || req.Limit > turn.MaxSearchLimit {
				return nil, apperr.New(apperr.Invalid, "limit must be a whole number from 1 to %d, not %q", turn.MaxSearchLimit, clip(v))
			}
		}
		found, err := s.cfg.Threads.Search(r.Context(), req)
		if err != nil {
			return nil, err
		}
		out := api.SearchResponse{Results: make([]api.SearchResult, 0, len(found.Results)), Query: req.Query,
			SearchScope: found.Scope, SearchType: found.Type}
		for _, res := range found.Results {
			out.Results = append(out.Results, api.SearchResult{ID: res.Message.ID, Role: res.Message.Role, Content: res.Message.Text,
				CreatedAt: timestamp(res.Message.CreatedAt), ThreadID: res.ThreadID, ThreadTitle: res.ThreadTitle,
				Context: api.SearchContext{Before: searchMessages(res.Before), After: searchMessages(res.After)}})
		}
		out.Count = len(out.Results)
		return out, nil
	})
}

func searchMessages(ms []memory.Message) []api.SearchMessage {
	out := make([]api.SearchMessage, 0, len(ms))
	for _, m := range ms {
		out = append(out, api.SearchMessage{ID: m.ID, Role: m.Role, Content: m.Text, CreatedAt: timestamp(m.CreatedAt)})
	}
	return out
}

// handleSaveMessages serves POST /api/memory/save-messages: a history
// moved in from elsewhere, with its dates; idempotent by id.
func (s *Server) handleSaveMessages() http.HandlerFunc {
	return s.answerJSON(func(w http.ResponseWriter, r *http.Request) (any, error) {
		q, err := strictQuery(r.URL.RawQuery, "agentId")
		if err != nil {
			return nil, err
		}
		if err := agentParam(q); err != nil {
			return nil, err
		}
		var body api.SaveMessages
		if err := s.readJSON(w, r, &body); err != nil {
			return nil, err
		}
		msgs, err := s.importMessages(r, body.Messages)
		if err != nil {
			return nil, err
		}
		saved, err := s.cfg.Threads.Import(r.Context(), msgs)
		if err != nil {
			return nil, err
		}
		out := api.SaveMessagesResult{Messages: make([]api.StoredMessage, 0, len(saved))}
		for _, m := range saved {
			out.Messages = append(out.Messages, api.StoredMessage{ID: m.ID, ThreadID: m.ThreadID, ResourceID: m.ResourceID, Role: m.Role,
				Content: m.Content, CreatedAt: timestamp(m.CreatedAt)})
		}
		return out, nil
	})
}

// importMessages validates the messages of a save-messages request, each
// as a run's messages are, and checks that the credential may act for
// every resource they name.
func (s *Server) importMessages(r *http.Request, in []api.SavedMessage) ([]turn.ImportMessage, error) {
	lim := s.cfg.Limits
	switch {
	case len(in) == 0:
		return nil, apperr.New(apperr.Invalid, `messages is required: e.g. {"messages": [{"threadId": "t1", "resourceId": "u1", "role": "user", "content": "Hi"}]}`)
	case len(in) > maxImportMessages:
		return nil, apperr.New(apperr.Invalid, "messages holds %d messages, more than the %d one request may save: send them in batches", len(in), maxImportMessages)
	}
	missing := 0
	for _, m := range in {
		if strings.TrimSpace(m.ThreadID) == "" || strings.TrimSpace(m.ResourceID) == "" {
			missing++
		}
	}
	if missing > 0 {
		return nil, apperr.New(apperr.Invalid, "%d of the %d messages lack a threadId or a resourceId: every message must name both", missing, len(in))
	}
	allowed := map[string]bool{}
	seen := map[string]int{}
	out := make([]turn.ImportMessage, 0, len(in))
	for i, m := range in {
		im := turn.ImportMessage{ID: strings.TrimSpace(m.ID), ThreadID: strings.TrimSpace(m.ThreadID), ResourceID: strings.TrimSpace(m.ResourceID), Role: m.Role}
		for _, f := range []struct{ name, v string }{{"threadId", im.ThreadID}, {"resourceId", im.ResourceID}, {"id", im.ID}} {
			if err := checkID(fmt.Sprintf("messages[%d].%s", i, f.name), f.v, lim); err != nil {
				return nil, err
			}
		}
		if !slices.Contains(turn.ImportRoles(), im.Role) {
			return nil, apperr.New(apperr.Invalid, `messages[%d].role must be "user" or "assistant", not %q`, i, clip(im.Role))
		}
		text, err := importText(m.Content)
		if err != nil {
			return nil, apperr.New(apperr.Invalid, "messages[%d].content: %s", i, err.Error())
		}
		switch {
		case strings.TrimSpace(text) == "":
			return nil, apperr.New(apperr.Invalid, "messages[%d].content must not be empty", i)
		case len(text) > lim.MaxMessageBytes:
			return nil, apperr.New(apperr.Invalid, "messages[%d].content is longer than %d bytes, the limit (-max-message-bytes)", i, lim.MaxMessageBytes)
		case strings.ContainsRune(text, 0):
			return nil, apperr.New(apperr.Invalid, "messages[%d] must not contain NUL characters", i)
		}
		im.Content = text
		if m.CreatedAt != "" {
			t, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
			if err != nil {
				return nil, apperr.New(apperr.Invalid, "messages[%d].createdAt must be an RFC 3339 time such as 2026-05-02T18:04:05Z, not %q", i, clip(m.CreatedAt))
			}
			im.CreatedAt = t
		}
		if im.ID != "" {
			key := im.ThreadID + "\x00" + im.ID
			if j, dup := seen[key]; dup {
				return nil, apperr.New(apperr.Invalid, "messages[%d].id %q repeats messages[%d].id in the same thread: message ids must be unique", i, im.ID, j)
			}
			seen[key] = i
		}
		if !allowed[im.ResourceID] {
			if _, err := s.actAs(r.Context(), im.ResourceID); err != nil {
				return nil, err
			}
			allowed[im.ResourceID] = true
		}
		out = append(out, im)
	}
	return out, nil
}

// importText reads a saved message's content: a string, an array of text
// parts, or Mastra's {"format": 2, "parts": [...]}; text parts joined.
func importText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var parts []part
	if err := json.Unmarshal(raw, &parts); err != nil {
		var v2 struct {
			Parts   []part  `json:"parts"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(raw, &v2); err != nil || (v2.Parts == nil && v2.Content == nil) {
			return "", fmt.Errorf(`must be a string, an array of text parts, or {"format": 2, "parts": [...]}`)
		}
		if v2.Parts == nil {
			return *v2.Content, nil
		}
		parts = v2.Parts
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// handleEraseResource serves DELETE /api/memory/resources/{resourceId}:
// everything kept about the resource, erased in one transaction, but its
// mark as a minor (safety.go).
func (s *Server) handleEraseResource() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		q, err := strictQuery(r.URL.RawQuery, "agentId")
		if err != nil {
			return nil, err
		}
		if err := agentParam(q); err != nil {
			return nil, err
		}
		raw := chi.URLParam(r, "resourceId")
		rid, err := pathParam("resourceId", raw)
		if err != nil {
			return nil, err
		}
		if err := checkID("resourceId", rid, s.cfg.Limits); err != nil {
			return nil, err
		}
		// Only a credential bound to the resource, or given every one.
		if rid, err = s.actAs(r.Context(), rid); err != nil {
			return nil, err
		}
		erased, err := s.cfg.Threads.EraseResource(r.Context(), rid)
		if err != nil {
			return nil, err
		}
		return api.ResourceErased{Result: "Resource erased", Threads: erased.Threads, Messages: erased.Messages,
			WorkingMemories: erased.WorkingMemories, UsageRows: erased.UsageRows}, nil
	})
}

// bodyResource settles the resource of a body that may name one beside the
// query's: they must agree.
func (s *Server) bodyResource(r *http.Request, fromQuery, fromBody string) (string, error) {
	fromBody = strings.TrimSpace(fromBody)
	if fromBody == "" || fromBody == fromQuery {
		return fromQuery, nil
	}
	if fromQuery != "" {
		return "", apperr.New(apperr.Invalid, "the query's resourceId and the body's name different resources: send one")
	}
	if err := checkID("resourceId", fromBody, s.cfg.Limits); err != nil {
		return "", err
	}
	return s.resource(r.Context(), fromBody)
}
