// Package replay records the HTTP exchanges of a model provider to cassettes
// and replays them without a network, so that a conversation held once with
// a real provider can be played again, deterministically, in tests, golden
// transcripts and load tests.
//
// A cassette is a go-vcr cassette (gopkg.in/dnaeon/go-vcr.v4, format
// version 2): a YAML file of interactions, each a request and its response,
// the body whole. This package adds one key to each interaction, companion,
// which go-vcr ignores: who answered (provider, model, base URL) and how the
// body arrived (the size and arrival time of every read, and how the stream
// ended), so that a replay delivers the stream byte for byte with its timing.
// It reads and writes the format itself: go-vcr's packages link the testing
// package into whatever imports them, the service included.
//
// Each cassette holds the exchanges of one normalised request (method, path
// and JSON body with keys sorted and spaces dropped) and is named after it:
// <provider>-<hash>.yaml. A request that was retried has several
// interactions in its cassette, replayed in the order they were recorded.
package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"
)

// FormatVersion is the go-vcr cassette format version of the files this
// package reads and writes.
const FormatVersion = 2

// Request is a recorded request, as go-vcr's cassette.Request writes it: the
// fields, their order and their keys are go-vcr's, so that the files stay
// go-vcr's and a cassette.Request converts to a Request.
type Request struct {
	Proto            string      `yaml:"proto"`
	ProtoMajor       int         `yaml:"proto_major"`
	ProtoMinor       int         `yaml:"proto_minor"`
	ContentLength    int64       `yaml:"content_length"`
	TransferEncoding []string    `yaml:"transfer_encoding,omitempty"`
	Trailer          http.Header `yaml:"trailer,omitempty"`
	Host             string      `yaml:"host"`
	RemoteAddr       string      `yaml:"remote_addr,omitempty"`
	RequestURI       string      `yaml:"request_uri,omitempty"`
	Body             string      `yaml:"body,omitempty"`
	Form             url.Values  `yaml:"form,omitempty"`
	Headers          http.Header `yaml:"headers,omitempty"`
	URL              string      `yaml:"url"`
	Method           string      `yaml:"method"`
}

// Response is a recorded response, as go-vcr's cassette.Response writes it.
type Response struct {
	Proto            string        `yaml:"proto"`
	ProtoMajor       int           `yaml:"proto_major"`
	ProtoMinor       int           `yaml:"proto_minor"`
	TransferEncoding []string      `yaml:"transfer_encoding,omitempty"`
	Trailer          http.Header   `yaml:"trailer,omitempty"`
	ContentLength    int64         `yaml:"content_length"`
	Uncompressed     bool          `yaml:"uncompressed,omitempty"`
	Body             string        `yaml:"body"`
	Headers          http.Header   `yaml:"headers"`
	Status           string        `yaml:"status"`
	Code             int           `yaml:"code"`
	Duration         time.Duration `yaml:"duration"`
}

// Source is who answered the recorded requests.
type Source struct {
	// Provider and Model are the model's Provider() and ID().
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	// BaseURL is the provider's base URL as configured, a password in it
	// hidden.
	BaseURL string `yaml:"base_url"`
}

func (s Source) String() string { return s.Provider + "/" + s.Model }

// How a recorded stream ended.
const (
	// EndEOF: the provider finished the body.
	EndEOF = "eof"
	// EndBroken: reading the body failed (the connection was cut); Error
	// holds the failure.
	EndBroken = "broken"
	// EndClient: the client stopped reading before the body ended (it had
	// what it wanted, it gave up waiting, or it went away). A replay waits
	// after the last chunk until the client leaves.
	EndClient = "client"
)

// Chunk is one read of a response body: its size and when it arrived,
// counted from the arrival of the response headers.
type Chunk struct {
	At    time.Duration
	Bytes int
}

// MarshalYAML writes a chunk on one line: {at: 1.5ms, bytes: 96}.
func (c Chunk) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	n.Content = []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "at"}, {Kind: yaml.ScalarNode, Value: c.At.String()},
		{Kind: yaml.ScalarNode, Value: "bytes"}, {Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(c.Bytes)},
	}
	return n, nil
}

// UnmarshalYAML reads what MarshalYAML writes.
func (c *Chunk) UnmarshalYAML(n *yaml.Node) error {
	var v struct {
		At    string `yaml:"at"`
		Bytes int    `yaml:"bytes"`
	}
	if err := n.Decode(&v); err != nil {
		return err
	}
	at, err := time.ParseDuration(v.At)
	if err != nil {
		return fmt.Errorf("chunk time %q: %w", v.At, err)
	}
	if at < 0 || v.Bytes < 0 {
		return fmt.Errorf("chunk {at: %s, bytes: %d} is negative", v.At, v.Bytes)
	}
	c.At, c.Bytes = at, v.Bytes
	return nil
}

