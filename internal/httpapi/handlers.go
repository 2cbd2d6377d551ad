package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/offstack"
	"github.com/companionhq/companion/internal/runlog"
)

// handleHealth serves GET /health: the process is up and serving.
func (s *Server) handleHealth() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// handleReady serves GET /ready: the service can answer, its database
// included. It answers 503 while a dependency fails.
func (s *Server) handleReady() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := s.cfg.Ready(ctx); err != nil {
				var ae *apperr.Error
				if !errors.As(err, &ae) {
					err = apperr.Wrap(apperr.Unavailable, err, "not ready: the database does not answer, or its schema is not the one this build expects")
				}
				s.writeError(w, r, err)
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// readyTimeout bounds a readiness check.
const readyTimeout = 2 * time.Second

// decodeRunRequest checks the agent id of a generate request,
// reads its body and validates it, and settles the resource it acts for.
func (s *Server) decodeRunRequest(w http.ResponseWriter, r *http.Request) (agent.Input, error) {
	return s.runRequest(w, r, s.decodeRunBody)
}

// decodeRunBody decodes and validates the body of a generate or stream
// request.
func (s *Server) decodeRunBody(body []byte) (agent.Input, error) {
	return decodeRun(body, s.cfg.Limits)
}

// runRequest is decodeRunRequest with decode reading the body: the seed's
// request, or another client's.
func (s *Server) runRequest(w http.ResponseWriter, r *http.Request, decode func([]byte) (agent.Input, error)) (agent.Input, error) {
	if err := agentID(chi.URLParam(r, "agentId")); err != nil {
		return agent.Input{}, err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return agent.Input{}, err
	}
	in, err := decode(body)
	if err != nil {
		return in, err
	}
	userOf(r, &in)
	in.ResourceID, err = s.resource(r.Context(), in.ResourceID)
	return in, err
}

// userOf adds to in what the request says of its user besides the body:
// the locale of Accept-Language when the body gave none, and a minor's
// mark from the credential, which a body cannot take away.
func userOf(r *http.Request, in *agent.Input) {
	if in.Locale == "" {
		in.Locale = acceptLocale(r.Header.Get("Accept-Language"))
	}
	if id, ok := identityOf(r.Context()); ok && id.Minor {
		in.Minor = true
	}
}

// streamRequest is runRequest for a stream, done off the stack (offstack): decoding goes deep,
// and a stream's connection goroutine, which then follows the run for as
// long as it lasts, would keep the stack its deepest call needed. (A
// generate request's goroutine goes as deep in the store anyway, and
// decodes in place.)
func (s *Server) streamRequest(w http.ResponseWriter, r *http.Request, decode func([]byte) (agent.Input, error)) (*agent.Input, error) {
	var (
		in  agent.Input
		err error
	)
	offstack.Do(func() { in, err = s.runRequest(w, r, decode) })
	return &in, err
}

// handleGenerate serves POST /api/agents/{agentId}/generate: the whole run
// as one JSON body.
func (s *Server) handleGenerate() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, err := s.decodeRunRequest(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := s.runContext(r)
		defer cancel()
		res, err := s.cfg.Runner.Run(ctx, in, nil)
		s.countQuota(err)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, generateBody(res))
	}
}

// handleStream serves POST /api/agents/{agentId}/stream: the run as
// Server-Sent Events, in the dialect the request asks for (X-Stream-Format:
// seed, mastra or ai-sdk). Errors before the model produced anything get a
// status and a JSON body; after it they are in-band, and the stream always
// ends with its dialect's terminal frames. The run goes on when the
// connection breaks, for -resume-grace, so that a client can resume it.
func (s *Server) handleStream() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		in, err := s.streamRequest(w, r, s.decodeRunBody)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.stream(w, r, arrived, in, "")
	}
}

// stream starts in as a streamed run and follows it in format (the
// request's own when ""); the request arrived at arrived.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, arrived time.Time, in *agent.Input, format string) {
	var err error
	if format == "" {
		if format, err = s.streamFormat(r); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.streamWith(w, r, arrived, in, func(runID string) dialect { return newDialect(format, runID) })
}

