package turn

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/model"
	"go.opentelemetry.io/otel/trace"
)

// A thread gets a short title after its first exchange: the model is asked
// for one off the reply's path, once the reply is stored, and the title is
// set only if the thread still has none (a title its owner set wins).

// Titler makes a thread's title from its first exchange.
type Titler interface {
	Title(ctx context.Context, userText, replyText string) (string, error)
}

// titleTimeout bounds asking for a title.
const titleTimeout = 30 * time.Second

// maxGeneratedTitle bounds a generated title, in runes.
const maxGeneratedTitle = 80

// title is a turn's last step: after a thread's first exchange, it asks
// for a title on a goroutine of its own, which the reply does not wait for.
func (t *Turns) title(ctx context.Context, s *State) error {
	// A tripped turn's exchange (a crisis referral, say) is not sent to the
	// model to be named: the thread stays untitled until a person names it.
	if t.cfg.Titler == nil || len(s.tail) > 0 || s.Result == nil || s.Result.Trip != nil {
		return nil
	}
	userText := lastUserText(s.In.Messages)
	reply := s.Result.Text()
	threadID := s.In.ThreadID
	// The request's values (its span, its request id) but neither its
	// cancellation nor its deadline.
	ctx = context.WithoutCancel(ctx)
	t.titles.Add(1)
	go func() {
		defer t.titles.Done()
		ctx, cancel := context.WithTimeout(ctx, titleTimeout)
		defer cancel()
		// A trace of its own, linked to the turn's: the turn's ends
		// without waiting for it.
		ctx, span := t.cfg.Tracer.Start(ctx, "companion.title", trace.WithNewRoot(), trace.WithLinks(trace.LinkFromContext(ctx)))
		defer span.End()
		title, err := t.cfg.Titler.Title(ctx, userText, reply)
		if err == nil {
			title = cleanTitle(title)
			if title != "" {
				_, err = t.cfg.Store.SetTitleIfEmpty(ctx, threadID, title, t.cfg.Now())
			}
		}
		if err != nil {
			t.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the thread could not be titled", slog.String("thread_id", threadID), slog.String("error", err.Error()))
		}
	}()
	return nil
}

// WaitTitles waits for the titles being made, or for ctx to end.
func (t *Turns) WaitTitles(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		t.titles.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cleanTitle is a model's answer as a title: one line, without quotes or a
// final full stop, at most maxGeneratedTitle runes.
func cleanTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Trim(s, "\"'“”‘’ ")
	s = strings.TrimSuffix(s, ".")
	if r := []rune(s); len(r) > maxGeneratedTitle {
		s = strings.TrimSpace(string(r[:maxGeneratedTitle]))
	}
	return s
}

// startSpan starts a span of the turn's own work.
func (t *Turns) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return t.cfg.Tracer.Start(ctx, "companion."+name)
}

// ModelTitler asks a model for a thread's title.
type ModelTitler struct{ Model model.Model }

// Title implements Titler: the model's answer to model.TitleInstructions
// over the first exchange.
func (m ModelTitler) Title(ctx context.Context, userText, replyText string) (string, error) {
	req := model.Request{System: model.TitleInstructions, MaxOutputTokens: 24, Messages: []model.Message{
		{Role: model.RoleUser, Content: userText}, {Role: model.RoleAssistant, Content: replyText},
		{Role: model.RoleUser, Content: "Title this conversation."},
	}}
	var b strings.Builder
	for p, err := range m.Model.Stream(ctx, req) {
		if err != nil {
			return "", err
		}
		if p.Kind == model.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}
