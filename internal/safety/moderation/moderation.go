// Package moderation checks a text through the operator's moderation
// provider: OpenAI's moderations endpoint (or a server that speaks it), or
// a guard model such as Llama Guard behind an OpenAI-compatible chat
// completions endpoint. A check's Verdict says whether the text was
// flagged and why; what to do about it is the caller's business.
//
// Like the model providers it speaks HTTP with net/http and encoding/json,
// retries nothing and reads nothing from the environment. The API key is a
// redact.Secret and never appears in an error: a provider's error body is
// cut short and the key removed from it before it is quoted.
package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/redact"
)

// Verdict is a check's outcome.
type Verdict struct {
	Flagged bool
	// Categories are the provider's flagged categories, sorted, e.g.
	// "self-harm/intent", "sexual/minors", "violence".
	Categories []string
	// SelfHarm tells whether any self-harm category was flagged (for the
	// crisis protocol).
	SelfHarm bool
	// Sexual tells whether any sexual category was flagged.
	Sexual bool
}

// Reason is the verdict as a tripwire reason: "moderation: " and the
// categories joined by ", " ("moderation: flagged" when the provider named
// none).
func (v Verdict) Reason() string {
	if len(v.Categories) == 0 {
		return "moderation: flagged"
	}
	return "moderation: " + strings.Join(v.Categories, ", ")
}

// verdict builds a Verdict from the flagged categories, which it sorts.
func verdict(flagged bool, categories []string) Verdict {
	slices.Sort(categories)
	categories = slices.Compact(categories)
	v := Verdict{Flagged: flagged || len(categories) > 0, Categories: categories}
	for _, c := range categories {
		v.SelfHarm = v.SelfHarm || c == "self-harm" || strings.HasPrefix(c, "self-harm/")
		v.Sexual = v.Sexual || c == "sexual" || strings.HasPrefix(c, "sexual/")
	}
	return v
}

// Checker checks a text.
type Checker interface {
	Check(ctx context.Context, text string) (Verdict, error)
}

// Config configures a checker.
type Config struct {
	// BaseURL is the server's address, with or without the API's /v1:
	// https://api.openai.com and https://api.openai.com/v1 both work.
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey redact.Secret
	// Model is the moderation or guard model; empty lets OpenAI's
	// moderations endpoint choose, and a guard needs one.
	Model string
	// HTTPClient sends the requests; nil uses a client of its own.
	HTTPClient *http.Client
	// Timeout bounds each check; 0 leaves it to ctx.
	Timeout time.Duration
}

// StatusError is a provider's non-2xx answer.
type StatusError struct {
	Status int
	// Detail is the provider's own error message, on one line, cut short,
	// without the API key.
	Detail string
}

func (e *StatusError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: the provider said: %s", e.Status, e.Detail)
}

// maxResponse bounds a provider's answer: a moderation result or a guard's
// verdict is well under a kilobyte.
const maxResponse = 1 << 20

// client is what both checkers share: the endpoint, the key, the policy.
type client struct {
	cfg      Config
	endpoint string // the full URL
	name     string // the endpoint for errors, its password hidden
	kind     string // what errors call the checker
}

func newClient(cfg Config, path, kind string) client {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return client{cfg: cfg, endpoint: base + path, name: redact.URL(base + path), kind: kind}
}

// post sends body as JSON and decodes a 2xx answer into out.
func (c client) post(ctx context.Context, body, out any) error {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	b, err := json.Marshal(body)
	if err != nil {
		return c.fail(fmt.Errorf("encoding the request: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(b))
	if err != nil {
		return c.fail(errors.New("the base URL is not valid"))
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+string(c.cfg.APIKey))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return c.fail(c.transport(ctx, err))
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		detail, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		return c.fail(&StatusError{Status: res.StatusCode, Detail: c.hide(model.OpenAIErrorMessage(detail))})
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponse+1))
	if err != nil {
		return c.fail(fmt.Errorf("reading the answer: %w", c.transport(ctx, err)))
	}
	if len(data) > maxResponse {
		return c.fail(fmt.Errorf("the answer is larger than %d bytes", maxResponse))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return c.fail(fmt.Errorf("the answer is not the expected JSON: %w", err))
	}
	return nil
}

// transport describes a failure to reach the provider or read its answer
// without the request's URL, which url.Error would repeat: the endpoint is
// named once, by fail. A timeout says how long was waited.
func (c client) transport(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) && c.cfg.Timeout > 0 && ctx.Err() != nil {
		return fmt.Errorf("no answer within %s: %w", c.cfg.Timeout, err)
	}
	return err
}

func (c client) fail(err error) error {
	return fmt.Errorf("moderation: %s at %s: %w", c.kind, c.name, err)
}

// hide puts detail on one line of at most 300 bytes, without the key.
func (c client) hide(detail string) string {
	return model.OneLine(model.Redact(detail, string(c.cfg.APIKey)), 300)
}