// streamWith is stream in the dialect dialectOf makes for the run's id.
func (s *Server) streamWith(w http.ResponseWriter, r *http.Request, arrived time.Time, in *agent.Input, dialectOf func(runID string) dialect) {
	release, err := s.admitStream()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	runID, err := s.runs.Start(r.Context(), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.followRun(w, r, runID, 0, dialectOf(runID), arrived)
}

// handleResume serves GET /api/agents/{agentId}/runs/{runId}/stream: the
// run's events after the request's Last-Event-ID (all of them without
// one), live until the run ends; for -stream-retention after it.
func (s *Server) handleResume() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The headers first: they cost no read of the run log.
		after, err := lastEventID(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		format, err := s.streamFormat(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		runID, err := s.ownedRun(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		release, err := s.admitStream()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		s.followRun(w, r, runID, after, newDialect(format, runID), time.Time{})
	}
}

// handleCancel serves POST /api/agents/{agentId}/runs/{runId}/cancel: the
// run stops at once, on whichever instance runs it; its streams end with
// an error event (CANCELLED) and run-finish.
func (s *Server) handleCancel() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		runID, err := s.ownedRun(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.runs.Cancel(r.Context(), runID); err != nil {
			s.writeError(w, r, s.runErr(runID, err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"runId": runID, "cancelled": true})
	}
}

// ownedRun is the {runId} of a runs route, once the request's resource
// owns it: the resource the run was started for.
func (s *Server) ownedRun(r *http.Request) (string, error) {
	if err := agentID(chi.URLParam(r, "agentId")); err != nil {
		return "", err
	}
	runID := chi.URLParam(r, "runId")
	if runID == "" || !utf8.ValidString(runID) || len(runID) > 128 {
		return "", apperr.New(apperr.Invalid, "runId must be a run's id, as the stream's events give it")
	}
	_, rid, err := s.ownerQuery(r, false)
	if err != nil {
		return "", err
	}
	meta, err := s.cfg.RunLog.Meta(r.Context(), runID)
	if err != nil {
		return "", s.runErr(runID, err)
	}
	switch {
	case meta.ResourceID == rid:
		return runID, nil
	case rid == "":
		return "", apperr.New(apperr.Forbidden, "run %q belongs to a resource: send its resourceId", clip(runID))
	}
	return "", apperr.New(apperr.Forbidden, "run %q belongs to another resource", clip(runID))
}

func (s *Server) runErr(runID string, err error) error {
	if errors.Is(err, runlog.ErrNotFound) {
		return apperr.Wrap(apperr.NotFound, err, "run %q not found: it never ran, or it ended more than %s ago", clip(runID), s.cfg.StreamRetention)
	}
	return apperr.Wrap(apperr.Unavailable, err, "the run's log could not be read: the details are in the server log")
}

// lastEventID is the id after which a resumed stream starts: the
// Last-Event-ID header, 0 without one.
func lastEventID(r *http.Request) (int64, error) {
	vs := r.Header.Values("Last-Event-Id")
	switch len(vs) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, apperr.New(apperr.Invalid, "send one Last-Event-ID header, not %d", len(vs))
	}
	v := strings.TrimSpace(vs[0])
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.New(apperr.Invalid, "Last-Event-ID must be the id of a stream event, a whole number, not %q", clip(v))
	}
	return n, nil
}

// runContext is the context of a generate run: the request's, ended after
// the longest a run may take (agent.ErrRunTimeout), or when the server
// cancels its runs at the end of a shutdown.
func (s *Server) runContext(r *http.Request) (context.Context, context.CancelFunc) {
	return s.runs.Attached(r.Context())
}

// admitStream takes one of the stream slots, or refuses with 503 and a
// Retry-After when all are taken. release gives the slot back.
func (s *Server) admitStream() (release func(), err error) {
	select {
	case s.streams <- struct{}{}:
		return func() { <-s.streams }, nil
	default:
		return nil, apperr.New(apperr.Unavailable,
			"the service has %d streams open, its limit (-max-streams): try again shortly", s.cfg.Limits.MaxStreams).After(time.Second)
	}
}

// countQuota reports a run refused by its resource's token quota, the one
// rate limit the runner applies.
func (s *Server) countQuota(err error) {
	if err != nil && apperr.CodeOf(err) == apperr.RateLimited {
		s.obs.RequestLimited(ScopeQuota)
	}
}
