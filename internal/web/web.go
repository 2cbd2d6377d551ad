// Package web serves the web chat page: plain HTML, CSS and JavaScript,
// embedded in the binary, that talks to the service's own API (the threads
// API, the stream endpoint in the seed dialect, resume and cancel). It loads
// nothing from anywhere else: no CDN, font or script.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with the page and its files: everything
// from this origin only, no inline script or style, no plugins, no framing,
// and DOM writes of HTML refused (the page builds its nodes one by one).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'"

// immutable is the Cache-Control of a file asked for by its fingerprint
// (?v=<hash>, as the page links them): that URL never changes content.
const immutable = "public, max-age=31536000, immutable"

// file is one response body with its headers.
type file struct {
	body        []byte
	contentType string
	etag        string
	// hash is the fingerprint the page links the file with.
	hash string
}

func newFile(name string, body []byte) file {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])[:16]
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return file{body: body, contentType: ctype, etag: `"` + hash + `"`, hash: hash}
}

// handler serves index.html at / and static/assets/* at /assets/*.
type handler struct {
	index  file
	assets map[string]file
}

// Handler serves the page at / and its files at /assets/... (GET and HEAD),
// with a strict Content-Security-Policy, nosniff, and caching headers: the
// page is revalidated on every load (ETag), and the files it links carry
// their content hash in the URL and are cached for good.
func Handler() http.Handler {
	h, err := load(static)
	if err != nil {
		// The files are compiled in: only a broken build gets here, and
		// TestHandler catches it.
		panic(err)
	}
	return h
}

// load reads the page and its assets from fsys, and links each asset from
// the page by its fingerprinted URL.
func load(fsys fs.FS) (*handler, error) {
	h := &handler{assets: map[string]file{}}
	entries, err := fs.ReadDir(fsys, "static/assets")
	if err != nil {
		return nil, fmt.Errorf("the web assets: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := fs.ReadFile(fsys, "static/assets/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("the web assets: %w", err)
		}
		h.assets[e.Name()] = newFile(e.Name(), body)
	}
	index, err := fs.ReadFile(fsys, "static/index.html")
	if err != nil {
		return nil, fmt.Errorf("the web page: %w", err)
	}
	for name, f := range h.assets {
		index = bytes.ReplaceAll(index, []byte(`"/assets/`+name+`"`), []byte(`"/assets/`+name+`?v=`+f.hash+`"`))
	}
	h.index = newFile("index.html", index)
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		errorJSON(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed: the page answers GET and HEAD")
		return
	}
	var (
		f     file
		cache = "no-cache"
	)
	switch name, isAsset := strings.CutPrefix(r.URL.Path, "/assets/"); {
	case r.URL.Path == "/":
		f = h.index
	case isAsset:
		a, ok := h.assets[name]
		if !ok {
			errorJSON(w, http.StatusNotFound, "no file "+r.URL.Path+" in the web page's assets")
			return
		}
		f = a
		if r.URL.Query().Get("v") == a.hash {
			cache = immutable
		}
	default:
		errorJSON(w, http.StatusNotFound, "no page at "+r.URL.Path)
		return
	}
	hdr := w.Header()
	securityHeaders(hdr)
	hdr.Set("Content-Type", f.contentType)
	hdr.Set("Cache-Control", cache)
	hdr.Set("ETag", f.etag)
	// ServeContent answers If-None-Match with 304, HEAD and ranges.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

// securityHeaders are sent on every response of the page.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// errorJSON answers status with the API's error body, {"error": msg}.
func errorJSON(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]string{"error": msg})
	hdr := w.Header()
	securityHeaders(hdr)
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
