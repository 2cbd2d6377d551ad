package model

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// Post sends a provider's streamed request: body as JSON to url, with
// apiKey as a bearer token when there is one, asking for server-sent
// events. It returns the response of a success, whose body the caller
// reads and closes. A request that cannot be sent is a transport error; a
// non-2xx answer is classified by StatusError, with the provider's own
// message (message reads it from the body) for the log.
func Post(ctx context.Context, client *http.Client, provider, url, apiKey string, body any, message func(body []byte) string) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{Kind: KindRejected, Provider: provider, Message: "the request could not be encoded", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, &Error{Kind: KindRejected, Provider: provider, Message: "the base URL is not valid", Err: err}
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	res, err := client.Do(req)
	if err != nil {
		return nil, TransportError(ctx, provider, err, false)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		detail, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		return nil, StatusError(provider, res.StatusCode, res.Header, Redact(message(detail), apiKey), time.Now())
	}
	return res, nil
}

// maxEvent bounds one event of a provider's stream: its events are a few
// hundred bytes.
const maxEvent = 1 << 20

// Events reads the server-sent events of a provider's stream from body and
// yields the data of each. An event without data (a keep-alive such as
// "event: ping") is none, as the specification says, and comments are not
// events: neither is yielded.
func Events(body io.Reader) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for ev, err := range sse.Read(body, &sse.ReadConfig{MaxEventSize: maxEvent}) {
			if err != nil {
				yield("", err)
				return
			}
			if ev.Data == "" {
				continue
			}
			if !yield(ev.Data, nil) {
				return
			}
		}
	}
}
