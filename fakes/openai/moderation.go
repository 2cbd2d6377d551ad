package openai

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/model"
)

// GuardModel is the chat model name the fake answers as a guard model, in
// the Llama Guard manner: "safe", or "unsafe" and a line of hazard codes.
const GuardModel = "fake-guard"

// DefaultModerationModel is the model a moderations request without one
// gets, as OpenAI's.
const DefaultModerationModel = "omni-moderation-latest"

// moderationCategories are OpenAI's moderation categories: every answer
// holds them all.
var moderationCategories = [...]string{
	"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
	"self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors", "violence", "violence/graphic",
}

// Moderate is the fake's moderation of text, the OpenAI categories it
// flags, sorted: "self-harm" and "self-harm/intent" for a first-person
// phrase of self-harm ("kill myself", "end my life", "want to die", "hurt
// myself", "I'm suicidal", "I want to commit suicide"...), "sexual" for an
// explicit request ("have sex", "send nudes"...), "violence" for a threat
// ("kill you", "murder", "stab"...). Phrases match whole words, in any
// case; anything else is not flagged, a mention of suicide in the third
// person included.
func Moderate(text string) []string {
	t := strings.ToLower(strings.ReplaceAll(text, "\u2019", "'"))
	var out []string
	if anyPhrase(t, selfHarmPhrases) {
		out = append(out, "self-harm", "self-harm/intent")
	}
	if anyPhrase(t, sexualPhrases) {
		out = append(out, "sexual")
	}
	if anyPhrase(t, violencePhrases) {
		out = append(out, "violence")
	}
	slices.Sort(out)
	return out
}

var (
	selfHarmPhrases = []string{"kill myself", "killing myself", "end my life", "ending my life", "take my own life", "want to die",
		"wanna die", "hurt myself", "hurting myself", "harm myself", "harming myself", "cut myself", "cutting myself",
		"i'm suicidal", "i am suicidal", "feel suicidal", "feeling suicidal", "want to commit suicide", "going to commit suicide",
		"i'll commit suicide", "i will commit suicide", "thinking about suicide", "thinking of suicide"}
	sexualPhrases   = []string{"have sex", "having sex", "sex with me", "sexual roleplay", "explicit sex", "send nudes", "nude photos", "naked photos", "talk dirty"}
	violencePhrases = []string{"kill you", "kill him", "kill her", "kill them", "murder", "stab", "shoot you", "shoot him", "shoot her",
		"shoot them", "beat you up", "beat him up", "beat her up", "blow up"}
)

// anyPhrase reports whether t holds one of phrases as whole words.
func anyPhrase(t string, phrases []string) bool {
	for _, p := range phrases {
		for from := 0; ; {
			i := strings.Index(t[from:], p)
			if i < 0 {
				break
			}
			i += from
			end := i + len(p)
			if (i == 0 || !wordByte(t[i-1])) && (end == len(t) || !wordByte(t[end])) {
				return true
			}
			from = i + 1
		}
	}
	return false
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
}

// GuardAnswer is what the fake guard model answers for text: "safe", or
// "unsafe" and the hazard codes of what Moderate flags (S1 violent crimes,
// S11 self-harm, S12 sexual content), in order.
func GuardAnswer(text string) string {
	flagged := Moderate(text)
	var codes []string
	for _, h := range [...]struct{ category, code string }{{"violence", "S1"}, {"self-harm", "S11"}, {"sexual", "S12"}} {
		if slices.Contains(flagged, h.category) {
			codes = append(codes, h.code)
		}
	}
	if len(codes) == 0 {
		return "safe"
	}
	return "unsafe\n" + strings.Join(codes, ",")
}

// moderationRequest is what the fake reads of a moderations request.
type moderationRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

type (
	moderationResponse struct {
		ID      string             `json:"id"`
		Model   string             `json:"model"`
		Results []moderationResult `json:"results"`
	}
	moderationResult struct {
		Flagged        bool                `json:"flagged"`
		Categories     map[string]bool     `json:"categories"`
		CategoryScores map[string]float64  `json:"category_scores"`
		AppliedTypes   map[string][]string `json:"category_applied_input_types,omitempty"`
	}
)

