package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/turn"
)

// Threads is the conversation memory as the threads API uses it. Each call
// names the resource asking; only its own threads are listed, read or
// changed. *turn.Threads is one.
type Threads interface {
	ListThreads(ctx context.Context, resourceID string, order memory.ThreadOrder, page, perPage int) (turn.Page[memory.Thread], error)
	Thread(ctx context.Context, threadID, resourceID string) (memory.Thread, error)
	Messages(ctx context.Context, threadID, resourceID string, page, perPage int) (memory.Thread, turn.Page[memory.Message], error)
	UpdateThread(ctx context.Context, threadID, resourceID string, u turn.ThreadUpdate) (memory.Thread, error)
	DeleteThread(ctx context.Context, threadID, resourceID string) error
	Usage(ctx context.Context, resourceID string, days int) ([]memory.DayUsage, error)
	WorkingMemory(ctx context.Context, threadID, resourceID string) (turn.WorkingMemoryView, error)
	SetWorkingMemory(ctx context.Context, threadID, resourceID, content string) (turn.WorkingMemoryView, error)
	WorkingMemoryVersions(ctx context.Context, threadID, resourceID string) ([]memory.WorkingMemory, error)
	RestoreWorkingMemory(ctx context.Context, threadID, resourceID string, version int64) (turn.WorkingMemoryView, error)
	Search(ctx context.Context, req turn.SearchRequest) (turn.SearchResults, error)
	Import(ctx context.Context, msgs []turn.ImportMessage) ([]turn.ImportMessage, error)
	EraseResource(ctx context.Context, resourceID string) (memory.Erased, error)
	Referrals(ctx context.Context, from, to string) (turn.ReferralReport, error)
	ResourceSettings(ctx context.Context, resourceID string) (memory.ResourceSettings, error)
	SetMinor(ctx context.Context, resourceID string, minor bool) (memory.ResourceSettings, error)
}

// answerJSON adapts a handler that returns a body or an error: the body
// goes out as JSON with 200, the error through writeError.
func (s *Server) answerJSON(h func(w http.ResponseWriter, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := h(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// handleUsage serves GET /api/memory/usage: a resource's tokens and cost per
// UTC day over the last `days` days (7 by default, 90 at most), and per
// thread within each day.
func (s *Server) handleUsage() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		q, rid, err := s.ownerQuery(r, true, "days")
		if err != nil {
			return nil, err
		}
		days := 7
		if v := q.Get("days"); v != "" {
			if days, err = strconv.Atoi(v); err != nil || days < 1 || days > turn.MaxUsageDays {
				return nil, apperr.New(apperr.Invalid, "days must be a whole number from 1 to %d, not %q", turn.MaxUsageDays, clip(v))
			}
		}
		report, err := s.cfg.Threads.Usage(r.Context(), rid, days)
		if err != nil {
			return nil, err
		}
		return usageBody(rid, report), nil
	})
}

// listQuery is what a list request asks: the resource, the page, and
// whether it wants Mastra's response shapes (mastraShapes).
type listQuery struct {
	q             url.Values
	resource      string
	page, perPage int
	mastra        bool
}

// listParams reads the query of a list of threads (threadID "") or of
// one thread's messages: the owner, more parameters the route takes, the
// page, and the response shapes wanted.
func (s *Server) listParams(r *http.Request, threadID *string, more ...string) (listQuery, error) {
	var lq listQuery
	var err error
	if threadID == nil {
		lq.q, lq.resource, err = s.ownerQuery(r, true, append([]string{"page", "perPage"}, more...)...)
	} else {
		*threadID, lq.resource, lq.q, err = s.threadParams(r)
	}
	if err == nil {
		lq.page, lq.perPage, err = pageParams(lq.q)
	}
	if err == nil {
		lq.mastra, err = s.mastraShapes(r)
	}
	return lq, err
}

// handleListThreads serves GET /api/memory/threads: a page of a resource's
// threads, newest first.
func (s *Server) handleListThreads() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		lq, err := s.listParams(r, nil, "orderBy", "sortDirection")
		if err != nil {
			return nil, err
		}
		orderBy, sortD, err := orderParams(lq.q)
		if err != nil {
			return nil, err
		}
		order := memory.ThreadOrder{ByUpdated: orderBy == "updatedAt", Ascending: sortD == "ASC"}
		list, err := s.cfg.Threads.ListThreads(r.Context(), lq.resource, order, lq.page, lq.perPage)
		if err != nil {
			return nil, err
		}
		threads := make([]api.Thread, 0, len(list.Items))
		for _, th := range list.Items {
			threads = append(threads, apiThread(th))
		}
		if lq.mastra {
			// Mastra's client reads the list as an array of threads.
			return threads, nil
		}
		return api.ThreadList{Threads: threads, Total: list.Total, Page: list.Page, PerPage: list.PerPage, HasMore: list.HasMore}, nil
	})
}

