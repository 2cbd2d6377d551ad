// Package openai is a fake of the OpenAI-compatible chat completions API
// (POST /v1/chat/completions with "stream": true) that answers like the fake
// model (internal/model/fake) in that wire format: Server-Sent Events whose
// data are chat.completion.chunk objects (choices[].delta with content or
// tool_calls merged by index, finish_reason), a last chunk with usage when
// stream_options.include_usage is set, then data: [DONE]. The shapes follow
// the example streams kept in testdata/ (see its README for where each comes
// from) and are compared with them in the tests. It refuses with 400, in OpenAI's error body, the requests the real
// API refuses (see Check).
//
// It also answers POST /v1/moderations, and chat requests to the model
// "fake-guard" as a guard model, both by the fixed rules of Moderate.
//
// It is deterministic, runs in-process (it is an http.Handler) or as a
// process (fakes openai), and takes the knobs of fakes/upstream: pace per
// token, first-token delay, and injected faults.
package openai

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"

	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
)

// Created is the "created" time of every chunk: fixed, so that answers are
// deterministic.
const Created = 1735689600

// Server is the fake. It is safe for concurrent use.
type Server struct {
	*upstream.Core
}

// New returns a fake OpenAI-compatible server with opts.
func New(opts upstream.Options) *Server { return &Server{Core: upstream.NewCore(opts)} }

