package model

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StatusError classifies a provider's non-2xx answer. The message names the
// status and what it means, never the body: bodies may echo what was sent.
// detail (the provider's own error text, cut short) only goes into Err, for
// the log.
func StatusError(provider string, status int, header http.Header, detail string, now time.Time) *Error {
	e := &Error{Provider: provider, Status: status, RetryAfter: RetryAfter(header, now)}
	code := fmt.Sprintf("HTTP %d", status)
	switch {
	case status == http.StatusTooManyRequests:
		e.Kind, e.Temporary = KindUnavailable, true
		e.Message = "the provider is rate limiting requests (" + code + ")"
	case status == http.StatusServiceUnavailable || status == 529:
		e.Kind, e.Temporary = KindUnavailable, true
		e.Message = "the provider is overloaded or unavailable (" + code + ")"
	case status == http.StatusGatewayTimeout || status == http.StatusRequestTimeout:
		e.Kind, e.Temporary = KindTimeout, true
		e.Message = "the provider timed out (" + code + ")"
	case status >= 500:
		e.Kind, e.Temporary = KindUpstream, true
		e.Message = "the provider failed (" + code + ")"
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == 498:
		e.Kind = KindRejected
		e.Message = "the provider refused the API key (" + code + "): check the key"
	case status == http.StatusNotFound:
		e.Kind = KindRejected
		e.Message = "the provider does not know the model or the address (" + code + "): check the model name and the base URL"
	default:
		e.Kind = KindRejected
		e.Message = "the provider rejected the request (" + code + ")"
	}
	if detail = OneLine(detail, 300); detail != "" {
		e.Err = errors.New("the provider said: " + detail)
	}
	return e
}

// TransportError classifies a failure to reach a provider or to read its
// answer, for a call made with ctx. When ctx has ended, its error is
// returned: a cancellation or a deadline of the caller's own, not the
// provider's fault. So is a cancellation. Another deadline is the HTTP
// client's own timeout, and the provider's. midStream tells whether the
// answer had begun. The message is fit for a client: the cause, which names
// the address, stays in Err.
func TransportError(ctx context.Context, provider string, err error, midStream bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var me *Error
	if errors.As(err, &me) {
		return err
	}
	e := &Error{Kind: KindUnavailable, Provider: provider, Temporary: true, Err: err}
	var dns *net.DNSError
	var nerr net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout())
	switch {
	case errors.Is(err, bufio.ErrTooLong):
		e.Kind, e.Temporary, e.Message = KindUpstream, false, "the provider sent a stream event larger than the limit"
	case midStream && timeout:
		e.Kind, e.Message = KindTimeout, "the provider did not finish the answer in time"
	case midStream && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		e.Kind, e.Message = KindUpstream, "the connection to the provider broke off in the middle of the answer"
	case midStream:
		e.Kind, e.Message = KindUpstream, "reading the provider's answer failed"
	case timeout:
		e.Kind, e.Message = KindTimeout, "the provider did not answer in time"
	case errors.As(err, &dns):
		e.Message = "the provider's host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Message = "the provider refused the connection"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e.Message = "the connection to the provider closed before it answered"
	default:
		e.Message = "the provider could not be reached"
	}
	return e
}

// RetryAfter reads how long a provider asks us to wait: Retry-After in
// seconds or as an HTTP date, or the retry-after-ms some providers add.
// It is 0 when there is none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Redact replaces every occurrence of each secret in s.
func Redact(s string, secrets ...string) string {
	for _, k := range secrets {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// OpenAIErrorMessage is the message of an OpenAI-style error body,
// {"error": {"message": ...}}, or the body itself when it has none: what
// the OpenAI-compatible provider, embedder and moderation quote.
func OpenAIErrorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return string(body)
}

// OneLine squeezes s onto one line of at most n bytes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