// handleGetThread serves GET /api/memory/threads/{threadId}.
func (s *Server) handleGetThread() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		th, err := s.cfg.Threads.Thread(r.Context(), id, rid)
		if err != nil {
			return nil, err
		}
		return apiThread(th), nil
	})
}

// handleListMessages serves GET /api/memory/threads/{threadId}/messages: a
// page of the thread's messages, oldest first.
func (s *Server) handleListMessages() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		var id string
		lq, err := s.listParams(r, &id)
		if err != nil {
			return nil, err
		}
		th, list, err := s.cfg.Threads.Messages(r.Context(), id, lq.resource, lq.page, lq.perPage)
		if err != nil {
			return nil, err
		}
		ui := make([]api.UIMessage, 0, len(list.Items))
		core := []api.CoreMessage{}
		for _, m := range list.Items {
			ms := modelMessagesOf(m)
			ui = append(ui, uiMessage(th, m, ms))
			if lq.mastra {
				core = appendCore(core, m, ms)
			}
		}
		if lq.mastra {
			// Mastra's client reads {messages (model messages), uiMessages}.
			return api.MastraMessageList{Messages: core, UIMessages: ui, LegacyMessages: []any{},
				Total: list.Total, Page: list.Page, PerPage: list.PerPage, HasMore: list.HasMore}, nil
		}
		return api.MessageList{Messages: ui, Total: list.Total, Page: list.Page, PerPage: list.PerPage, HasMore: list.HasMore}, nil
	})
}

// handleUpdateThread serves PATCH /api/memory/threads/{threadId}: a new
// title, new metadata, or both.
func (s *Server) handleUpdateThread() http.HandlerFunc {
	return s.answerJSON(func(w http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		body, err := s.readBody(w, r)
		if err != nil {
			return nil, err
		}
		var wire api.ThreadUpdate
		if err := decodeJSON(body, &wire, nil); err != nil {
			return nil, err
		}
		if wire.ResourceID != nil && strings.TrimSpace(*wire.ResourceID) != rid {
			return nil, apperr.New(apperr.Invalid, "resourceId cannot be changed: a thread belongs to the resource that created it")
		}
		u := turn.ThreadUpdate{Title: wire.Title}
		if len(wire.Metadata) > 0 && string(wire.Metadata) != "null" {
			u.Metadata = wire.Metadata
		}
		th, err := s.cfg.Threads.UpdateThread(r.Context(), id, rid, u)
		if err != nil {
			return nil, err
		}
		return apiThread(th), nil
	})
}

// handleDeleteThread serves DELETE /api/memory/threads/{threadId}: the
// thread and its messages. A turn in progress on it finishes first.
func (s *Server) handleDeleteThread() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		id, rid, _, err := s.threadParams(r)
		if err != nil {
			return nil, err
		}
		if err := s.cfg.Threads.DeleteThread(r.Context(), id, rid); err != nil {
			return nil, err
		}
		return api.DeleteResult{Result: "Thread deleted"}, nil
	})
}

// threadParams reads {threadId}, resourceId and agentId.
func (s *Server) threadParams(r *http.Request) (string, string, url.Values, error) {
	id, err := pathParam("threadId", chi.URLParam(r, "threadId"))
	if err != nil {
		return "", "", nil, err
	}
	if err := checkID("threadId", id, s.cfg.Limits); err != nil {
		return "", "", nil, err
	}
	q, rid, err := s.ownerQuery(r, false, "page", "perPage")
	return id, rid, q, err
}

// pathParam is the path parameter name, raw as chi matched it: unescaped,
// valid UTF-8, trimmed, not empty.
func pathParam(name, raw string) (string, error) {
	// chi matches the escaped path when there is one.
	v, err := url.PathUnescape(raw)
	if err != nil {
		return "", apperr.New(apperr.Invalid, "%s %q is not a valid path segment", name, clip(raw))
	}
	if !utf8.ValidString(v) {
		return "", apperr.New(apperr.Invalid, "%s is not valid UTF-8", name)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", apperr.New(apperr.Invalid, "%s must not be empty", name)
	}
	return v, nil
}

// readJSON reads r's body into v, strictly (decodeJSON).
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(body, v, nil)
}

