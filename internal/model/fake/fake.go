// Package fake is the deterministic fake language model: the service's
// default model and the one its tests and golden transcripts run on.
//
// The same request always gives the same parts, byte for byte. The fake reads
// its instructions the way a model would: the personality comes from the
// "in <name> mode" line of the system instructions. It answers the last user
// message in that voice, quoting it; it recalls the previous user message
// when the conversation has one; when the last user message asks about the
// weather in a place, it calls weatherTool with that place (arguments in
// several deltas) and, once the results are back, answers from them; when
// it is "/tool NAME {json arguments}" and NAME is offered, it calls NAME so
// and answers with the result's text. It
// honours MaxOutputTokens with finish reason "length", and counts tokens as
// whitespace-led words.
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/model"
)

// ID is the fake's model id.
const ID = "fake"

// Options tune the fake's pace, for local use and load tests. The zero value
// answers as fast as it can.
type Options struct {
	// FirstTokenDelay is waited before the first part.
	FirstTokenDelay time.Duration
	// TokenDelay is waited before each later part.
	TokenDelay time.Duration
}

// Model is the fake model. It is safe for concurrent use.
type Model struct {
	opts Options
}

var _ model.Model = (*Model)(nil)

// New returns a fake model.
func New(opts Options) *Model { return &Model{opts: opts} }

// Provider implements model.Model.
func (*Model) Provider() string { return "fake" }

// ID implements model.Model.
func (*Model) ID() string { return ID }

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Part, error] {
	parts := plan(req).parts()
	return func(yield func(model.Part, error) bool) {
		i := 0
		for p := range parts {
			delay := m.opts.TokenDelay
			if i == 0 {
				delay = m.opts.FirstTokenDelay
			}
			i++
			if err := wait(ctx, delay); err != nil {
				yield(model.Part{}, err)
				return
			}
			if !yield(p, nil) {
				return
			}
		}
	}
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Answer returns the parts the fake answers req with, ending with a finish.
func Answer(req model.Request) []model.Part { return slices.Collect(plan(req).parts()) }

// answer is what the fake answers a request with: tool calls, or text that
// is streamed a token at a time as it is read (an open stream holds the
// text, not a part for each of its tokens), then the finish.
type answer struct {
	calls  []model.Part
	text   string
	finish *model.Finish
}

func plan(req model.Request) answer {
	voice := voiceOf(req.System)
	usage := model.Usage{InputTokens: inputTokens(req)}
	if len(req.Messages) > 1 {
		// A prompt cache would have the instructions from the last turn.
		usage.CachedInputTokens = CountTokens(req.System)
	}
	last := model.Message{}
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	var where []string
	if last.Role == model.RoleUser && hasTool(req.Tools, "weatherTool") {
		where = places(last.Content)
	}
	commanded, commandArgs, command := commandedTool(lastUser(req.Messages), req.Tools)
	fact := ""
	if last.Role == model.RoleUser && hasTool(req.Tools, memoryTool) {
		fact = remembered(last.Content)
	}
	var a answer
	reason := model.FinishStop
	switch {
	case req.System == model.TitleInstructions:
		a.text, usage.OutputTokens, reason = cut(title(req.Messages), req.MaxOutputTokens)
	case command && lastToolCall(req.Messages) == commanded:
		a.text, usage.OutputTokens, reason = cut(commandAnswer(req.Messages), req.MaxOutputTokens)
	case command && last.Role == model.RoleUser:
		a.calls, usage.OutputTokens = commandCall(req, commanded, commandArgs)
		reason = model.FinishToolCalls
	case lastToolCall(req.Messages) == memoryTool:
		a.text, usage.OutputTokens, reason = cut(voice.noted(remembered(lastUser(req.Messages))), req.MaxOutputTokens)
	case last.Role == model.RoleTool:
		a.text, usage.OutputTokens, reason = cut(voice.weather(toolResults(req.Messages)), req.MaxOutputTokens)
	case fact != "":
		a.calls, usage.OutputTokens = memoryCall(req, fact)
		reason = model.FinishToolCalls
	case len(where) > 0:
		a.calls, usage.OutputTokens = weatherCalls(req, where)
		reason = model.FinishToolCalls
	default:
		a.text, usage.OutputTokens, reason = cut(voice.reply(last.Content, previousUser(req.Messages), recalledFrom(req.System)), req.MaxOutputTokens)
	}
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	a.finish = &model.Finish{
		Reason:           reason,
		Usage:            usage,
		ResponseID:       "fake-" + hashHex(req, "response"),
		ProviderMetadata: map[string]any{"personality": voice.name},
	}
	return a
}

// parts are a's parts: its calls, or its text one token per part, then
// its finish.
func (a answer) parts() iter.Seq[model.Part] {
	return func(yield func(model.Part) bool) {
		for _, p := range a.calls {
			if !yield(p) {
				return
			}
		}
		for t := range tokens(a.text) {
			if !yield(model.Part{Kind: model.PartText, Text: t}) {
				return
			}
		}
		yield(model.Part{Kind: model.PartFinish, Finish: a.finish})
	}
}

// cut is text up to its max'th token (0: no cap), its tokens, and the
// finish reason: length when it was cut.
func cut(text string, max int) (string, int, string) {
	n, end := 0, 0
	for t := range tokens(text) {
		if max > 0 && n == max {
			return text[:end], n, model.FinishLength
		}
		n++
		end += len(t)
	}
	return text[:end], n, model.FinishStop
}

// Tokens splits s into the fake's tokens: each non-space run with the space
// before it. Concatenated, they give s without its trailing space.
func Tokens(s string) []string { return slices.Collect(tokens(s)) }

// tokens yields the tokens of s, as Tokens returns them.
func tokens(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			i := 0
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			if i == len(s) {
				return // trailing space is no token
			}
			for i < len(s) && !isSpace(s[i]) {
				i++
			}
			if !yield(s[:i]) {
				return
			}
			s = s[i:]
		}
	}
}