// Extension is what a cassette adds to a go-vcr interaction, under the key
// companion.
type Extension struct {
	Source `yaml:",inline"`
	// Chunks are the reads of the response body, in order; their sizes add
	// up to the body's length.
	Chunks []Chunk `yaml:"chunks"`
	// End is EndEOF, EndBroken or EndClient.
	End string `yaml:"end"`
	// Error is the failure that broke the stream (EndBroken).
	Error string `yaml:"error,omitempty"`
}

// Interaction is one recorded exchange as a cassette file holds it: go-vcr's
// interaction (its id, request and response) and the extension.
type Interaction struct {
	// ID counts the interactions of a cassette from 0.
	ID        int       `yaml:"id"`
	Request   Request   `yaml:"request"`
	Response  Response  `yaml:"response"`
	Companion Extension `yaml:"companion"`
}

// file is a cassette file: go-vcr's cassette with the extension.
type file struct {
	Version      int            `yaml:"version"`
	Interactions []*Interaction `yaml:"interactions"`
}

// ReadCassette reads the cassette file at path.
func ReadCassette(path string) ([]*Interaction, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", filepath.Base(path), err)
	}
	if f.Version != FormatVersion {
		return nil, fmt.Errorf("cassette %s: format version %d, want %d", filepath.Base(path), f.Version, FormatVersion)
	}
	for k, i := range f.Interactions {
		n := 0
		for _, c := range i.Companion.Chunks {
			n += c.Bytes
		}
		if n != len(i.Response.Body) {
			return nil, fmt.Errorf("cassette %s, interaction %d: the chunks add up to %d bytes, the body has %d", filepath.Base(path), k, n, len(i.Response.Body))
		}
		switch i.Companion.End {
		case EndEOF, EndBroken, EndClient:
		default:
			return nil, fmt.Errorf("cassette %s, interaction %d: end %q is not eof, broken or client", filepath.Base(path), k, i.Companion.End)
		}
	}
	return f.Interactions, nil
}

// marshal writes interactions as a cassette file, as go-vcr saves one: a
// YAML document marker, then the document.
func marshal(interactions []*Interaction) ([]byte, error) {
	b, err := yaml.Marshal(file{Version: FormatVersion, Interactions: interactions})
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), b...), nil
}

// writeFile writes a cassette file whole: a reader never sees half a file.
func writeFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), ".cassette-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// Request headers that carry credentials; their values are replaced.
var secretRequestHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "Cookie",
	"Openai-Organization", "Openai-Project",
}

// Response headers that identify the account or a session.
var secretResponseHeaders = []string{"Set-Cookie", "Openai-Organization", "Openai-Project"}

// Scrubbed is what a scrubbed value reads.
const Scrubbed = "[scrubbed]"

// Scrub returns a function that removes credentials from an interaction:
// the values of the headers that carry keys (Authorization, X-Api-Key,
// Api-Key, cookies, OpenAI's organization and project) become [scrubbed],
// and so does every occurrence of each secret (of at least 4 bytes) in the
// URLs, headers and bodies of its request and response.
func Scrub(secrets ...string) func(*Interaction) {
	var keep []string
	for _, s := range secrets {
		if len(s) >= 4 {
			keep = append(keep, s)
		}
	}
	replace := func(s string) string {
		for _, k := range keep {
			s = strings.ReplaceAll(s, k, Scrubbed)
		}
		return s
	}
	headers := func(h http.Header, secret []string) {
		for k, vs := range h {
			for n, v := range vs {
				vs[n] = replace(v)
			}
			for _, name := range secret {
				if http.CanonicalHeaderKey(k) == name {
					for n := range vs {
						vs[n] = Scrubbed
					}
				}
			}
		}
	}
	return func(i *Interaction) {
		i.Request.URL = replace(i.Request.URL)
		i.Request.RequestURI = replace(i.Request.RequestURI)
		i.Request.Body = replace(i.Request.Body)
		for k, vs := range i.Request.Form {
			for n, v := range vs {
				vs[n] = replace(v)
			}
			i.Request.Form[k] = vs
		}
		headers(i.Request.Headers, secretRequestHeaders)
		headers(i.Response.Headers, secretResponseHeaders)
		i.Response.Body = replace(i.Response.Body)
	}
}

// scrubURL hides the password of a URL and every secret in it.
func scrubURL(s string, secrets []string) string {
	if u, err := url.Parse(s); err == nil {
		s = u.Redacted()
	}
	for _, k := range secrets {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, Scrubbed)
		}
	}
	return s
}

