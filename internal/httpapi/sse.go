package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/offstack"
	"github.com/companionhq/companion/internal/run"
)

// dialect turns a run's records into the frames one kind of client reads.
// A dialect may keep state across records (an open text block): a stream
// that resumes after an id first feeds it the records before the id.
type dialect interface {
	// headers adds the dialect's response headers.
	headers(h http.Header)
	// frames appends the frames of rec to out.
	frames(rec *run.Record, out []frame) []frame
	// ids reports whether frames carry their record's id (SSE id:).
	ids() bool
	// trailer is a data frame written after the run's end, or "".
	trailer() string
	// stateful reports whether frames depends on the records before rec
	// (an open text block): a resumed stream then feeds it those too.
	stateful() bool
}

// frame is one SSE data frame: a JSON value.
type frame struct {
	v any
	// text marks a frame of the reply's text (time to first text).
	text bool
}

// Stream formats: the X-Stream-Format header, or the server's default.
const (
	FormatSeed   = "seed"
	FormatMastra = "mastra"
	FormatAISDK  = "ai-sdk"
)

// streamFormat is the dialect a request asks for: its X-Stream-Format
// header, else the server's default.
func (s *Server) streamFormat(r *http.Request) (string, error) {
	vs := r.Header.Values("X-Stream-Format")
	if len(vs) > 1 {
		return "", apperr.New(apperr.Invalid, "send one X-Stream-Format header, not %d", len(vs))
	}
	f := s.cfg.StreamFormat
	if len(vs) == 1 {
		f = strings.ToLower(strings.TrimSpace(vs[0]))
	}
	switch f {
	case "", FormatSeed:
		return FormatSeed, nil
	case FormatMastra, FormatAISDK:
		return f, nil
	}
	return "", apperr.New(apperr.Invalid, "X-Stream-Format %q is not known: use seed, mastra or ai-sdk", clip(f))
}

func newDialect(format, runID string) dialect {
	switch format {
	case FormatMastra:
		return &mastraDialect{runID: runID}
	case FormatAISDK:
		return &aisdkDialect{runID: runID}
	}
	return &seedDialect{runID: runID}
}

// frameWriter writes a run's frames as Server-Sent Events, flushed after
// the last of the records ready together.
type frameWriter struct {
	w       http.ResponseWriter
	session *sse.Session
	d       dialect
	buf     bytes.Buffer
	enc     *json.Encoder
	frames  []frame
	runID   string
	// committed is set once the headers are out.
	committed bool
	// unflushed is set while frames written wait for a flush, and
	// textUnflushed when one of them is text.
	unflushed, textUnflushed bool
	// onFirst is called once, when the first frame is flushed, and
	// onFirstText when the first text frame is.
	onFirst, onFirstText func()
	// A write that the client does not take within stall fails
	// (armStall); armed is when the deadline was last set.
	rc    *http.ResponseController
	stall time.Duration
	armed time.Time
}

func newFrameWriter(w http.ResponseWriter, r *http.Request, d dialect, runID string, stall time.Duration) (*frameWriter, error) {
	s, err := sse.Upgrade(w, r)
	if err != nil {
		return nil, fmt.Errorf("streaming is not supported by this connection: %w", err)
	}
	f := &frameWriter{w: w, session: s, d: d, runID: runID, rc: http.NewResponseController(w), stall: stall}
	f.enc = newEncoder(&f.buf)
	return f, nil
}

// armStall gives the write about to happen at least three quarters of the
// stall timeout: a client that stops reading would otherwise hold its
// stream, and its slot among -max-streams, for as long as it keeps the
// connection open, once what is written outgrows the sockets' buffers.
// The deadline moves only once a quarter of the timeout has passed since
// it was last set (setting it allocates, and a stream writes dozens of
// times a second), and is never cleared: no write happens between two
// armStalls, however long the run is quiet.
func (f *frameWriter) armStall() error {
	now := time.Now()
	if now.Sub(f.armed) < f.stall/4 {
		return nil
	}
	f.armed = now
	if err := f.rc.SetWriteDeadline(now.Add(f.stall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// commit sets the stream's headers and sends them.
//
// It sends them off the stack (offstack): net/http's writing of a response's head is the
// deepest call a stream makes (its frame alone is over 1 KiB), and would
// double the stack of the connection's goroutine, which keeps that for as
// long as the stream lasts (docs/performance.md).
func (f *frameWriter) commit() error {
	if f.committed {
		return nil
	}
	h := f.w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	if f.runID != "" {
		// Every dialect's client can name the run to resume or cancel it.
		h.Set("X-Run-Id", f.runID)
	}
	f.d.headers(h)
	f.committed = true
	if err := f.armStall(); err != nil {
		return err
	}
	var err error
	offstack.Do(func() { err = f.session.Flush() }) // the first Flush sends the head alone
	return err
}

// skip feeds rec to the dialect without writing it: a resumed stream's
// records before its id.
func (f *frameWriter) skip(rec *run.Record) { f.frames = f.d.frames(rec, f.frames[:0]) }

// write writes rec's frames, with id seq when the dialect carries ids, and
// flushes them unless more records are ready to follow at once: a burst of
// records goes out in one write.
func (f *frameWriter) write(seq int64, rec *run.Record, more bool) error {
	if err := f.commit(); err != nil {
		return err
	}
	if err := f.armStall(); err != nil {
		return err
	}
	f.frames = f.d.frames(rec, f.frames[:0])
	for i, fr := range f.frames {
		f.buf.Reset()
		if err := f.enc.Encode(fr.v); err != nil {
			return fmt.Errorf("encoding a frame: %w", err)
		}
		var m sse.Message
		// The record's id goes on its last frame: a client that saw it
		// has seen the whole record, and ids stay unique.
		if f.d.ids() && i == len(f.frames)-1 {
			m.ID = sse.ID(strconv.FormatInt(seq, 10))
		}
		m.AppendData(string(bytes.TrimSuffix(f.buf.Bytes(), []byte("\n"))))
		if err := f.session.Send(&m); err != nil {
			return err
		}
		f.unflushed = true
		f.textUnflushed = f.textUnflushed || fr.text
	}
	if more || !f.unflushed {
		return nil
	}
	return f.flush()
}

// flush sends the frames written so far.
func (f *frameWriter) flush() error {
	text := f.textUnflushed
	f.unflushed, f.textUnflushed = false, false
	if err := f.session.Flush(); err != nil {
		return err
	}
	if f.onFirst != nil {
		f.onFirst()
		f.onFirst = nil
	}
	if text && f.onFirstText != nil {
		f.onFirstText()
		f.onFirstText = nil
	}
	return nil
}

// end writes the dialect's trailer after the run's end.
func (f *frameWriter) end() error {
	if err := f.armStall(); err != nil {
		return err
	}
	t := f.d.trailer()
	if t == "" {
		if f.unflushed {
			return f.flush()
		}
		return nil
	}
	var m sse.Message
	m.AppendData(t)
	if err := f.session.Send(&m); err != nil {
		return err
	}
	return f.session.Flush()
}
