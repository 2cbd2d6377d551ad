package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	_ "github.com/companionhq/companion/internal/testkit"
	"github.com/companionhq/companion/internal/web"
)

// get sends method path to h and answers the response and its body.
func get(t *testing.T, h http.Handler, method, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// assetLink is how the page links a file: by its fingerprinted URL.
var assetLink = regexp.MustCompile(`"/assets/([^"?]+)\?v=([0-9a-f]{16})"`)

func TestHandler(t *testing.T) {
	h := web.Handler()
	res, page := get(t, h, "GET", "/")
	if res.StatusCode != 200 {
		t.Fatalf("GET / = %d", res.StatusCode)
	}
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": web.ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-cache",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
	}
	for k, v := range want {
		if got := res.Header.Get(k); got != v {
			t.Errorf("GET /: %s = %q, want %q", k, got, v)
		}
	}
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(web.ContentSecurityPolicy, directive) {
			t.Errorf("the Content-Security-Policy lacks %s", directive)
		}
	}
	etag := res.Header.Get("ETag")
	if etag == "" {
		t.Fatal("GET /: no ETag")
	}
	if res, _ := get(t, h, "GET", "/", "If-None-Match", etag); res.StatusCode != http.StatusNotModified {
		t.Errorf("GET / with its ETag = %d, want 304", res.StatusCode)
	}

	links := assetLink.FindAllStringSubmatch(page, -1)
	types := map[string]string{"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8", "icon.svg": "image/svg+xml"}
	if len(links) != len(types) {
		t.Fatalf("the page links %d fingerprinted files, want %d: %q", len(links), len(types), links)
	}
	for _, l := range links {
		name, hash := l[1], l[2]
		res, body := get(t, h, "GET", "/assets/"+name+"?v="+hash)
		if res.StatusCode != 200 || body == "" {
			t.Errorf("GET /assets/%s = %d", name, res.StatusCode)
			continue
		}
		if got := res.Header.Get("Content-Type"); got != types[name] {
			t.Errorf("/assets/%s: Content-Type %q, want %q", name, got, types[name])
		}
		if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("/assets/%s by its fingerprint: Cache-Control %q", name, got)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("/assets/%s: security headers missing: %v", name, res.Header)
		}
		// Without the fingerprint, or with another, it is revalidated.
		for _, q := range []string{"", "?v=0000000000000000"} {
			if res, _ := get(t, h, "GET", "/assets/"+name+q); res.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("/assets/%s%s: Cache-Control %q, want no-cache", name, q, res.Header.Get("Cache-Control"))
			}
		}
	}

	if res, body := get(t, h, "HEAD", "/"); res.StatusCode != 200 || body != "" {
		t.Errorf("HEAD / = %d with %d bytes", res.StatusCode, len(body))
	}
	for _, c := range []struct {
		method, path string
		status       int
		error        string
	}{
		{"GET", "/assets/nothing.js", 404, `{"error":"no file /assets/nothing.js in the web page's assets"}`},
		{"GET", "/index.html", 404, `{"error":"no page at /index.html"}`},
		{"POST", "/", 405, `{"error":"method POST is not allowed: the page answers GET and HEAD"}`},
	} {
		res, body := get(t, h, c.method, c.path)
		if res.StatusCode != c.status || strings.TrimSpace(body) != c.error {
			t.Errorf("%s %s = %d %s, want %d %s", c.method, c.path, res.StatusCode, body, c.status, c.error)
		}
	}
}

// TestSelfContained checks what the Content-Security-Policy would refuse,
// and what the page must not do: inline script or style, event handler
// attributes, HTML parsed from strings, anything loaded from elsewhere.
func TestSelfContained(t *testing.T) {
	h := web.Handler()
	_, page := get(t, h, "GET", "/")
	files := map[string]string{"index.html": page}
	for _, l := range assetLink.FindAllStringSubmatch(page, -1) {
		_, body := get(t, h, "GET", "/assets/"+l[1])
		files[l[1]] = body
	}
	forbidden := map[string]*regexp.Regexp{
		"index.html": regexp.MustCompile(`\sstyle=|\son[a-z]+=|<style`),
		"app.js":     regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\('on`),
		"style.css":  regexp.MustCompile(`@import|url\(`),
	}
	// Every script of the page is a file of its own.
	for _, tag := range regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAllString(page, -1) {
		if !regexp.MustCompile(`^<script[^>]* src="/assets/[^"]+"[^>]*></script>$`).MatchString(tag) {
			t.Errorf("index.html has an inline script: %q", tag)
		}
	}
	if n, m := strings.Count(page, "<script"), strings.Count(page, "</script>"); n != m || n == 0 {
		t.Errorf("index.html has %d <script and %d </script>", n, m)
	}
	external := regexp.MustCompile(`(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name, body := range files {
		if re := forbidden[name]; re != nil {
			if m := re.FindString(body); m != "" {
				t.Errorf("%s has %q", name, m)
			}
		}
		clean := strings.ReplaceAll(body, `xmlns="http://www.w3.org/2000/svg"`, "")
		if m := external.FindString(clean); m != "" {
			t.Errorf("%s refers to something elsewhere: %q", name, m)
		}
	}
}