// ownerQuery reads the query of a threads or runs request: only its
// parameters more, the owner's (resourceId, or Mastra's resourceid;
// required or not) and agentId. It returns the query and the resource the
// request acts for.
func (s *Server) ownerQuery(r *http.Request, required bool, more ...string) (url.Values, string, error) {
	q, err := strictQuery(r.URL.RawQuery, append([]string{"resourceId", "resourceid", "agentId"}, more...)...)
	if err != nil {
		return q, "", err
	}
	if err := agentParam(q); err != nil {
		return q, "", err
	}
	rid, err := s.resourceParam(r.Context(), q, required)
	return q, rid, err
}

// resourceParam is the resource a threads request acts for: the
// resourceId parameter, or with authentication the credential's.
func (s *Server) resourceParam(ctx context.Context, q url.Values, required bool) (string, error) {
	rid := q.Get("resourceId")
	// Mastra's client spells it in lower case.
	if alt, ok := q["resourceid"]; ok {
		if _, both := q["resourceId"]; both && alt[0] != rid {
			return "", apperr.New(apperr.Invalid, "resourceId and resourceid name different resources: send one")
		}
		rid = alt[0]
	}
	if !utf8.ValidString(rid) {
		return "", apperr.New(apperr.Invalid, "resourceId is not valid UTF-8")
	}
	rid = strings.TrimSpace(rid)
	if err := checkID("resourceId", rid, s.cfg.Limits); err != nil {
		return "", err
	}
	rid, err := s.resource(ctx, rid)
	if err != nil {
		return "", err
	}
	if required && rid == "" {
		return "", apperr.New(apperr.Invalid, "resourceId is required: threads are listed per resource, e.g. ?resourceId=user-1")
	}
	return rid, nil
}

// agentParam checks the optional agentId: the only agent's threads are all
// there are.
func agentParam(q url.Values) error {
	if id := q.Get("agentId"); id != "" {
		return agentID(id)
	}
	return nil
}

// pageParams reads page (from 0) and perPage.
func pageParams(q url.Values) (page, perPage int, err error) {
	perPage = turn.DefaultPerPage
	if v := q.Get("page"); v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 0 {
			return 0, 0, apperr.New(apperr.Invalid, "page must be a whole number from 0, not %q", clip(v))
		}
	}
	if v := q.Get("perPage"); v != "" {
		if perPage, err = strconv.Atoi(v); err != nil || perPage < 1 || perPage > turn.MaxPerPage {
			return 0, 0, apperr.New(apperr.Invalid, "perPage must be a whole number from 1 to %d, not %q", turn.MaxPerPage, clip(v))
		}
	}
	// The offset must stay a sane number.
	if page > 1<<31/perPage {
		return 0, 0, apperr.New(apperr.Invalid, "page %d is too far", page)
	}
	return page, perPage, nil
}

func orderParams(q url.Values) (string, string, error) {
	by, dir := "createdAt", "DESC"
	if v := q.Get("orderBy"); v != "" {
		if v != "createdAt" && v != "updatedAt" {
			return "", "", apperr.New(apperr.Invalid, `orderBy must be "createdAt" or "updatedAt", not %q`, clip(v))
		}
		by = v
	}
	if v := q.Get("sortDirection"); v != "" {
		dir = strings.ToUpper(v)
		if dir != "ASC" && dir != "DESC" {
			return "", "", apperr.New(apperr.Invalid, `sortDirection must be "DESC" or "ASC", not %q`, clip(v))
		}
	}
	return by, dir, nil
}

// mastraShapes reports whether a threads API request wants Mastra's
// response shapes: it speaks the mastra dialect (X-Stream-Format: mastra,
// as a MastraClient configured for this service sends on every request,
// or -stream-format mastra).
func (s *Server) mastraShapes(r *http.Request) (bool, error) {
	f, err := s.streamFormat(r)
	return f == FormatMastra, err
}

// appendCore appends m, whose model messages are ms, to out as Mastra's
// core messages.
func appendCore(out []api.CoreMessage, m memory.Message, ms []model.Message) []api.CoreMessage {
	for i, mm := range ms {
		cm := api.CoreMessage{Role: mm.Role, Content: mm.Content}
		if i == 0 {
			cm.ID = m.ID
		}
		switch {
		case mm.Role == model.RoleTool:
			cm.Content = []api.CorePart{{Type: "tool-result", ToolCallID: mm.ToolCallID, ToolName: mm.ToolName, Result: json.RawMessage(mm.Content), IsError: mm.IsError}}
		case len(mm.ToolCalls) > 0:
			parts := []api.CorePart{}
			if mm.Content != "" {
				parts = append(parts, api.CorePart{Type: "text", Text: mm.Content})
			}
			for _, c := range mm.ToolCalls {
				parts = append(parts, api.CorePart{Type: "tool-call", ToolCallID: c.ID, ToolName: c.Name, Args: c.Args})
			}
			cm.Content = parts
		}
		out = append(out, cm)
	}
	return out
}
