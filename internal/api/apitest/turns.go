package apitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/companionhq/companion/internal/api"
)

// TurnsAtOnce sends n one-message turns on thread, as resource, all at
// once: turn i to bases[i%len(bases)] (the URL of a service), by generate
// when i is even and by stream when it is odd. It fails the test for each
// turn not answered whole (a status other than 200, or an error event).
// CheckTurnsInOrder then checks what the thread kept.
func TurnsAtOnce(t *testing.T, n int, thread, resource string, bases ...string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/api/agents/companionAgent/generate"
			if i%2 == 1 {
				path = "/api/agents/companionAgent/stream"
			}
			body, _ := json.Marshal(api.GenerateRequest{ThreadID: thread, ResourceID: resource,
				Messages: []api.Message{{Role: "user", Content: fmt.Sprintf("Message %d of %d.", i, n)}}})
			res, err := http.Post(bases[i%len(bases)]+path, "application/json", strings.NewReader(string(body)))
			if err != nil {
				errs <- err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || strings.Contains(string(b), `"type":"error"`) {
				errs <- fmt.Sprintf("request %d: %d %s", i, res.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// CheckTurnsInOrder checks the messages a thread kept of n turns sent at
// once (TurnsAtOnce) to the fake model: every message stored once, each
// reply right after the message it answers, and each turn seeing the one
// before it. Turns that interleaved would break one of these.
func CheckTurnsInOrder(t *testing.T, stored []api.UIMessage, n int) {
	t.Helper()
	if len(stored) != 2*n {
		t.Fatalf("the thread holds %d messages, want %d", len(stored), 2*n)
	}
	seen := map[string]bool{}
	for i := 0; i < len(stored); i += 2 {
		u, a := stored[i], stored[i+1]
		if u.Role != "user" || a.Role != "assistant" || seen[PartsText(u)] {
			t.Fatalf("messages %d and %d: %s %q, %s", i, i+1, u.Role, PartsText(u), a.Role)
		}
		seen[PartsText(u)] = true
		if !strings.Contains(PartsText(a), `You asked: "`+PartsText(u)+`"`) {
			t.Fatalf("reply %d does not answer the message before it (%q): %s", i+1, PartsText(u), PartsText(a))
		}
		if i > 0 && !strings.Contains(PartsText(a), `Earlier you mentioned: "`+PartsText(stored[i-2])+`"`) {
			t.Fatalf("reply %d does not see the turn before it: %s", i+1, PartsText(a))
		}
	}
}

// PartsText is the text of a stored message's parts.
func PartsText(m api.UIMessage) string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
