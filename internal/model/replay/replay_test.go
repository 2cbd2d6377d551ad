package replay_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"

	fakecohere "github.com/companionhq/companion/fakes/cohere"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/replay"
	_ "github.com/companionhq/companion/internal/testkit"
)

const key = "co-test-key-0123456789abcdef"

var source = replay.Source{Provider: "cohere", Model: "command-a-03-2025"}

func chat(question string) string {
	return `{"model":"command-a-03-2025","stream":true,"messages":[{"role":"system","content":"You are companionAgent in friend mode."},` +
		`{"role":"user","content":"` + question + `"}],"tools":[{"type":"function","function":{"name":"weatherTool","description":"Get current weather for a location","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}]}`
}

// read is one read of a body: its bytes and when they came, counted from
// the response headers.
type read struct {
	data []byte
	at   time.Duration
}

// exchange sends body to url/v2/chat through rt and reads the answer a read
// at a time.
func exchange(t *testing.T, ctx context.Context, rt http.RoundTripper, url, body string) (*http.Response, []read, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v2/chat", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	start := time.Now()
	var reads []read
	buf := make([]byte, 64<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			reads = append(reads, read{data: append([]byte(nil), buf[:n]...), at: time.Since(start)})
		}
		if err == io.EOF {
			return res, reads, nil
		}
		if err != nil {
			return res, reads, err
		}
	}
}

func joined(rs []read) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		b.Write(r.data)
	}
	return b.Bytes()
}

// fake starts a fake Cohere with opts.
func fake(t *testing.T, opts upstream.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(fakecohere.New(opts))
	t.Cleanup(srv.Close)
	return srv
}

func newRecorder(t *testing.T, dir string) *replay.Recorder {
	t.Helper()
	rec, err := replay.NewRecorder(dir, source, http.DefaultTransport.(*http.Transport).Clone(), key)
	if err != nil {
		t.Fatal(err)
	}
	rec.OnError = func(err error) { t.Errorf("recording: %v", err) }
	return rec
}

func open(t *testing.T, dir string, fast bool) *replay.Replayer {
	t.Helper()
	r, err := replay.Open(dir, replay.Options{Fast: fast})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReplayByteForByte: a stream recorded from the fake replays with the
// fake stopped, byte for byte, in the same reads at (about) the same times;
// fast, without the waits.
func TestReplayByteForByte(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{FirstTokenDelay: 60 * time.Millisecond, TokenDelay: 15 * time.Millisecond})
	res, recorded, err := exchange(t, context.Background(), newRecorder(t, dir), srv.URL, chat("What's the weather in Berlin?"))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("recording: %v", err)
	}
	srv.Close()

	r := open(t, dir, false)
	if s := r.Sources(); len(s) != 1 || s[0].Provider != "cohere" || s[0].Model != "command-a-03-2025" {
		t.Fatalf("sources %+v", s)
	}
	res, replayed, err := exchange(t, context.Background(), r, srv.URL, chat("What's the weather in Berlin?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !bytes.Equal(joined(recorded), joined(replayed)) {
		t.Fatalf("replayed body differs:\n%s\n---\n%s", joined(recorded), joined(replayed))
	}
	if len(recorded) != len(replayed) {
		t.Fatalf("%d reads recorded, %d replayed", len(recorded), len(replayed))
	}
	for i := range recorded {
		if !bytes.Equal(recorded[i].data, replayed[i].data) {
			t.Errorf("read %d: %q, recorded %q", i, replayed[i].data, recorded[i].data)
		}
		// About the recorded time, either way by no more than a
		// scheduler's hiccup: the recorded times are when the recording's
		// own client read, and a hiccup then makes the replay look early;
		// late, a busy machine adds to every wait, so the slack grows with
		// the time (a replay at twice the recorded pace still fails).
		if d := replayed[i].at - recorded[i].at; d < -25*time.Millisecond || d > 40*time.Millisecond+recorded[i].at/4 {
			t.Errorf("read %d came at %v, recorded at %v", i, replayed[i].at, recorded[i].at)
		}
	}
	if last := recorded[len(recorded)-1].at; last < 100*time.Millisecond {
		t.Errorf("the recording took %v: the fake's delays were not kept", last)
	}

	start := time.Now()
	_, fast, err := exchange(t, context.Background(), open(t, dir, true), srv.URL, chat("What's the weather in Berlin?"))
	if err != nil || !bytes.Equal(joined(fast), joined(recorded)) {
		t.Fatalf("fast replay: %v", err)
	}
	// Against the recording's own length, measured in this run: a busy
	// machine slows both.
	if d, last := time.Since(start), recorded[len(recorded)-1].at; d > last/2 {
		t.Errorf("a fast replay took %v, the recording %v", d, last)
	}
}

