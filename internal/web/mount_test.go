package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
)

// TestMounted checks the page as the service serves it: GET / and
// /assets/ are the page's, everything else is the API's as before.
func TestMounted(t *testing.T) {
	svc := apptest.Start(t, nil)
	check := func(method, path string, status int, contains string) {
		t.Helper()
		req, err := http.NewRequest(method, svc.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != status || !strings.Contains(string(body), contains) {
			t.Errorf("%s %s = %d %.80q, want %d with %q", method, path, res.StatusCode, body, status, contains)
		}
	}
	check("GET", "/", 200, "<title>Companion</title>")
	check("GET", "/assets/app.js", 200, "companionAgent")
	check("GET", "/assets/nothing", 404, `"error"`)
	check("GET", "/health", 200, `{"status":"ok"}`)
	check("GET", "/ready", 200, `{"status":"ok"}`)
	check("GET", "/api/nothing", 404, `{"error":"no route for GET /api/nothing"}`)
	check("GET", "/nothing", 404, `{"error":"no route for GET /nothing"}`)
	check("POST", "/", 404, `{"error":"no route for POST /"}`)
	check("GET", "/api/memory/threads?resourceId=u1", 200, `"threads":[]`)

	off := apptest.Start(t, func(c *app.Config) { c.Server.WebUI = false })
	svc = off
	check("GET", "/", 404, `{"error":"no route for GET /"}`)
	check("GET", "/assets/app.js", 404, `{"error":"no route for GET /assets/app.js"}`)
	check("GET", "/health", 200, `{"status":"ok"}`)
}
