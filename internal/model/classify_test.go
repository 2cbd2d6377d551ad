package model_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/modeltest"
)

// get sends GET u with client and returns its error.
func get(t *testing.T, client *http.Client, u string) error {
	t.Helper()
	res, err := client.Get(u)
	if err == nil {
		res.Body.Close()
		t.Fatalf("GET %s succeeded", u)
	}
	return err
}

// TestTransportErrorMessages: what a client and the model see of a failure
// to reach a provider (model.Error.Message) names the cause, never the
// address; the error itself, for the log, keeps it.
func TestTransportErrorMessages(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	refused := get(t, http.DefaultClient, "http://127.0.0.1:1/v1/chat/completions")
	timedOut := get(t, &http.Client{Timeout: 50 * time.Millisecond}, hang.URL+"/v2/chat")
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}}
	tests := []struct {
		name      string
		err       error
		midStream bool
		kind      model.ErrorKind
		temporary bool
		message   string
	}{
		{"refused", refused, false, model.KindUnavailable, true, "the provider refused the connection"},
		{"client timeout", timedOut, false, model.KindTimeout, true, "the provider did not answer in time"},
		{"client timeout mid-answer", timedOut, true, model.KindTimeout, true, "the provider did not finish the answer in time"},
		{"host not found", dns, false, model.KindUnavailable, true, "the provider's host name could not be resolved"},
		{"reset before the answer", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false, model.KindUnavailable, true,
			"the connection to the provider closed before it answered"},
		{"cut mid-answer", io.ErrUnexpectedEOF, true, model.KindUpstream, true, "the connection to the provider broke off in the middle of the answer"},
		{"event too large", bufio.ErrTooLong, true, model.KindUpstream, false, "the provider sent a stream event larger than the limit"},
		{"anything else", errors.New(`Post "http://10.0.0.7:8080/v1": proxyconnect tcp: x`), false, model.KindUnavailable, true,
			"the provider could not be reached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var me *model.Error
			if err := model.TransportError(context.Background(), "p", tc.err, tc.midStream); !errors.As(err, &me) {
				t.Fatalf("%v (%T), want a *model.Error", err, err)
			}
			if me.Kind != tc.kind || me.Temporary != tc.temporary || me.Message != tc.message {
				t.Errorf("kind %v temporary %v %q, want %v %v %q", me.Kind, me.Temporary, me.Message, tc.kind, tc.temporary, tc.message)
			}
			if err := modeltest.CheckMessage(me.Message); err != nil {
				t.Error(err)
			}
			if !errors.Is(me, tc.err) {
				t.Errorf("the cause %v is lost", tc.err)
			}
		})
	}
	if !strings.Contains(refused.Error(), "127.0.0.1:1") || !errors.Is(refused, syscall.ECONNREFUSED) {
		t.Fatalf("a refused connection is %v", refused)
	}
	// The caller's cancellation is not the provider's failure.
	if err := model.TransportError(context.Background(), "p", context.Canceled, false); err != context.Canceled {
		t.Errorf("cancellation: %v", err)
	}
	// Nor is the end of the caller's own deadline, whatever the client
	// made of it.
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if err := model.TransportError(ctx, "p", errors.New("read tcp: i/o timeout"), true); err != context.DeadlineExceeded {
		t.Errorf("the caller's deadline: %v", err)
	}
}

// TestStatusErrorMessages: the provider's error body, however long and
// whatever it echoes, stays out of the message; the cause keeps the first
// 300 bytes of it on one line.
func TestStatusErrorMessages(t *testing.T) {
	body := "upstream http://10.0.0.7:8080/v1/chat failed:\ndial tcp 10.0.0.7:8080: connect: connection refused " + strings.Repeat("x", 1000)
	for _, status := range []int{400, 401, 404, 429, 500, 502, 503, 504} {
		e := model.StatusError("p", status, nil, body, time.Now())
		if err := modeltest.CheckMessage(e.Message); err != nil {
			t.Errorf("%d: %v", status, err)
		}
		if !strings.Contains(e.Message, "HTTP ") {
			t.Errorf("%d: message %q lacks the status", status, e.Message)
		}
		cause := e.Err.Error()
		if !strings.Contains(cause, "connect: connection refused") || strings.Contains(cause, "\n") || len(cause) > 350 {
			t.Errorf("%d: cause %q", status, cause)
		}
	}
}
