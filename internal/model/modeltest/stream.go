package modeltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/model"
)

// Yield is one value a model's stream yielded.
type Yield struct {
	Part model.Part
	Err  error
}

// Drain runs one call of m and keeps everything its stream yields, reading
// on past a finish or an error as a consumer that never stops would, so that
// a stream which goes on after its end shows.
func Drain(ctx context.Context, m model.Model, req model.Request) []Yield {
	var out []Yield
	for p, err := range m.Stream(ctx, req) {
		out = append(out, Yield{Part: p, Err: err})
	}
	return out
}

// MaxMessage is the longest model.Error.Message the suite accepts: a
// message is one short sentence, not a copy of what the provider sent.
const MaxMessage = 300

// CheckStream checks ys, all that one call yielded without being stopped,
// against the contract of model.Model.Stream and model.Part:
//
//   - the stream ends with exactly one finish part or one error, never both,
//     never neither, and nothing comes after it;
//   - every error is a *model.Error of a known kind with the provider's name
//     and a message that CheckMessage accepts;
//   - text and reasoning parts carry non-empty, valid UTF-8 text and nothing
//     else;
//   - a tool-call start does not reuse the id of an earlier call; a delta
//     carries non-empty text for a call that is open (started and not
//     ended); an end closes an open call; an empty id names the last call
//     opened without one, as the agent reads it;
//   - the finish part has a Finish with a known reason and no negative
//     token count.
func CheckStream(provider string, ys []Yield) error {
	if len(ys) == 0 {
		return errors.New("the stream yielded nothing: it must end with a finish or an error")
	}
	started := map[string]bool{} // ids of calls opened with an id
	open := map[string]bool{}    // the same, while not ended
	anonOpen := false            // the last call opened without an id is open
	for i, y := range ys {
		last := i == len(ys)-1
		if y.Err != nil {
			if !last {
				return fmt.Errorf("yield %d: the stream went on after the error %v", i, y.Err)
			}
			if y.Part != (model.Part{}) {
				return fmt.Errorf("yield %d: an error came with a part %+v", i, y.Part)
			}
			return checkError(provider, y.Err)
		}
		p := y.Part
		if p.Kind != model.PartFinish && p.Finish != nil {
			return fmt.Errorf("yield %d: a part of kind %d carries a finish", i, p.Kind)
		}
		switch p.Kind {
		case model.PartText, model.PartReasoning:
			if p.Text == "" || !utf8.ValidString(p.Text) {
				return fmt.Errorf("yield %d: text %q is empty or not UTF-8", i, p.Text)
			}
			if p.ToolCallID != "" || p.ToolName != "" {
				return fmt.Errorf("yield %d: a text part names tool call %q %q", i, p.ToolCallID, p.ToolName)
			}
		case model.PartToolCallStart:
			if !utf8.ValidString(p.Text) || !utf8.ValidString(p.ToolName) || !utf8.ValidString(p.ToolCallID) {
				return fmt.Errorf("yield %d: a tool-call start that is not UTF-8: %+v", i, p)
			}
			if p.ToolCallID == "" {
				anonOpen = true
				break
			}
			if started[p.ToolCallID] {
				return fmt.Errorf("yield %d: tool call %q started twice", i, p.ToolCallID)
			}
			started[p.ToolCallID], open[p.ToolCallID] = true, true
		case model.PartToolCallDelta:
			if p.Text == "" || !utf8.ValidString(p.Text) {
				return fmt.Errorf("yield %d: tool-call delta %q is empty or not UTF-8", i, p.Text)
			}
			if (p.ToolCallID == "" && !anonOpen) || (p.ToolCallID != "" && !open[p.ToolCallID]) {
				return fmt.Errorf("yield %d: a delta for tool call %q, which is not open", i, p.ToolCallID)
			}
		case model.PartToolCallEnd:
			switch {
			case p.ToolCallID == "" && anonOpen:
				anonOpen = false
			case p.ToolCallID != "" && open[p.ToolCallID]:
				delete(open, p.ToolCallID)
			default:
				return fmt.Errorf("yield %d: the end of tool call %q, which is not open", i, p.ToolCallID)
			}
		case model.PartFinish:
			if !last {
				return fmt.Errorf("yield %d: the stream went on after its finish", i)
			}
			return checkFinish(p.Finish)
		default:
			return fmt.Errorf("yield %d: unknown part kind %d", i, p.Kind)
		}
	}
	return errors.New("the stream ended without a finish or an error")
}

