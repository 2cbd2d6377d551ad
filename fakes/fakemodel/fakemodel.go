// Package fakemodel is the deterministic fake language model: the service's
// default model and the one its tests and golden transcripts run on.
//
// The same request always gives the same parts, byte for byte. The fake reads
// its instructions the way a model would: the personality comes from the
// "in <name> mode" line of the system instructions. It answers the last user
// message in that voice, quoting it; it recalls the previous user message
// when the conversation has one; when the last user message asks about the
// weather in a place, it calls weatherTool with that place (arguments in
// several deltas) and, once the results are back, answers from them. It
// honours MaxOutputTokens with finish reason "length", and counts tokens as
// whitespace-led words.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"regexp"
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
	parts := Answer(req)
	return func(yield func(model.Part, error) bool) {
		for i, p := range parts {
			delay := m.opts.TokenDelay
			if i == 0 {
				delay = m.opts.FirstTokenDelay
			}
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
func Answer(req model.Request) []model.Part {
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
	var parts []model.Part
	reason := model.FinishStop
	switch {
	case last.Role == model.RoleTool:
		parts, usage.OutputTokens, reason = textParts(voice.weather(toolResults(req.Messages)), req.MaxOutputTokens)
	case len(where) > 0:
		parts, usage.OutputTokens = weatherCalls(req, where)
		reason = model.FinishToolCalls
	default:
		parts, usage.OutputTokens, reason = textParts(voice.reply(last.Content, previousUser(req.Messages)), req.MaxOutputTokens)
	}
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	return append(parts, model.Part{Kind: model.PartFinish, Finish: &model.Finish{
		Reason:           reason,
		Usage:            usage,
		ResponseID:       "fake-" + hashHex(req, "response"),
		ProviderMetadata: map[string]any{"personality": voice.name},
	}})
}

var tokenRE = regexp.MustCompile(`\s*\S+`)

// Tokens splits s into the fake's tokens: each non-space run with the space
// before it. Concatenated, they give s without its trailing space.
func Tokens(s string) []string { return tokenRE.FindAllString(s, -1) }

// CountTokens is len(Tokens(s)) without the allocations.
func CountTokens(s string) int {
	n, in := 0, false
	for _, r := range s {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
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

// textParts streams text one token per part, cut at max tokens (0: no cap).
func textParts(text string, max int) ([]model.Part, int, string) {
	toks := Tokens(text)
	reason := model.FinishStop
	if max > 0 && len(toks) > max {
		toks, reason = toks[:max], model.FinishLength
	}
	parts := make([]model.Part, 0, len(toks)+1)
	for _, t := range toks {
		parts = append(parts, model.Part{Kind: model.PartText, Text: t})
	}
	return parts, len(toks), reason
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

// hashHex is a short deterministic id derived from the request and salt.
func hashHex(req model.Request, salt string) string {
	h := fnv.New64a()
	fmt.Fprint(h, req.System, len(req.Messages), salt)
	for _, m := range req.Messages {
		fmt.Fprint(h, "\x00", m.Role, "\x00", m.Content, "\x00", m.ToolCallID)
	}
	return fmt.Sprintf("%016x", h.Sum64())
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