// moderations answers POST /v1/moderations: one result for a string input
// or for a list of text (and image) parts, one per string of a list of
// strings, as OpenAI does; omni-moderation models also say which input
// types each category applied to.
func (s *Server) moderations(w http.ResponseWriter, r *http.Request, ex *upstream.Exchange, body []byte) {
	var req moderationRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "", "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return
	}
	texts, ok := moderationInputs(req.Input)
	if !ok {
		writeParamError(w, http.StatusBadRequest, "Invalid value for 'input': expected a string, an array of strings or an array of content parts.", "input")
		return
	}
	if req.Model == "" {
		req.Model = DefaultModerationModel
	}
	h := fnv.New64a()
	fmt.Fprint(h, req.Model)
	res := moderationResponse{Model: req.Model, Results: []moderationResult{}}
	for _, t := range texts {
		fmt.Fprint(h, "\x00", t)
		flagged := Moderate(t)
		out := moderationResult{Flagged: len(flagged) > 0, Categories: map[string]bool{}, CategoryScores: map[string]float64{}}
		if strings.HasPrefix(req.Model, "omni-moderation") {
			out.AppliedTypes = map[string][]string{}
		}
		for _, c := range moderationCategories {
			on := slices.Contains(flagged, c)
			out.Categories[c] = on
			out.CategoryScores[c] = 0.0001
			if on {
				out.CategoryScores[c] = 0.95
			}
			if out.AppliedTypes != nil {
				out.AppliedTypes[c] = []string{}
				if on {
					out.AppliedTypes[c] = []string{"text"}
				}
			}
		}
		res.Results = append(res.Results, out)
	}
	res.ID = fmt.Sprintf("modr-%016x", h.Sum64())
	s.whole(w, r, ex, res)
}

// moderationInputs reads a moderations input: a string, a list of strings,
// or a list of content parts whose text parts make one text.
func moderationInputs(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return nil, false
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
		default:
			return nil, false
		}
	}
	return []string{strings.Join(texts, "\n")}, true
}

// completion is a chat completion that is not streamed.
type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []completionChoice `json:"choices"`
	Usage             usage              `json:"usage"`
	SystemFingerprint string             `json:"system_fingerprint"`
}

type completionChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role    string  `json:"role"`
		Content string  `json:"content"`
		Refusal *string `json:"refusal"`
	} `json:"message"`
	Logprobs     *string `json:"logprobs"`
	FinishReason string  `json:"finish_reason"`
}

// guard answers a chat request to GuardModel about the text of its last
// message, streamed or not, with GuardAnswer.
func (s *Server) guard(w http.ResponseWriter, r *http.Request, ex *upstream.Exchange, req model.Request, modelName string, stream, withUsage bool) {
	text := ""
	if n := len(req.Messages); n > 0 {
		text = req.Messages[n-1].Content
	}
	answer := GuardAnswer(text)
	id := "chatcmpl-" + responseID(req)
	u := usage{PromptTokens: len(strings.Fields(text)) + 1, CompletionTokens: len(strings.Fields(answer))}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if !stream {
		c := completion{ID: id, Object: "chat.completion", Created: Created, Model: modelName, Usage: u, SystemFingerprint: "fp_fake",
			Choices: []completionChoice{{FinishReason: "stop"}}}
		c.Choices[0].Message.Role = "assistant"
		c.Choices[0].Message.Content = answer
		s.whole(w, r, ex, c)
		return
	}
	mk := func(d delta, finish *string) string {
		return frame(chunk{ID: id, Object: "chat.completion.chunk", Created: Created, Model: modelName,
			SystemFingerprint: "fp_fake", Choices: []choice{{Delta: d, FinishReason: finish}}, NullUsage: withUsage})
	}
	st := s.NewStream(w, r, ex)
	empty := ""
	err := st.Frame(mk(delta{Role: "assistant", Content: &empty}, nil))
	if err == nil {
		err = st.Token(mk(delta{Content: &answer}, nil), malformed)
	}
	if err == nil {
		err = st.End(malformed)
	}
	if err != nil {
		return
	}
	stop := "stop"
	err = st.Frame(mk(delta{}, &stop))
	if err == nil && withUsage {
		err = st.Frame(frame(chunk{ID: id, Object: "chat.completion.chunk", Created: Created, Model: modelName,
			SystemFingerprint: "fp_fake", Choices: []choice{}, Usage: &u}))
	}
	if err == nil {
		_ = st.Frame("data: [DONE]\n\n")
	}
}

// whole answers v as one JSON body after the first-token delay, and
// applies the exchange's stream fault to it: malformed sends half the
// body, cut drops the connection before the body, hang waits for the
// client to leave.
func (s *Server) whole(w http.ResponseWriter, r *http.Request, ex *upstream.Exchange, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the fake's own types always encode
	}
	if d := s.Options().FirstTokenDelay; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
	if f := ex.Fault; f != nil && f.Kind != upstream.FaultStatus {
		switch f.Kind {
		case upstream.FaultMalformed:
			b = b[:len(b)/2]
		case upstream.FaultCut:
			panic(http.ErrAbortHandler)
		case upstream.FaultHang:
			<-r.Context().Done()
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
