package httpapi

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/model"
)

// statusOf is the one place codes become HTTP statuses.
func statusOf(c apperr.Code) int {
	switch c {
	case apperr.Invalid:
		return http.StatusBadRequest
	case apperr.Unauthenticated:
		return http.StatusUnauthorized
	case apperr.UnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case apperr.SlowRequest:
		return http.StatusRequestTimeout
	case apperr.HeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.Upstream:
		return http.StatusBadGateway
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	case apperr.Timeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// classify turns any error the handlers meet into an *apperr.Error whose
// message is safe for the client.
func classify(err error) *apperr.Error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	var me *model.Error
	if errors.As(err, &me) {
		msg := me.Provider + " model failed: " + me.Message
		switch me.Kind {
		case model.KindUnavailable:
			return apperr.Wrap(apperr.Unavailable, err, "%s", msg)
		case model.KindTimeout:
			return apperr.Wrap(apperr.Timeout, err, "%s", msg)
		}
		return apperr.Wrap(apperr.Upstream, err, "%s", msg)
	}
	var re *agent.RunError
	switch {
	case errors.As(err, &re) && re.Kind == agent.FailedCancelled:
		return apperr.Wrap(apperr.Unavailable, err, "the run was cancelled before it finished: the server is shutting down or the request was withdrawn")
	case errors.As(err, &re) && re.Kind == agent.FailedTimeout:
		return apperr.Wrap(apperr.Timeout, err, "the run took longer than the longest a run may take (-max-run-duration), and was stopped")
	}
	return apperr.Wrap(apperr.Internal, err, "internal server error: the details are in the server log")
}

// inBand is a run's failure as a stream reports it once events went out:
// the error event's code and message.
func inBand(err error) api.StreamError {
	var re *agent.RunError
	var me *model.Error
	var ae *apperr.Error
	switch {
	case errors.As(err, &re) && re.Kind == agent.FailedTimeout:
		return api.StreamError{Code: api.CodeRunTimeout, Message: "the run took longer than the longest a run may take, and was stopped"}
	case errors.As(err, &re) && re.Kind == agent.FailedCancelled:
		return api.StreamError{Code: api.CodeCancelled, Message: "the run was cancelled before it finished"}
	case errors.As(err, &me):
		return api.StreamError{Code: api.CodeModelError, Message: me.Provider + " model failed: " + me.Message}
	case errors.As(err, &ae):
		return api.StreamError{Code: api.CodeInternal, Message: ae.Message}
	}
	return api.StreamError{Code: api.CodeInternal, Message: "the run failed inside the service"}
}

// writeError writes err as {"error": message} with its status. Internal
// causes go to the log only.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	status := statusOf(ae.Code)
	level := slog.LevelInfo
	if status >= 500 && !ae.Expected {
		level = slog.LevelError
	}
	s.log.LogAttrs(r.Context(), level, "request failed",
		slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", status), slog.String("code", string(ae.Code)), slog.String("error", err.Error()))
	if ae.Code == apperr.MethodNotAllowed {
		w.Header().Set("Allow", allowedMethods(s.router, r.URL.Path))
	}
	if n := retrySeconds(retryAfterOf(err, ae)); n > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(n))
	}
	if strings.HasPrefix(r.URL.Path, openaiPrefix) {
		writeJSON(w, status, openaiErrorBody(err, ae, status))
		return
	}
	writeJSON(w, status, errorBody(ae.Message))
}

func errorBody(message string) api.ErrorBody { return api.ErrorBody{Error: message} }

// retrySeconds is d in whole seconds, rounded up: waiting that long is
// always enough.
func retrySeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// retryAfterOf is how long the client should wait before trying again, or
// 0: what the error says, or what a provider that asked us to wait said.
func retryAfterOf(err error, ae *apperr.Error) time.Duration {
	if ae.RetryAfter > 0 {
		return ae.RetryAfter
	}
	if me := (*model.Error)(nil); errors.As(err, &me) && me.RetryAfter > 0 && statusOf(ae.Code) == http.StatusServiceUnavailable {
		return me.RetryAfter
	}
	return 0
}

// clip shortens what a client sent for quoting in an error message: a
// message must not grow with the input.
func clip(s string) string {
	const most = 80
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
