package httpapi

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/apperr"
)

// statusWriter records the status and size of a response. It passes
// flushes through (streams need them) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observeRequests logs one line per request, reports it to the Observer by
// route pattern and status, and names the server span after the route.
//
// The middleware here keep their work in methods of their own (served,
// authenticated, ...) so that their frames, which stay on the connection's
// stack for the whole request, are a few words: a stream's connection
// goroutine then fits in the 8 KiB a goroutine starts with instead of
// growing to 16 KiB (docs/performance.md).
func (s *Server) observeRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.served(r, sw, start)
	})
}

// served observes the request r, answered through sw, that began at start.
func (s *Server) served(r *http.Request, sw *statusWriter, start time.Time) {
	elapsed := time.Since(start)
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	route := "unmatched"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
		// HTTP semantic conventions: "{method} {http.route}".
		span := trace.SpanFromContext(r.Context())
		span.SetName(spanMethod(r.Method) + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	s.obs.RequestServed(r.Method, route, sw.status, elapsed)
	level := slog.LevelInfo
	if r.URL.Path == metricsPath {
		level = slog.LevelDebug // a scrape every few seconds would drown the rest
	}
	s.log.LogAttrs(r.Context(), level, "request",
		slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
		slog.Int("status", sw.status), slog.Int64("bytes", sw.bytes), slog.Duration("duration", elapsed))
}

// spanMethod is the method as span names give it: "HTTP" for one that is
// not standard, so that names stay a bounded set.
func spanMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "HTTP"
}

// requireJSON refuses a request body that is not declared JSON with 415.
// A browser may send text/plain, form-encoded or multipart bodies to any
// site without asking first; insisting on application/json makes every
// cross-site write go through a CORS preflight, which only the allowed
// origins pass.
func (s *Server) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := jsonContentType(r.Header.Values("Content-Type")); err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireJSONOrText is requireJSON for PATCH, which also takes a JSON body
// declared text/plain: Mastra's client sends its thread updates so. A
// browser preflights every cross-site PATCH whatever its content type, so
// this opens nothing to other sites.
func (s *Server) requireJSONOrText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vs := r.Header.Values("Content-Type")
		if len(vs) == 1 {
			if mt, params, err := mime.ParseMediaType(vs[0]); err == nil && mt == "text/plain" {
				if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
					next.ServeHTTP(w, r)
					return
				}
			}
		}
		if err := jsonContentType(vs); err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func jsonContentType(values []string) error {
	const want = `Content-Type must be application/json`
	switch len(values) {
	case 0:
		return apperr.New(apperr.UnsupportedMedia, "%s: the request has none", want)
	case 1:
	default:
		return apperr.New(apperr.UnsupportedMedia, "%s, given once", want)
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil || mt != "application/json" {
		return apperr.New(apperr.UnsupportedMedia, "%s, not %q", want, clip(values[0]))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return apperr.New(apperr.UnsupportedMedia, "%s with charset utf-8 (or none), not %q", want, clip(cs))
	}
	return nil
}

// recoverPanics turns a panic before the response started into a 500.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.logPanic(r, p)
			s.writeError(w, r, apperr.Wrap(apperr.Internal, fmt.Errorf("panic: %v", p), "internal server error: the details are in the server log"))
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) logPanic(r *http.Request, p any) {
	s.log.LogAttrs(r.Context(), slog.LevelError, "panic", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
}

func levelOf(err error) slog.Level {
	if apperr.CodeOf(err) != apperr.Internal {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func errAttr(err error) slog.Attr { return slog.String("error", err.Error()) }