// isSpace is the space that separates tokens: ASCII whitespace, as \s in a
// regular expression.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// CountTokens is len(Tokens(s)) without the allocations: the number of
// runs of non-space bytes.
func CountTokens(s string) int {
	n := 0
	in := false
	for i := 0; i < len(s); i++ {
		space := isSpace(s[i])
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func inputTokens(req model.Request) int {
	n := CountTokens(req.System)
	for _, m := range req.Messages {
		n += CountTokens(m.Content)
		for _, c := range m.ToolCalls {
			n += CountTokens(c.Name) + CountTokens(string(c.Args))
		}
	}
	for _, t := range req.Tools {
		n += CountTokens(t.Name) + CountTokens(t.Description) + CountTokens(string(t.Parameters))
	}
	return n
}

// weatherCalls asks for weatherTool once per place, arguments in deltas of
// a few bytes each.
func weatherCalls(req model.Request, where []string) ([]model.Part, int) {
	var parts []model.Part
	out := 0
	for i, place := range where {
		id := "call_" + hashHex(req, fmt.Sprint("call", i))
		name, _ := json.Marshal(place)
		args := `{"location":` + string(name) + `}`
		parts = append(parts, model.Part{Kind: model.PartToolCallStart, ToolCallID: id, ToolName: "weatherTool"})
		for _, d := range chunks(args, 6) {
			parts = append(parts, model.Part{Kind: model.PartToolCallDelta, ToolCallID: id, Text: d})
		}
		parts = append(parts, model.Part{Kind: model.PartToolCallEnd, ToolCallID: id})
		out += CountTokens("weatherTool") + CountTokens(args)
	}
	return parts, out
}

// chunks cuts s into pieces of about n bytes, never inside a rune.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func hasTool(tools []model.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// hashHex is a short deterministic id derived from the request and salt:
// FNV-1a of the instructions, the number of messages and salt, then of
// each message's role, content and tool call id, each after a NUL.
func hashHex(req model.Request, salt string) string {
	h := fnv1a(fnvOffset, req.System)
	h = fnv1a(h, strconv.Itoa(len(req.Messages)))
	h = fnv1a(h, salt)
	for _, m := range req.Messages {
		for _, s := range [...]string{m.Role, m.Content, m.ToolCallID} {
			h = fnv1a(fnv1a(h, "\x00"), s)
		}
	}
	return fmt.Sprintf("%016x", h)
}

// fnvOffset is FNV-1a's 64-bit offset basis.
const fnvOffset = 14695981039346656037

// fnv1a is the 64-bit FNV-1a hash h (as hash/fnv's New64a computes it)
// continued over s, which hash/fnv would take as a copy of s's bytes.
func fnv1a(h uint64, s string) uint64 {
	const prime = 1099511628211
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// lastUser is the newest user message of msgs.
func lastUser(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

func previousUser(msgs []model.Message) string {
	seen := false
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleUser {
			continue
		}
		if seen {
			return msgs[i].Content
		}
		seen = true
	}
	return ""
}

// weatherResult is one tool round's outcome as the fake reads it.
type weatherResult struct {
	asked  string // the place the call asked for
	result struct {
		Temperature float64 `json:"temperature"`
		FeelsLike   float64 `json:"feelsLike"`
		Humidity    float64 `json:"humidity"`
		WindSpeed   float64 `json:"windSpeed"`
		WindGust    float64 `json:"windGust"`
		Conditions  string  `json:"conditions"`
		Location    string  `json:"location"`
		Error       string  `json:"error"`
	}
}

// toolResults reads the trailing tool messages and the places their calls
// asked for.
func toolResults(msgs []model.Message) []weatherResult {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == model.RoleTool {
		start--
	}
	asked := map[string]string{}
	if start > 0 {
		for _, c := range msgs[start-1].ToolCalls {
			var a struct {
				Location string `json:"location"`
			}
			_ = json.Unmarshal(c.Args, &a)
			asked[c.ID] = a.Location
		}
	}
	var out []weatherResult
	for _, m := range msgs[start:] {
		w := weatherResult{asked: asked[m.ToolCallID]}
		if err := json.Unmarshal([]byte(m.Content), &w.result); err != nil {
			w.result.Error = "its result could not be read"
		}
		if m.IsError && w.result.Error == "" {
			w.result.Error = m.Content
		}
		out = append(out, w)
	}
	return out
}
