package agent

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/companionhq/companion/internal/model"
)

// A processor guards a run: an input processor looks at the user's
// message before the model (in internal/turn, which then sets
// Input.Trip), an output processor at the reply's text as it streams
// (Input.Output). Either may trip: the run stops, and what the user sees
// is the trip's Text, never silence. A tripped run finishes with
// FinishTripped; its result carries the Trip, which every dialect shows.

// FinishTripped is the finish reason of a run a processor stopped, as
// Mastra's tripped runs give it.
const FinishTripped = "other"

// Notice kinds: what the user is told besides the reply.
const (
	NoticeAIDisclosure   = "ai-disclosure"
	NoticeBreakReminder  = "break-reminder"
	NoticeCrisisReferral = "crisis-referral"
)

// Notice is something the user must be told with a reply: that they talk
// to an AI, to take a break, where to find help.
type Notice struct {
	Kind string
	Text string
}

// Trip is why a processor stopped a run.
type Trip struct {
	// Processor is the processor's id; Code names the reason from a small
	// set (metrics count trips by both); Reason says it for people
	// (tripwireReason).
	Processor string
	Code      string
	Reason    string
	// Text is what the user is shown instead of (or after) the model's
	// text; Notice, when set, is told with it (a crisis referral), in the
	// texts of Locale.
	Text   string
	Notice *Notice
	Locale string
	// Instruction, when set, makes an input processor's trip a preface: the
	// run does not trip, the model still answers after Text (Input.Preface)
	// and is told Instruction with what the service knows (a crisis: answer
	// with care, after the referral).
	Instruction string
}

// OutputProcessor checks a reply's text as the model streams it.
type OutputProcessor interface {
	// ID names the processor in spans, metrics and logs.
	ID() string
	// Check is given the step's text so far, of which text[from:] is new
	// since its last call (the words before it were checked then, and need
	// not be again: the word from cuts into may not have been whole), and
	// returns a trip when it must stop; it runs on every piece of text.
	Check(text string, from int) *Trip
}

// tripped ends a run an input processor stopped: one step, whose text is
// the trip's, without a model call.
func (r *run) tripped(t Trip) error {
	if err := r.send(StepStarted{Index: 0, Kind: StepInitial, MessageID: r.replyID}); err != nil {
		return err
	}
	if t.Text != "" {
		if err := r.send(TextDelta{Text: t.Text}); err != nil {
			return err
		}
	}
	r.endTripped(0, StepInitial, t, t.Text, model.Request{System: r.system, Messages: r.convo})
	return r.send(StepFinished{Index: 0, Kind: StepInitial, FinishReason: FinishTripped})
}

// endTripped records step i, tripped with text: the run ends after it.
func (r *run) endTripped(i int, kind StepKind, t Trip, text string, req model.Request) {
	st := Step{Index: i, Kind: kind, Text: text, FinishReason: FinishTripped, Request: req, ModelID: r.a.cfg.Model.ID(),
		ResponseID: "resp-" + r.a.cfg.NewID(), Started: r.a.cfg.Now(), Total: r.total,
		ProviderMetadata: providerMetadata(r.a.cfg.Model.Provider(), nil)}
	msg := model.Message{Role: model.RoleAssistant, Content: text}
	st.Messages = []model.Message{msg}
	r.steps = append(r.steps, st)
	r.reply = append(r.reply, msg)
	r.convo = append(r.convo, msg)
	r.finish = FinishTripped
	r.trip = &t
}

// checkOutput runs the output processors on the step's text so far,
// text, of which text[from:] is new; the first that trips stops the step.
func (r *run) checkOutput(text string, from int) *Trip {
	for _, p := range r.in.Output {
		if t := p.Check(text, from); t != nil {
			if t.Processor == "" {
				t.Processor = p.ID()
			}
			return t
		}
	}
	return nil
}

// heldBack is how much of a step's text an output processor's check
// holds back: the word the model is still writing, which a check could
// only judge once it is whole. At most the last piece the model sent.
func heldBack(text string, piece int) int {
	i := strings.LastIndexAny(text, " \t\n.,;:!?\"'()")
	held := len(text) - (i + 1)
	return min(held, piece)
}

// tripAttrs are a tripped run's span attributes.
func tripAttrs(span trace.Span, t *Trip) {
	if t == nil {
		return
	}
	span.SetAttributes(attribute.Bool("companion.tripwire", true), attribute.String("companion.tripwire.processor", t.Processor),
		attribute.String("companion.tripwire.code", t.Code))
}
