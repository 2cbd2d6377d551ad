package moderation

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Guard asks a guard model whether a text is safe, in the Llama Guard
// manner, through an OpenAI-compatible chat completions endpoint
// (POST {base}/v1/chat/completions, not streamed): the text is the user's
// message, and the model answers "safe", or "unsafe" and a line of the
// MLCommons hazard codes it found (S1 to S14), which the verdict names
// (see Hazard). Any other answer is an error, never "safe". It is safe for
// concurrent use.
type Guard struct {
	c client
}

var _ Checker = (*Guard)(nil)

// NewGuard returns a guard checker for cfg; cfg.Model names the guard
// model.
func NewGuard(cfg Config) *Guard {
	return &Guard{c: newClient(cfg, "/chat/completions", "guard")}
}

// Hazard names a hazard code of the MLCommons taxonomy that Llama Guard 3
// and 4 answer with, in the words of OpenAI's categories where there is
// one, so that a verdict reads alike from either checker. ok is false for a
// code the taxonomy does not have.
func Hazard(code string) (name string, ok bool) {
	switch code {
	case "S1":
		return "violent-crimes", true
	case "S2":
		return "non-violent-crimes", true
	case "S3":
		return "sex-related-crimes", true
	case "S4":
		return "sexual/minors", true
	case "S5":
		return "defamation", true
	case "S6":
		return "specialized-advice", true
	case "S7":
		return "privacy", true
	case "S8":
		return "intellectual-property", true
	case "S9":
		return "indiscriminate-weapons", true
	case "S10":
		return "hate", true
	case "S11":
		return "self-harm", true
	case "S12":
		return "sexual", true
	case "S13":
		return "elections", true
	case "S14":
		return "code-interpreter-abuse", true
	}
	return "", false
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Stream      bool          `json:"stream"`
	MaxTokens   int           `json:"max_tokens"`
	Temperature float64       `json:"temperature"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// guardMaxTokens leaves room for "unsafe" and all fourteen codes.
const guardMaxTokens = 64

// Check implements Checker.
func (g *Guard) Check(ctx context.Context, text string) (Verdict, error) {
	if g.c.cfg.Model == "" {
		return Verdict{}, g.c.fail(errors.New("no guard model is configured"))
	}
	req := chatRequest{Model: g.c.cfg.Model, Messages: []chatMessage{{Role: "user", Content: text}}, MaxTokens: guardMaxTokens}
	var res chatResponse
	if err := g.c.post(ctx, req, &res); err != nil {
		return Verdict{}, err
	}
	if len(res.Choices) == 0 {
		return Verdict{}, g.c.fail(errors.New("the answer holds no choice"))
	}
	v, err := ParseGuard(res.Choices[0].Message.Content)
	if err != nil {
		return Verdict{}, g.c.fail(err)
	}
	return v, nil
}

// ParseGuard reads a guard model's answer: "safe", or "unsafe" and, on the
// next line, hazard codes separated by commas ("unsafe\nS4,S12"). Case and
// surrounding space do not matter; a code Hazard does not name is kept as
// the model wrote it, and "unsafe" without codes is flagged without
// categories. Anything else is an error that quotes the answer's start: a
// guard that cannot be read has not said the text is safe.
func ParseGuard(answer string) (Verdict, error) {
	first, rest, _ := strings.Cut(strings.TrimSpace(answer), "\n")
	switch strings.ToLower(strings.TrimSpace(first)) {
	case "safe":
		if strings.TrimSpace(rest) != "" {
			return Verdict{}, fmt.Errorf("the guard answered %s: \"safe\" followed by more", quoteStart(answer))
		}
		return Verdict{}, nil
	case "unsafe":
	default:
		return Verdict{}, fmt.Errorf("the guard answered %s, neither \"safe\" nor \"unsafe\"", quoteStart(answer))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	var categories []string
	for code := range strings.SplitSeq(line, ",") {
		code = strings.ToUpper(strings.TrimSpace(code))
		if code == "" {
			continue
		}
		name, ok := Hazard(code)
		if !ok {
			if len(code) > 16 || strings.ContainsAny(code, " \t") {
				return Verdict{}, fmt.Errorf("the guard answered %s: %q is not a hazard code", quoteStart(answer), code[:min(len(code), 16)])
			}
			name = code
		}
		categories = append(categories, name)
	}
	return verdict(true, categories), nil
}

// quoteStart quotes the first bytes of a guard's answer for an error: enough
// to see what it said, too little to carry much of a user's text into logs.
func quoteStart(answer string) string {
	const n = 40
	if len(answer) > n {
		return fmt.Sprintf("%q...", answer[:n])
	}
	return fmt.Sprintf("%q", answer)
}
