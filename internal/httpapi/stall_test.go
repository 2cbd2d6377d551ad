package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/httpapi"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/turn"
)

// longModel answers every request with n tokens of text.
type longModel struct{ n int }

func (longModel) Provider() string { return "fake" }
func (longModel) ID() string       { return "long" }

func (m longModel) Stream(context.Context, model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		for range m.n {
			if !yield(model.Part{Kind: model.PartText, Text: "word "}, nil) {
				return
			}
		}
		yield(model.Part{Kind: model.PartFinish, Finish: &model.Finish{Reason: model.FinishStop}}, nil)
	}
}

// TestStalledReaderLetsGo: a client that opens a stream and never reads it
// holds its slot among -max-streams only until -stream-stall-timeout has
// passed without it taking any bytes: the stream then ends as a broken
// one, its run's reply is stored all the same, and the next stream is
// served. Before, the slot stayed taken for as long as the client kept its
// socket open. On both stores.
func TestStalledReaderLetsGo(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		store, err := app.OpenStore(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		// A reply of 30,000 tokens, some three megabytes of events: far
		// more than the sockets hold once the client's receive buffer is
		// small.
		ag, err := agent.New(agent.Config{Model: longModel{n: 30000}})
		if err != nil {
			t.Fatal(err)
		}
		turns, err := turn.New(turn.Config{Store: store, Agent: ag, Window: turn.DefaultWindow, LockWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		limits := httpapi.DefaultLimits()
		limits.MaxStreams = 1
		limits.StreamStallTimeout = 300 * time.Millisecond
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Runner: turns, Threads: turns.Threads(), Limits: limits}))
		t.Cleanup(srv.Close)

		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			return errors.Join(err, serr)
		}}
		conn, err := d.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body := `{"threadId":"stall","resourceId":"r","messages":[{"role":"user","content":"Tell me everything."}]}`
		if _, err := fmt.Fprintf(conn, "POST /api/agents/companionAgent/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
		// The client reads nothing from here on. Its run ends, and stores
		// the reply, while its stream is stuck behind the unread bytes.
		deadline := time.Now().Add(20 * time.Second)
		for {
			msgs, total, err := store.Messages(context.Background(), "stall", 0, 10)
			if err == nil && total == 2 && !msgs[0].Pending {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the stalled stream's reply was not stored: %d messages (%v)", total, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The only slot frees within the stall timeout (and a little).
		deadline = time.Now().Add(5 * time.Second)
		for i := 0; ; i++ {
			res, b := post(t, srv.URL+"/api/agents/companionAgent/stream", fmt.Sprintf(`{"threadId":"next-%d","resourceId":"r","messages":[{"role":"user","content":"Hi"}]}`, i))
			if res.StatusCode == 200 && strings.Contains(b, "run-finish") {
				break
			}
			if res.StatusCode != 503 || time.Now().After(deadline) {
				t.Fatalf("the next stream: %d %.300s", res.StatusCode, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
