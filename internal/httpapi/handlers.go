package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
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

// decodeRunRequest checks the agent id of a generate or stream request and
// reads and validates its body.
func (s *Server) decodeRunRequest(w http.ResponseWriter, r *http.Request) (agent.Input, error) {
	if err := agentID(chi.URLParam(r, "agentId")); err != nil {
		return agent.Input{}, err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return agent.Input{}, err
	}
	in, err := decodeRun(body, s.cfg.Limits)
	if err != nil {
		return in, err
	}
	if in.ResourceID, err = s.actAs(r.Context(), in.ResourceID); err != nil {
		return in, err
	}
	return in, s.limitResource(r.Context(), in.ResourceID)
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
// Server-Sent Events. Errors before the first event get a status and a JSON
// body; after it they are error events, and the stream always ends with
// run-finish.
func (s *Server) handleStream() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		in, err := s.decodeRunRequest(w, r)
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
		ew, err := newEventWriter(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.obs.StreamOpened()
		defer s.obs.StreamClosed()
		ew.onFirst = func() { s.obs.StreamFirstEvent(time.Since(arrived)) }
		ew.onFirstText = func() { s.obs.StreamFirstText(time.Since(arrived)) }
		defer func() {
			if p := recover(); p != nil {
				if !ew.committed {
					panic(p) // recoverPanics answers 500
				}
				s.logPanic(r, p)
				ew.abort("internal server error: the details are in the server log")
			}
		}()
		ctx, cancel := s.runContext(r)
		defer cancel()
		res, err := s.cfg.Runner.Run(ctx, in, ew.Emit)
		s.countQuota(err)
		if err != nil && !ew.committed {
			// Nothing but the held opening events: a real status.
			s.writeError(w, r, err)
			return
		}
		var werr error
		if err != nil {
			s.log.LogAttrs(r.Context(), levelOf(err), "stream ended with an error", errAttr(err))
			werr = ew.fail(inBand(err))
		} else {
			werr = ew.finish(res.FinishReason)
		}
		if werr == nil {
			werr = ew.commit()
		}
		if werr != nil {
			s.log.LogAttrs(r.Context(), levelOf(werr), "stream write failed", errAttr(werr))
		}
	}
}

// runContext is the context of a run: the request's, ended after the
// longest a run may take, with agent.ErrRunTimeout as its cause.
func (s *Server) runContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(r.Context(), s.cfg.Limits.MaxRunDuration, agent.ErrRunTimeout)
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