// normal is a request in the form that matching compares.
type normal struct {
	method, path string
	// body is the canonical JSON of the body, or the body itself when it
	// is not JSON.
	body string
	// tree is the decoded body, nil when it is not JSON.
	tree any
}

// normalise reads a request as matching compares it: the method, the URL's
// path and query (the host is not compared: replays run wherever the
// recording was made), and the body as canonical JSON (keys sorted, no
// spaces, numbers as written). No field of the providers' requests varies
// from one run to the next, so nothing is dropped.
func normalise(method, rawURL string, body []byte) normal {
	n := normal{method: strings.ToUpper(method), body: string(body)}
	if u, err := url.Parse(rawURL); err == nil {
		n.path = u.EscapedPath()
		if q := u.Query(); len(q) > 0 {
			n.path += "?" + q.Encode()
		}
	} else {
		n.path = rawURL
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if d.Decode(&v) == nil && !d.More() {
		if b, err := json.Marshal(v); err == nil {
			n.body, n.tree = string(b), v
		}
	}
	return n
}

// key is the cassette key of a normalised request of provider.
func (n normal) key(provider string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s %s\n%s", provider, n.method, n.path, n.body)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// same tells whether two normalised requests match.
func (n normal) same(o normal) bool {
	return n.method == o.method && n.path == o.path && n.body == o.body
}

// CassetteName is the file name of the cassette of a request of provider.
func CassetteName(provider, method, rawURL string, body []byte) string {
	return provider + "-" + normalise(method, rawURL, body).key(provider) + ".yaml"
}

// Matcher compares a request with a recorded one as the replayer does:
// method, path and query, and the body as canonical JSON. Headers and the
// host are not compared. With go-vcr's own recorder, it matches a
// cassette.Request i as Matcher(r, replay.Request(i)).
func Matcher(r *http.Request, i Request) bool {
	body, err := ReadBody(r)
	if err != nil {
		return false
	}
	return normalise(r.Method, r.URL.String(), body).same(normalise(i.Method, i.URL, []byte(i.Body)))
}

// ReadBody reads r's body and leaves r able to send it again: what a
// transport that looks at requests before sending them needs (the
// recorder, the replayer, and the fakes' watch of a transport).
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

// diff is one place where two requests differ, and how much.
type diff struct {
	// at is "the method", "the path", "the body", or a JSON path in the
	// body such as messages[2].content.
	at string
	// cost counts the bytes that differ there.
	cost int
}

// difference lists where two normalised requests differ, in order.
func difference(a, b normal) []diff {
	var out []diff
	if a.method != b.method {
		out = append(out, diff{"the method", 1000})
	}
	if a.path != b.path {
		out = append(out, diff{"the path", 1000})
	}
	switch {
	case a.body == b.body:
	case a.tree == nil || b.tree == nil:
		out = append(out, diff{"the body", changed(a.body, b.body)})
	default:
		diffJSON(a.tree, b.tree, "", &out)
	}
	return out
}

// changed counts the bytes of a and b outside their common prefix and
// suffix.
func changed(a, b string) int {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return len(a) + len(b) - 2*(p+s)
}

// size is the length of v as JSON.
func size(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// diffJSON appends the places where two decoded JSON values differ.
func diffJSON(a, b any, path string, out *[]diff) {
	at := func(p string) string {
		if p == "" {
			return "the body"
		}
		return p
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, diff{at(path), size(a) + size(b)})
			return
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			xv, xok := x[k]
			yv, yok := y[k]
			if xok != yok {
				*out = append(*out, diff{p, size(xv) + size(yv)})
				continue
			}
			diffJSON(xv, yv, p, out)
		}
	case []any:
		y, ok := b.([]any)
		if !ok {
			*out = append(*out, diff{at(path), size(a) + size(b)})
			return
		}
		for i := 0; i < max(len(x), len(y)); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(x):
				*out = append(*out, diff{p, size(y[i])})
			case i >= len(y):
				*out = append(*out, diff{p, size(x[i])})
			default:
				diffJSON(x[i], y[i], p, out)
			}
		}
	default:
		if xs, ok := a.(string); ok {
			if ys, ok := b.(string); ok {
				if xs != ys {
					*out = append(*out, diff{at(path), changed(xs, ys)})
				}
				return
			}
		}
		if fmt.Sprintf("%T %v", a, a) != fmt.Sprintf("%T %v", b, b) {
			*out = append(*out, diff{at(path), size(a) + size(b)})
		}
	}
}