// TestUnmatchedNamesClosest: a request no cassette holds fails with a
// model error that names the cassette closest to it and where it differs.
func TestUnmatchedNamesClosest(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{})
	rec := newRecorder(t, dir)
	for _, q := range []string{"What's the weather in Berlin?", "How do I start my day well?"} {
		if _, _, err := exchange(t, context.Background(), rec, srv.URL, chat(q)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	want := replay.CassetteName("cohere", http.MethodPost, "/v2/chat", []byte(chat("What's the weather in Berlin?")))
	if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
		t.Fatalf("no cassette %s: %v", want, err)
	}
	_, _, err := exchange(t, context.Background(), open(t, dir, true), srv.URL, chat("What's the weather in Bern?"))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.KindRejected || me.Temporary || me.Provider != "cohere" {
		t.Fatalf("error %#v, want a model error that is not retried", err)
	}
	if me.Message != "no cassette matches the request; the closest, "+want+", differs at messages[1].content" {
		t.Errorf("message %q", me.Message)
	}
	// An empty directory says so.
	_, _, err = exchange(t, context.Background(), open(t, t.TempDir(), true), srv.URL, chat("Hi"))
	if !errors.As(err, &me) || !strings.Contains(me.Message, "holds none") {
		t.Errorf("error %v", err)
	}
}

// TestScrubbed: no key is left in a cassette, in headers or bodies.
func TestScrubbed(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{APIKey: key})
	// The fake echoes nothing secret: put the key in the request body too.
	if _, _, err := exchange(t, context.Background(), newRecorder(t, dir), srv.URL, chat("my key is "+key)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) != 1 {
		t.Fatalf("%d cassettes", len(files))
	}
	b, _ := os.ReadFile(files[0])
	if bytes.Contains(b, []byte(key)) {
		t.Fatalf("the cassette holds the key:\n%s", b)
	}
	for _, want := range []string{"Authorization:\n", "- '[scrubbed]'", "X-Api-Key:", "my key is [scrubbed]"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the cassette lacks %q:\n%s", want, b)
		}
	}
}

// TestRetriedRequest: the exchanges of a request sent again are replayed in
// order, then the last one for every later request.
func TestRetriedRequest(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultStatus, Status: 429, RetryAfter: "1"}}})
	rec := newRecorder(t, dir)
	for _, want := range []int{429, 200} {
		res, _, err := exchange(t, context.Background(), rec, srv.URL, chat("Hello?"))
		if err != nil || res.StatusCode != want {
			t.Fatalf("recording: %v, want %d", err, want)
		}
	}
	srv.Close()
	r := open(t, dir, true)
	for _, want := range []int{429, 200, 200} {
		res, body, err := exchange(t, context.Background(), r, srv.URL, chat("Hello?"))
		if err != nil || res.StatusCode != want {
			t.Fatalf("replay: %v, want %d", err, want)
		}
		if want == 429 && (res.Header.Get("Retry-After") != "1" || !bytes.Contains(joined(body), []byte(`"message"`))) {
			t.Errorf("429 replayed as %v %s", res.Header, joined(body))
		}
	}
}

// TestBrokenStream: a stream cut in the middle replays cut at the same
// byte, as an unexpected end.
func TestBrokenStream(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultCut, After: 2}}})
	_, recorded, err := exchange(t, context.Background(), newRecorder(t, dir), srv.URL, chat("How do I start my day well?"))
	if err == nil {
		t.Fatal("the cut stream ended well")
	}
	srv.Close()
	_, replayed, err := exchange(t, context.Background(), open(t, dir, true), srv.URL, chat("How do I start my day well?"))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("replay ended with %v, want an unexpected end", err)
	}
	if !bytes.Equal(joined(recorded), joined(replayed)) || len(replayed) == 0 {
		t.Errorf("replayed %q, recorded %q", joined(replayed), joined(recorded))
	}
}

