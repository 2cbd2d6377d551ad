package turn

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
)

// A turn guards its user (docs/safety.md): input processors look at the
// user's newest message before anything else sees it, and may change it
// (redact what is stored) or trip (the model is not called, and the user
// is shown the trip's text: a crisis referral, say); output processors
// check the reply as it streams (agent.Input.Output); and the user is told
// that they talk to an AI, and a minor to take a break, in notices.

// InputProcessor looks at the user's newest message before it is stored.
type InputProcessor interface {
	// ID names the processor in spans, metrics and logs.
	ID() string
	// Process returns text as it is to be stored and shown to the model
	// (text itself when unchanged), or a trip. An error is logged and the
	// message passes: a processor that cannot answer (a moderation
	// endpoint down) does not stop every conversation.
	Process(ctx context.Context, text string, in ProcessInput) (string, *agent.Trip, error)
}

// ProcessInput is what a processor knows of the message's user.
type ProcessInput struct {
	ResourceID string
	Locale     string
	// Minor is what the request says (a credential's mark, the request's
	// metadata): input processors run before the thread is taken, with
	// which a resource's stored mark is read (settings.go), so a resource
	// marked a minor in the store alone is not one here yet.
	Minor bool
}

// InteractionGap is how long a thread stays quiet before its next message
// starts a new interaction, told again that it talks to an AI.
const InteractionGap = 30 * time.Minute

// Defaults of SafetyConfig.
const (
	DefaultDisclosure            = "You are talking to an AI companion, not a person."
	DefaultDisclosureInterval    = 3 * time.Hour
	DefaultBreakReminder         = "You have been chatting for a while. This is a good moment to take a break."
	DefaultBreakReminderInterval = 3 * time.Hour
)

// SafetyConfig says how turns guard their users.
type SafetyConfig struct {
	// Input are the input processors, in order; Output the output
	// processors of every reply, MinorOutput those of a minor's besides.
	Input       []InputProcessor
	Output      []agent.OutputProcessor
	MinorOutput []agent.OutputProcessor
	// Disclosure is the ai-disclosure notice, "" for none: told at the
	// start of each interaction (a thread's first turn, or its first after
	// InteractionGap of quiet) and again every DisclosureInterval of a
	// continuing one.
	Disclosure         string
	DisclosureInterval time.Duration
	// BreakReminder is the break-reminder notice of a minor, "" for none:
	// told every BreakReminderInterval of continuing interaction.
	BreakReminder         string
	BreakReminderInterval time.Duration
}

// guard is a turn's step: the input processors, in order, on the request's
// newest user message. A trip ends the steps that prepare the model's
// call (the message is still stored, by take).
func (t *Turns) guard(ctx context.Context, s *State) error {
	procs := t.cfg.Safety.Input
	i := lastUser(s.In.Messages)
	if len(procs) == 0 || i < 0 {
		return nil
	}
	in := ProcessInput{ResourceID: s.In.ResourceID, Locale: s.In.Locale, Minor: s.In.Minor}
	msgs := s.In.Messages
	text := msgs[i].Content
	for _, p := range procs {
		ctx, span := t.startSpan(ctx, "processor "+p.ID())
		span.SetAttributes(attribute.String("companion.processor", p.ID()))
		out, trip, err := p.Process(ctx, text, in)
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
			t.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "an input processor failed; the message passes",
				slog.String("processor", p.ID()), slog.String("error", err.Error()))
		case trip != nil:
			if trip.Processor == "" {
				trip.Processor = p.ID()
			}
			span.SetAttributes(attribute.Bool("companion.tripwire", true), attribute.String("companion.tripwire.code", trip.Code))
			span.End()
			s.trip = trip
			s.In.Messages = withContent(msgs, i, text)
			return nil
		default:
			if out != text {
				span.SetAttributes(attribute.Bool("companion.processor.changed", true))
			}
			text = out
		}
		span.End()
	}
	s.In.Messages = withContent(msgs, i, text)
	return nil
}

// withContent is msgs with message i's content text: a copy when it
// changes, for the request's messages are the caller's.
func withContent(msgs []agent.Message, i int, text string) []agent.Message {
	if msgs[i].Content == text {
		return msgs
	}
	out := make([]agent.Message, len(msgs))
	copy(out, msgs)
	out[i].Content = text
	return out
}

// lastUser is the index of msgs' newest user message, -1 for none.
func lastUser(msgs []agent.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return i
		}
	}
	return -1
}

// tripped reports whether an input processor tripped: the steps that
// prepare the model's call have nothing to do.
func (s *State) tripped() bool { return s.trip != nil }

// notify is a turn's step: the notices the reply carries. The thread as
// taken (s.Thread, read before this turn's messages) says when it began and
// when it last changed, which is all the disclosure's rule needs.
func (t *Turns) notify(ctx context.Context, s *State) error {
	cfg := t.cfg.Safety
	th, now := s.Thread, s.Now
	fresh := len(s.tail) == 0 || now.Sub(th.UpdatedAt) >= InteractionGap
	crossed := func(every time.Duration) bool {
		if every <= 0 || th.CreatedAt.IsZero() {
			return false
		}
		return now.Sub(th.CreatedAt)/every > th.UpdatedAt.Sub(th.CreatedAt)/every
	}
	if cfg.Disclosure != "" && (fresh || crossed(cfg.DisclosureInterval)) {
		s.In.Notices = append(s.In.Notices, agent.Notice{Kind: agent.NoticeAIDisclosure, Text: cfg.Disclosure})
	}
	if s.In.Minor && cfg.BreakReminder != "" && !fresh && crossed(cfg.BreakReminderInterval) {
		s.In.Notices = append(s.In.Notices, agent.Notice{Kind: agent.NoticeBreakReminder, Text: cfg.BreakReminder})
	}
	if s.trip != nil && s.trip.Notice != nil {
		// Known before the run starts: told with the others, in the
		// stream's start.
		s.In.Notices = append(s.In.Notices, *s.trip.Notice)
		if s.trip.Notice.Kind == agent.NoticeCrisisReferral {
			t.cfg.Observer.Referred(s.trip.Locale)
			// Counted for the yearly report: the day and locale alone.
			// A count that fails is logged and the turn goes on: the user
			// sees the referral all the same.
			if err := t.cfg.Store.CountReferral(ctx, memory.Day(s.Now), s.trip.Locale); err != nil {
				t.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "a crisis referral could not be counted",
					slog.String("locale", s.trip.Locale), slog.String("error", err.Error()))
			}
		}
		s.trip.Notice = nil
	}
	if s.trip != nil && s.trip.Instruction != "" {
		// A preface, not a trip: the processor's words open the reply, and
		// the model answers after them, told what it must know.
		s.In.Preface = s.trip.Text + "\n\n"
		s.In.Context = append(s.In.Context, s.trip.Instruction)
		s.trip = nil
	}
	s.In.Trip = s.trip
	if !s.tripped() {
		s.In.Output = cfg.Output
		if s.In.Minor {
			s.In.Output = append(s.In.Output[:len(s.In.Output):len(s.In.Output)], cfg.MinorOutput...)
		}
	}
	return nil
}
