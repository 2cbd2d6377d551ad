package app_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

// TestModelConnectionsAreReused: rounds of 16 concurrent runs reuse the
// connections to the provider that the first round opened, instead of
// opening new ones (Go's default transport keeps two idle per host).
func TestModelConnectionsAreReused(t *testing.T) {
	var opened atomic.Int64
	up := httptest.NewUnstartedServer(fakeopenai.New(upstream.Options{}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	svc := apptest.Start(t, func(c *app.Config) {
		c.Model.Model, c.Model.BaseURL, c.Model.OpenAIAPIKey = "reuse", up.URL+"/v1", "key"
		// Titles ask the model on the side, when each run has ended, and
		// would hold connections of their own: this counts the runs'.
		c.Memory.Titles = false
	})
	const conc, rounds = 16, 4
	for r := range rounds {
		var wg sync.WaitGroup
		for i := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, b := svc.Post(t, "/api/agents/companionAgent/generate",
					fmt.Sprintf(`{"threadId":"reuse-%d-%d","messages":[{"role":"user","content":"Hi"}]}`, r, i))
				if res.StatusCode != 200 {
					t.Errorf("%d %s", res.StatusCode, b)
				}
			}()
		}
		wg.Wait()
	}
	// The first round opens at most one per run; later rounds find them idle.
	if n := opened.Load(); n > conc+2 {
		t.Fatalf("%d runs opened %d connections to the provider, want at most %d", conc*rounds, n, conc+2)
	}
}