func checkFinish(f *model.Finish) error {
	if f == nil {
		return errors.New("a finish part without its Finish")
	}
	switch f.Reason {
	case model.FinishStop, model.FinishLength, model.FinishToolCalls:
	default:
		return fmt.Errorf("finish reason %q", f.Reason)
	}
	u := f.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.TotalTokens < 0 || u.CachedInputTokens < 0 || u.ReasoningTokens < 0 {
		return fmt.Errorf("negative usage %+v", u)
	}
	return nil
}

func checkError(provider string, err error) error {
	var me *model.Error
	if !errors.As(err, &me) {
		return fmt.Errorf("error %v (%T) is no *model.Error", err, err)
	}
	if me.Provider != provider {
		return fmt.Errorf("error of provider %q, want %q", me.Provider, provider)
	}
	if me.Kind < model.KindUpstream || me.Kind > model.KindRejected {
		return fmt.Errorf("error of unknown kind %d", me.Kind)
	}
	return CheckMessage(me.Message)
}

// Patterns of what a client-facing message must not show.
var (
	ipv4     = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b`)
	ipv6     = regexp.MustCompile(`\[[0-9A-Fa-f:.%]*:[0-9A-Fa-f:.%]*\]`)
	hostPort = regexp.MustCompile(`[A-Za-z0-9.\]-]:\d{1,5}\b`)
	goChain  = regexp.MustCompile(`\b(dial|read|write) (tcp|udp|unix)|\blookup \S|\b(Get|Post|Put|Delete) "|\bconnect: `)
	absPath  = regexp.MustCompile(`(^|[\s"'(=])(/[A-Za-z0-9._~-]|[A-Za-z]:\\)`)
)

// CheckMessage checks that msg, a model.Error.Message, is fit to show a
// client and the model: one non-empty line of valid UTF-8, at most
// MaxMessage bytes, with no URL, address, host and port, file path, key or
// Go error chain in it.
func CheckMessage(msg string) error {
	switch {
	case strings.TrimSpace(msg) == "":
		return errors.New("an empty message")
	case len(msg) > MaxMessage:
		return fmt.Errorf("message of %d bytes: %.80q...", len(msg), msg)
	case !utf8.ValidString(msg):
		return fmt.Errorf("message %q is not UTF-8", msg)
	case strings.IndexFunc(msg, unicode.IsControl) >= 0:
		return fmt.Errorf("message %q holds a control character", msg)
	case strings.Contains(msg, "://"):
		return fmt.Errorf("message %q holds a URL", msg)
	case strings.Contains(msg, Key):
		return fmt.Errorf("message %q holds the key", msg)
	}
	for _, re := range []*regexp.Regexp{ipv4, ipv6, hostPort, goChain, absPath} {
		if m := re.FindString(msg); m != "" {
			return fmt.Errorf("message %q shows %q", msg, m)
		}
	}
	return nil
}

// Serve is a transport that answers every request with 200 and an event
// stream of Body, without a network. When Piece is above 0, the body is
// read at most Piece bytes at a time, as a network may deliver it.
type Serve struct {
	Body  []byte
	Piece int
}

// RoundTrip implements http.RoundTripper.
func (s Serve) RoundTrip(r *http.Request) (*http.Response, error) {
	var body io.Reader = bytes.NewReader(s.Body)
	if s.Piece > 0 {
		body = &pieces{r: body, size: s.Piece}
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(body), Request: r}, nil
}

// pieces reads at most size bytes at a time from r.
type pieces struct {
	r    io.Reader
	size int
}

func (p *pieces) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.size)]) }

// Piece is a size of reads for a body of n bytes that a fuzz target can
// afford: a byte at a time, or 512 pieces when the body is longer. The SSE
// parsers scan an event from its start on every read, so reading a long
// event a byte at a time takes time quadratic in its length.
func Piece(n int) int { return max(1, n/512) }

// SameStream reports whether a and b yielded the same parts and ended the
// same way: the same error kind and message, the causes aside.
func SameStream(a, b []Yield) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].Part, b[i].Part) || (a[i].Err == nil) != (b[i].Err == nil) {
			return false
		}
		var ea, eb *model.Error
		if errors.As(a[i].Err, &ea) != errors.As(b[i].Err, &eb) || (ea != nil && (ea.Message != eb.Message || ea.Kind != eb.Kind)) {
			return false
		}
	}
	return true
}