// TestClientLeft: a stream the client left (the fake hung) replays its
// chunks, then waits for the client to go; a watch on the replayer notes
// when it went.
func TestClientLeft(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{Faults: []upstream.Fault{{Kind: upstream.FaultHang, After: 1}}})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, recorded, err := exchange(t, ctx, newRecorder(t, dir), srv.URL, chat("How do I start my day well?"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("recording ended with %v", err)
	}
	srv.Close()
	watch := upstream.NewCore(upstream.Options{})
	r := watch.Watch(open(t, dir, true))
	ctx, cancel = context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, replayed, err := exchange(t, ctx, r, srv.URL, chat("How do I start my day well?"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 140*time.Millisecond {
		t.Fatalf("replay ended with %v after %v, want the client's deadline", err, time.Since(start))
	}
	if !bytes.Equal(joined(recorded), joined(replayed)) {
		t.Errorf("replayed %q, recorded %q", joined(replayed), joined(recorded))
	}
	at, ok := watch.WaitCancelled(context.Background(), 0)
	if !ok || at.Sub(start) < 140*time.Millisecond {
		t.Errorf("cancelled at %v (%v)", at.Sub(start), ok)
	}
}

// TestGoVCRReplays: the cassettes are go-vcr cassettes: go-vcr's own
// recorder replays them with the package's matcher (whole, without timing),
// its cassette.Request converting to a replay.Request.
func TestGoVCRReplays(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{})
	_, recorded, err := exchange(t, context.Background(), newRecorder(t, dir), srv.URL, chat("What's the weather in Paris and Tokyo?"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	name := replay.CassetteName("cohere", http.MethodPost, "/v2/chat", []byte(chat("What's the weather in Paris and Tokyo?")))
	rec, err := recorder.New(filepath.Join(dir, strings.TrimSuffix(name, ".yaml")),
		recorder.WithMode(recorder.ModeReplayOnly), recorder.WithSkipRequestLatency(true),
		recorder.WithMatcher(func(r *http.Request, i cassette.Request) bool { return replay.Matcher(r, replay.Request(i)) }))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	_, replayed, err := exchange(t, context.Background(), rec, srv.URL, chat("What's the weather in Paris and Tokyo?"))
	if err != nil || !bytes.Equal(joined(recorded), joined(replayed)) {
		t.Fatalf("go-vcr replayed %q (%v), recorded %q", joined(replayed), err, joined(recorded))
	}
}

// TestMatchingIgnoresKeyOrderAndHost: the body is compared as canonical
// JSON and the host not at all.
func TestMatchingIgnoresKeyOrderAndHost(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{})
	if _, _, err := exchange(t, context.Background(), newRecorder(t, dir), srv.URL, `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	res, _, err := exchange(t, context.Background(), open(t, dir, true), "http://elsewhere.invalid:9", "{ \"messages\": [ {\"content\":\"Hi\", \"role\":\"user\"} ],\n \"stream\": true, \"model\": \"m\" }")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v", err)
	}
}

// TestWatched: a replayer keeps no record of the requests it served (a
// service replaying for hours would grow by one for each); a watch on it
// records each, the way the fakes record theirs, and notes no client that
// went away when every answer was read to its end.
func TestWatched(t *testing.T) {
	dir := t.TempDir()
	srv := fake(t, upstream.Options{})
	if _, _, err := exchange(t, context.Background(), newRecorder(t, dir), srv.URL, chat("Hi")); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	watch := upstream.NewCore(upstream.Options{})
	r := watch.Watch(open(t, dir, true))
	start := time.Now()
	for range 3 {
		if res, _, err := exchange(t, context.Background(), r, srv.URL, chat("Hi")); err != nil || res.StatusCode != 200 {
			t.Fatalf("replaying: %v", err)
		}
	}
	ex := watch.Exchanges()
	if len(ex) != 3 {
		t.Fatalf("%d requests watched, want 3", len(ex))
	}
	for i, e := range ex {
		if e.Path != "/v2/chat" || string(e.Body) != chat("Hi") || e.Started.Before(start) || !e.CancelledAt.IsZero() {
			t.Errorf("exchange %d: %s %q started %v, cancelled at %v", i, e.Path, e.Body, e.Started.Sub(start), e.CancelledAt)
		}
	}
}

// TestCassettesRewriteByteForByte: the cassettes recorded under testdata
// read and write again byte for byte: the package writes go-vcr's format as
// go-vcr's own cassette package wrote it for the recorder.
func TestCassettesRewriteByteForByte(t *testing.T) {
	paths, err := filepath.Glob("../*/testdata/cassettes/*/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 20 {
		t.Fatalf("%d cassettes under testdata, want the providers' recordings", len(paths))
	}
	for _, p := range paths {
		is, err := replay.ReadCassette(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := replay.Marshal(is)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("%s written again differs:\n%s\n---\n%s", p, got, want)
		}
	}
}

// TestGoVCRWrites: a cassette go-vcr's own cassette package saves, with the
// extension added by its marshal hook as the recorder once did, is the file
// this package writes.
func TestGoVCRWrites(t *testing.T) {
	paths, _ := filepath.Glob("../cohere/testdata/cassettes/429_with_Retry-After/*/*.yaml")
	if len(paths) == 0 {
		t.Fatal("no cassette")
	}
	is, err := replay.ReadCassette(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := cassette.New(filepath.Join(dir, "vcr"))
	ext := map[*cassette.Interaction]replay.Extension{}
	for _, i := range is {
		ci := &cassette.Interaction{Request: cassette.Request(i.Request), Response: cassette.Response(i.Response)}
		c.AddInteraction(ci)
		ext[ci] = i.Companion
	}
	c.MarshalFunc = func(any) ([]byte, error) {
		var f struct {
			Version      int `yaml:"version"`
			Interactions []*struct {
				cassette.Interaction `yaml:",inline"`
				Companion            replay.Extension `yaml:"companion"`
			} `yaml:"interactions"`
		}
		f.Version = c.Version
		for _, i := range c.Interactions {
			f.Interactions = append(f.Interactions, &struct {
				cassette.Interaction `yaml:",inline"`
				Companion            replay.Extension `yaml:"companion"`
			}{*i, ext[i]})
		}
		return yaml.Marshal(f)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "vcr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := replay.Marshal(is)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("written (%v):\n%s\n---\ngo-vcr wrote:\n%s", err, got, want)
	}
}
