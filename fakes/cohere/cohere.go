// Package cohere is a fake of Cohere's v2 chat API (POST /v2/chat with
// "stream": true) that answers like the fake model (internal/model/fake) in
// Cohere's wire format: Server-Sent Events named message-start,
// content-start, content-delta, content-end, tool-plan-delta,
// tool-call-start, tool-call-delta, tool-call-end and message-end (with
// finish_reason and usage), then data: [DONE]. The shapes follow the example
// streams kept in testdata/ (see its README for where each comes from) and
// are compared with them in the tests.
//
// It refuses with 400, in Cohere's error body, the requests the real API
// refuses (see Check), and it bills as the real API does: the usage of
// message-end has billed_units, what the caller pays for, and tokens, what
// the model saw and wrote, which are more (see Bill).
//
// It is deterministic, runs in-process (it is an http.Handler) or as a
// process (fakes cohere), and takes the knobs of fakes/upstream: pace per
// token, first-token delay, and injected faults.
package cohere

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
)

// Server is the fake. It is safe for concurrent use.
type Server struct {
	*upstream.Core
}

// New returns a fake Cohere with opts.
func New(opts upstream.Options) *Server { return &Server{Core: upstream.NewCore(opts)} }

// chatRequest is the part of a v2 chat request the fake reads.
type chatRequest struct {
	Model            *string           `json:"model"`
	Messages         []message         `json:"messages"`
	Tools            []upstream.Tool   `json:"tools"`
	Documents        []json.RawMessage `json:"documents"`
	MaxTokens        *int              `json:"max_tokens"`
	Stream           bool              `json:"stream"`
	StopSequences    []string          `json:"stop_sequences"`
	Temperature      *float64          `json:"temperature"`
	P                *float64          `json:"p"`
	K                *int              `json:"k"`
	FrequencyPenalty *float64          `json:"frequency_penalty"`
	PresencePenalty  *float64          `json:"presence_penalty"`
	ToolChoice       *string           `json:"tool_choice"`
	SafetyMode       *string           `json:"safety_mode"`
}

// message is one message of a v2 chat request: the shapes both wire
// formats share, and the assistant's tool plan.
type message struct {
	upstream.Message
	ToolPlan *string `json:"tool_plan"`
}

// ServeHTTP serves POST /v2/chat.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	ex, done := s.Begin(r, body)
	defer done()
	switch {
	case r.URL.Path != "/v2/chat":
		writeError(w, http.StatusNotFound, "", "not found: this fake serves POST /v2/chat")
		return
	case r.Method != http.MethodPost:
		writeError(w, http.StatusMethodNotAllowed, "", "method not allowed")
		return
	case !ex.Authorized:
		writeError(w, http.StatusUnauthorized, "", "no api key supplied")
		return
	case ex.Fault != nil && ex.Fault.Kind == upstream.FaultStatus:
		writeError(w, ex.Fault.Status, ex.Fault.RetryAfter, faultMessage(ex.Fault.Status))
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid request: body must be a JSON object")
		return
	}
	if err := Check(req); err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid request: "+err.Error())
		return
	}
	mreq, err := toModel(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid request: "+err.Error())
		return
	}
	if !req.Stream {
		writeError(w, http.StatusBadRequest, "", "invalid request: this fake answers streaming requests only (\"stream\": true)")
		return
	}
	s.answer(w, r, ex, mreq)
}

// Wire shapes of the events, fields in the order the real API sends them.
type (
	event struct {
		ID    string `json:"id,omitempty"`
		Type  string `json:"type"`
		Index *int   `json:"index,omitempty"`
		Delta any    `json:"delta,omitempty"`
	}
	msgDelta struct {
		Message any `json:"message"`
	}
	startMessage struct {
		Role      string `json:"role"`
		Content   []any  `json:"content"`
		ToolPlan  string `json:"tool_plan"`
		ToolCalls []any  `json:"tool_calls"`
		Citations []any  `json:"citations"`
	}
	contentMessage struct {
		Content content `json:"content"`
	}
	content struct {
		Type *string `json:"type,omitempty"`
		Text string  `json:"text"`
	}
	planMessage struct {
		ToolPlan string `json:"tool_plan"`
	}
	callMessage struct {
		ToolCalls toolCall `json:"tool_calls"`
	}
	toolCall struct {
		ID       string    `json:"id,omitempty"`
		Type     string    `json:"type,omitempty"`
		Function *function `json:"function"`
	}
	function struct {
		Name      *string `json:"name,omitempty"`
		Arguments string  `json:"arguments"`
	}
	endDelta struct {
		FinishReason string `json:"finish_reason"`
		Usage        usage  `json:"usage"`
	}
	usage struct {
		BilledUnits  tokens `json:"billed_units"`
		Tokens       tokens `json:"tokens"`
		CachedTokens int    `json:"cached_tokens,omitempty"`
	}
	tokens struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
)