// chatRequest is the part of a chat completions request the fake reads.
type chatRequest struct {
	Model               string             `json:"model"`
	Messages            []upstream.Message `json:"messages"`
	Tools               []upstream.Tool    `json:"tools"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Stream              bool               `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// ServeHTTP serves POST /v1/chat/completions and POST /v1/moderations (and
// both without /v1, for a base URL given without it). A chat request to
// GuardModel is answered as a guard model would, streamed or not; any
// other model streams only.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	ex, done := s.Begin(r, body)
	defer done()
	switch {
	case r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions" && r.URL.Path != "/v1/moderations" && r.URL.Path != "/moderations":
		writeError(w, http.StatusNotFound, "", "Invalid URL (POST "+r.URL.Path+")", "invalid_request_error", "")
		return
	case r.Method != http.MethodPost:
		writeError(w, http.StatusMethodNotAllowed, "", "Method not allowed", "invalid_request_error", "")
		return
	case !ex.Authorized:
		writeError(w, http.StatusUnauthorized, "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", "")
		return
	case ex.Fault != nil && ex.Fault.Kind == upstream.FaultStatus:
		msg, typ, code := faultError(ex.Fault.Status)
		writeError(w, ex.Fault.Status, ex.Fault.RetryAfter, msg, typ, code)
		return
	case r.URL.Path == "/v1/moderations" || r.URL.Path == "/moderations":
		s.moderations(w, r, ex, body)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "", "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return
	}
	if err := Check(req); err != nil {
		r := err.(*refusal)
		writeParamError(w, http.StatusBadRequest, r.message, r.param)
		return
	}
	mreq, err := toModel(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "", err.Error(), "invalid_request_error", "")
		return
	}
	if req.Model == GuardModel {
		s.guard(w, r, ex, mreq, req.Model, req.Stream, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	if !req.Stream {
		writeError(w, http.StatusBadRequest, "", "this fake answers streaming requests only (\"stream\": true)", "invalid_request_error", "")
		return
	}
	s.answer(w, r, ex, mreq, req.Model, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
}

// Wire shapes, fields in the order the real API sends them.
type (
	chunk struct {
		ID                string   `json:"id"`
		Object            string   `json:"object"`
		Created           int64    `json:"created"`
		Model             string   `json:"model"`
		SystemFingerprint string   `json:"system_fingerprint"`
		Choices           []choice `json:"choices"`
		Usage             *usage   `json:"usage,omitempty"`
		// NullUsage writes "usage":null, as the real API does on every
		// chunk but the last when usage was asked for.
		NullUsage bool `json:"-"`
	}
	choice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		Logprobs     *string `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	}
	delta struct {
		Role      string     `json:"role,omitempty"`
		Content   *string    `json:"content,omitempty"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	toolCall struct {
		Index    int      `json:"index"`
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type,omitempty"`
		Function function `json:"function"`
	}
	function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
			AudioTokens  int `json:"audio_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens          int `json:"reasoning_tokens"`
			AudioTokens              int `json:"audio_tokens"`
			AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
			RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
		} `json:"completion_tokens_details"`
	}
)

// malformed is the chunk the malformed fault sends: JSON cut in the middle.
const malformed = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\n\n"

func (s *Server) answer(w http.ResponseWriter, r *http.Request, ex *upstream.Exchange, req model.Request, modelName string, withUsage bool) {
	parts := fake.Answer(req)
	fin := parts[len(parts)-1].Finish
	id := "chatcmpl-" + responseID(req)
	mk := func(d delta, finish *string) string {
		return frame(chunk{ID: id, Object: "chat.completion.chunk", Created: Created, Model: modelName,
			SystemFingerprint: "fp_fake", Choices: []choice{{Delta: d, FinishReason: finish}}, NullUsage: withUsage})
	}
	st := s.NewStream(w, r, ex)
	empty := ""
	opening := delta{Role: "assistant", Content: &empty}
	err := st.Frame(mk(opening, nil))
	callIndex := map[string]int{}
	for _, p := range parts {
		if err != nil {
			break
		}
		switch p.Kind {
		case model.PartText:
			text := p.Text
			err = st.Token(mk(delta{Content: &text}, nil), malformed)
		case model.PartToolCallStart:
			i := len(callIndex)
			callIndex[p.ToolCallID] = i
			err = st.Token(mk(delta{ToolCalls: []toolCall{{Index: i, ID: p.ToolCallID, Type: "function",
				Function: function{Name: p.ToolName, Arguments: p.Text}}}}, nil), malformed)
		case model.PartToolCallDelta:
			err = st.Token(mk(delta{ToolCalls: []toolCall{{Index: callIndex[p.ToolCallID], Function: function{Arguments: p.Text}}}}, nil), malformed)
		}
	}
	if err == nil {
		err = st.End(malformed)
	}
	if err != nil {
		return
	}
	reason := finishReasons.Of(fin.Reason)
	err = st.Frame(mk(delta{}, &reason))
	if err == nil && withUsage {
		u := &usage{PromptTokens: fin.Usage.InputTokens, CompletionTokens: fin.Usage.OutputTokens, TotalTokens: fin.Usage.TotalTokens}
		u.PromptTokensDetails.CachedTokens = fin.Usage.CachedInputTokens
		u.CompletionTokensDetails.ReasoningTokens = fin.Usage.ReasoningTokens
		err = st.Frame(frame(chunk{ID: id, Object: "chat.completion.chunk", Created: Created, Model: modelName,
			SystemFingerprint: "fp_fake", Choices: []choice{}, Usage: u}))
	}
	if err == nil {
		_ = st.Frame("data: [DONE]\n\n")
	}
}

// toModel reads a chat completions request, which Check accepted, as the
// fake model's request.
func toModel(req chatRequest) (model.Request, error) {
	out, err := upstream.ToModel(len(req.Messages), func(i int) upstream.Message { return req.Messages[i] }, func(i int) (string, error) {
		return upstream.ContentText(req.Messages[i].Content, "content parts", false)
	}, "system", "developer")
	if err != nil {
		return out, err
	}
	out.Tools = upstream.ToolSpecs(req.Tools)
	switch {
	case req.MaxCompletionTokens != nil:
		out.MaxOutputTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		out.MaxOutputTokens = *req.MaxTokens
	}
	return out, nil
}

// finishReasons are OpenAI's words for why an answer ended.
var finishReasons = upstream.FinishReasons{Stop: "stop", Length: "length", ToolCalls: "tool_calls"}

func responseID(req model.Request) string {
	h := fnv.New64a()
	upstream.HashRequest(h, req)
	return fmt.Sprintf("%016x", h.Sum64())
}

// frame renders one chunk as a data line.
func frame(c chunk) string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // the fake's own types always encode
	}
	if c.NullUsage && c.Usage == nil {
		// The real API puts "usage":null after choices on every chunk but
		// the last when usage was asked for.
		b = append(b[:len(b)-1], []byte(`,"usage":null}`)...)
	}
	return "data: " + string(b) + "\n\n"
}

func faultError(status int) (msg, typ, code string) {
	switch status {
	case http.StatusTooManyRequests:
		return "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
	case http.StatusServiceUnavailable:
		return "The engine is currently overloaded, please try again later.", "server_error", ""
	}
	return "The server had an error while processing your request. Sorry about that!", "server_error", ""
}

// writeParamError answers a refused request with OpenAI's error body
// naming the param at fault.
func writeParamError(w http.ResponseWriter, status int, message, param string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": param, "code": nil}})
	upstream.WriteError(w, status, "", b)
}

// writeError answers with OpenAI's error body:
// {"error": {"message", "type", "param", "code"}}.
func writeError(w http.ResponseWriter, status int, retryAfter, message, typ, code string) {
	var c *string
	if code != "" {
		c = &code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
	upstream.WriteError(w, status, retryAfter, b)
}