// malformed is the chunk the malformed fault sends: a content-delta cut
// in the middle of its JSON.
const malformed = "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":\n\n"

func (s *Server) answer(w http.ResponseWriter, r *http.Request, ex *upstream.Exchange, req model.Request) {
	parts := fake.Answer(req)
	fin := parts[len(parts)-1].Finish
	st := s.NewStream(w, r, ex)
	zero := 0
	err := st.Frame(frame(event{ID: responseID(req), Type: "message-start", Delta: msgDelta{startMessage{
		Role: "assistant", Content: []any{}, ToolCalls: []any{}, Citations: []any{}}}}))
	inText, planned := false, false
	callIndex := map[string]int{}
	for _, p := range parts {
		if err != nil {
			break
		}
		switch p.Kind {
		case model.PartText:
			if !inText {
				inText = true
				text := "text"
				if err = st.Frame(frame(event{Type: "content-start", Index: &zero, Delta: msgDelta{contentMessage{content{Type: &text}}}})); err != nil {
					break
				}
			}
			err = st.Token(frame(event{Type: "content-delta", Index: &zero, Delta: msgDelta{contentMessage{content{Text: p.Text}}}}), malformed)
		case model.PartToolCallStart:
			if !planned {
				// Cohere models say what they will do before calling tools.
				planned = true
				for _, w := range fake.Tokens(toolPlan(parts)) {
					if err = st.Token(frame(event{Type: "tool-plan-delta", Delta: msgDelta{planMessage{w}}}), malformed); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			i := len(callIndex)
			callIndex[p.ToolCallID] = i
			name := p.ToolName
			err = st.Token(frame(event{Type: "tool-call-start", Index: &i, Delta: msgDelta{callMessage{toolCall{
				ID: p.ToolCallID, Type: "function", Function: &function{Name: &name}}}}}), malformed)
		case model.PartToolCallDelta:
			i := callIndex[p.ToolCallID]
			err = st.Token(frame(event{Type: "tool-call-delta", Index: &i, Delta: msgDelta{callMessage{toolCall{
				Function: &function{Arguments: p.Text}}}}}), malformed)
		case model.PartToolCallEnd:
			i := callIndex[p.ToolCallID]
			err = st.Frame(frame(event{Type: "tool-call-end", Index: &i}))
		}
	}
	if err == nil {
		err = st.End(malformed)
	}
	if err == nil && inText {
		err = st.Frame(frame(event{Type: "content-end", Index: &zero}))
	}
	if err != nil {
		return
	}
	b := bill(req, parts)
	if st.Frame(frame(event{Type: "message-end", Delta: endDelta{FinishReason: finishReasons.Of(fin.Reason),
		Usage: usage{BilledUnits: tokens{b.BilledInput, b.BilledOutput}, Tokens: tokens{b.Input, b.Output}, CachedTokens: b.Cached}}})) == nil {
		_ = st.Frame("data: [DONE]\n\n")
	}
}

// How the fake's token counts differ from what it bills, read off the
// examples in Cohere's documentation (testdata/README.md).
const (
	// TemplateTokens is what the API adds to every prompt under the hood:
	// 165 in the text example (186 input tokens, 21 billed).
	TemplateTokens = 165
	// ToolTemplateTokens is what it adds when tools are offered, beyond
	// TemplateTokens: 711 in the tool-use example (913 input tokens, 37
	// billed).
	ToolTemplateTokens = 711
	// CallTokens is what each tool call adds to the output beyond its
	// arguments: 55 for two calls in the tool-use example (83 output tokens,
	// 28 billed), rounded down.
	CallTokens = 27
)

// Billing is the usage the fake reports in message-end.
type Billing struct {
	// BilledInput and BilledOutput are billed_units: what the caller pays
	// for.
	BilledInput, BilledOutput int
	// Input and Output are tokens: what the model saw and wrote.
	Input, Output int
	// Cached is cached_tokens: the part of Input that hit the prompt cache.
	Cached int
}

// Bill is the usage the fake reports for its answer to req. The fake model
// counts whitespace-led words (fake.CountTokens), and the fake bills
// them as Cohere bills tokens, which its pricing page explains as "there are
// situations in which Cohere adds tokens under the hood ... you are not
// charged for them":
//
//   - billed input is everything the caller sent, the system message and
//     the tool definitions included (the tool-use example bills 37 tokens
//     for a one-line question and one tool definition);
//   - billed output is what the model wrote: the reply, or the tool plan
//     and the calls' arguments (28 in the tool-use example: the 11 deltas of
//     its plan and the 17 of its arguments);
//   - the input tokens add the prompt template (TemplateTokens, and
//     ToolTemplateTokens with tools), the output tokens CallTokens per call;
//   - from the second message on, the template and the system message hit
//     the prompt cache.
func Bill(req model.Request) Billing { return bill(req, fake.Answer(req)) }

// bill is Bill for parts, the fake model's answer to req.
func bill(req model.Request, parts []model.Part) Billing {
	fin := parts[len(parts)-1].Finish
	b := Billing{BilledInput: fin.Usage.InputTokens, BilledOutput: fin.Usage.OutputTokens}
	template := TemplateTokens
	if len(req.Tools) > 0 {
		template += ToolTemplateTokens
	}
	calls := 0
	for _, p := range parts {
		if p.Kind == model.PartToolCallStart {
			calls++
		}
	}
	if calls > 0 {
		b.BilledOutput += fake.CountTokens(toolPlan(parts))
	}
	b.Input = b.BilledInput + template
	b.Output = b.BilledOutput + calls*CallTokens
	if len(req.Messages) > 1 {
		b.Cached = template + fake.CountTokens(req.System)
	}
	return b
}

// toModel reads a checked v2 chat request as the fake model's request. An
// assistant message's tool plan is its text, as the fake model sees it.
func toModel(req chatRequest) (model.Request, error) {
	out, err := upstream.ToModel(len(req.Messages), func(i int) upstream.Message { return req.Messages[i].Message }, func(i int) (string, error) {
		m := req.Messages[i]
		text, err := upstream.ContentText(m.Content, "content items", true)
		if err == nil && m.Role == "assistant" && len(m.ToolCalls) > 0 && m.ToolPlan != nil {
			// The fake model reads an assistant message's tool plan as its text.
			text = *m.ToolPlan
		}
		return text, err
	}, "system")
	if err != nil {
		return out, err
	}
	out.Tools = upstream.ToolSpecs(req.Tools)
	if req.MaxTokens != nil {
		out.MaxOutputTokens = *req.MaxTokens
	}
	return out, nil
}

func toolPlan(parts []model.Part) string {
	var names []string
	for _, p := range parts {
		if p.Kind == model.PartToolCallStart && !slices.Contains(names, p.ToolName) {
			names = append(names, p.ToolName)
		}
	}
	return fmt.Sprintf("I will use %s to answer.", strings.Join(names, " and "))
}

// finishReasons are Cohere's words for why an answer ended.
var finishReasons = upstream.FinishReasons{Stop: "COMPLETE", Length: "MAX_TOKENS", ToolCalls: "TOOL_CALL"}

func responseID(req model.Request) string {
	h := fnv.New128a()
	upstream.HashRequest(h, req)
	b := h.Sum(nil)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// frame renders one event as Cohere frames it: its type as the event name,
// the JSON on one data line.
func frame(e event) string {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // the fake's own types always encode
	}
	return "event: " + e.Type + "\ndata: " + string(b) + "\n\n"
}

func faultMessage(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "You are using a Trial key, which is limited to 20 API calls / minute. You can continue to use the Trial key for free or upgrade to a Production key with higher rate limits"
	case http.StatusServiceUnavailable:
		return "service unavailable"
	}
	return "internal server error, this has been reported to our developers"
}

// writeError answers with Cohere's error body: {"id": ..., "message": ...}.
func writeError(w http.ResponseWriter, status int, retryAfter, message string) {
	b, _ := json.Marshal(map[string]string{"id": "fake-error", "message": message})
	upstream.WriteError(w, status, retryAfter, b)
}
