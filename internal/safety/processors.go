package safety

import (
	"context"
	"strings"
	"unicode"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/safety/crisis"
	"github.com/companionhq/companion/internal/safety/moderation"
	"github.com/companionhq/companion/internal/safety/pii"
	"github.com/companionhq/companion/internal/turn"
)

// Processor ids.
const (
	CrisisID       = "crisis"
	ModerationID   = "moderation"
	PIIID          = "pii"
	MinorContentID = "minor-content"
)

// Crisis is the crisis protocol's processor: a message in which detect
// finds suicidal ideation or self-harm trips, and the reply is the
// operator's referral in the user's locale, never the model's wording.
type Crisis struct {
	detector  *crisis.Detector
	referrals Referrals
	// withModel lets the model answer after the referral, told
	// CrisisInstruction: the run does not trip.
	withModel bool
}

// CrisisInstruction is what the model is told when it answers after a
// crisis referral (-crisis-reply model).
const CrisisInstruction = `<safety>
The user's last message speaks of suicide or self-harm. The service has already shown them a crisis line, at the start of your reply: do not repeat it.
Answer with warmth and care, briefly: acknowledge what they feel, without judging; never give information about methods; ask whether they are safe right now; encourage them to reach out to the crisis line or to someone they trust today; say that you are here to keep talking.
</safety>`

// WithModel returns c letting the model answer after the referral, with
// CrisisInstruction, instead of the referral alone (a trip).
func (c *Crisis) WithModel() *Crisis {
	m := *c
	m.withModel = true
	return &m
}

var _ turn.InputProcessor = (*Crisis)(nil)

// NewCrisis returns the crisis protocol: the offline detector
// (internal/safety/crisis) with referrals.
func NewCrisis(referrals Referrals) *Crisis {
	return &Crisis{detector: crisis.New(), referrals: referrals}
}

// ID implements turn.InputProcessor.
func (*Crisis) ID() string { return CrisisID }

// Process implements turn.InputProcessor.
func (c *Crisis) Process(_ context.Context, text string, in turn.ProcessInput) (string, *agent.Trip, error) {
	f := c.detector.Detect(text)
	if !f.Detected() {
		return text, nil, nil
	}
	return text, c.Trip(f.Kind, in.Locale), nil
}

// Trip is the crisis protocol's trip for a finding of kind, in locale's
// texts: also what another processor's self-harm verdict trips with.
func (c *Crisis) Trip(kind, locale string) *agent.Trip {
	loc, t := c.referrals.For(locale)
	reply := t.Referral
	if t.Reply != "" && !c.withModel {
		reply = t.Reply + "\n\n" + t.Referral
	}
	trip := &agent.Trip{Processor: CrisisID, Code: kind, Reason: "crisis: " + strings.ReplaceAll(kind, "-", " "),
		Text: reply, Notice: &agent.Notice{Kind: agent.NoticeCrisisReferral, Text: t.Referral}, Locale: loc}
	if c.withModel {
		trip.Instruction = CrisisInstruction
	}
	return trip
}

// Moderation is the moderation processor: a message the operator's
// moderation provider flags trips, with the flagged categories as its
// reason; one flagged for self-harm trips as the crisis protocol does (its
// referral, not a refusal).
type Moderation struct {
	check  moderation.Checker
	crisis *Crisis
}

var _ turn.InputProcessor = (*Moderation)(nil)

// ModerationText is what a user whose message was flagged sees.
const ModerationText = "I can't help with that. If something is troubling you, I'm here to talk about it in another way."

// NewModeration returns the moderation processor of check; crisis gives
// the referral of a self-harm verdict.
func NewModeration(check moderation.Checker, crisis *Crisis) *Moderation {
	return &Moderation{check: check, crisis: crisis}
}

// ID implements turn.InputProcessor.
func (*Moderation) ID() string { return ModerationID }

// Process implements turn.InputProcessor.
func (m *Moderation) Process(ctx context.Context, text string, in turn.ProcessInput) (string, *agent.Trip, error) {
	v, err := m.check.Check(ctx, text)
	if err != nil || !v.Flagged {
		return text, nil, err
	}
	if v.SelfHarm && m.crisis != nil {
		t := m.crisis.Trip(crisis.KindSelfHarm, in.Locale)
		t.Processor, t.Reason = ModerationID, v.Reason()
		return text, t, nil
	}
	return text, &agent.Trip{Processor: ModerationID, Code: moderationCode(v), Reason: v.Reason(), Text: ModerationText}, nil
}

// moderationCode is a verdict's reason code for metrics: its first
// category's family ("violence" of "violence/graphic"), from the
// provider's small fixed set.
func moderationCode(v moderation.Verdict) string {
	if len(v.Categories) == 0 {
		return "flagged"
	}
	family, _, _ := strings.Cut(v.Categories[0], "/")
	return family
}

// PII is the redaction processor: e-mail addresses, phone numbers and card
// numbers in a message are replaced before anything stores, logs, searches
// or sends it.
type PII struct{}

var _ turn.InputProcessor = PII{}

// ID implements turn.InputProcessor.
func (PII) ID() string { return PIIID }

// Process implements turn.InputProcessor.
func (PII) Process(_ context.Context, text string, _ turn.ProcessInput) (string, *agent.Trip, error) {
	out, _ := pii.Redact(text)
	return out, nil, nil
}

// MinorContent is an output processor for the replies a minor reads: a
// reply that turns sexually explicit is stopped, and the minor is shown
// MinorContentText instead of the rest.
type MinorContent struct{}

var _ agent.OutputProcessor = MinorContent{}

// MinorContentText is what a minor sees when a reply was stopped.
const MinorContentText = "I can't continue with that. Let's talk about something else."

// ID implements agent.OutputProcessor.
func (MinorContent) ID() string { return MinorContentID }

// Check implements agent.OutputProcessor: a word of explicitWords, whole
// (the agent holds back a word until it is), among the words from touches
// or follows: those before were checked already.
func (MinorContent) Check(text string, from int) *agent.Trip {
	notWord := func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }
	start := strings.LastIndexFunc(text[:from], notWord) + 1
	for _, w := range strings.FieldsFunc(text[start:], notWord) {
		if _, ok := explicitWords[strings.ToLower(w)]; ok {
			return &agent.Trip{Processor: MinorContentID, Code: "sexual", Reason: "minor-content: sexual content in a reply to a minor", Text: MinorContentText}
		}
	}
	return nil
}

// explicitWords are words of sexually explicit writing that have no
// everyday sense a companion's reply would use (not "sex", which a talk
// about health or school may, nor "kiss").
var explicitWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`porn porno pornographic pornography nude nudes naked erotic erotica orgasm orgasms
		orgasmic masturbate masturbating masturbation horny aroused arousal foreplay intercourse blowjob handjob
		genitals genital penis vagina clitoris nipples nipple sexting sext sexts cum cumming ejaculate ejaculation
		threesome bdsm fetish kinky stripper striptease lingerie seduce seductive sensual undress
		undressing undressed fondle fondling grope groping`) {
		m[w] = struct{}{}
	}
	return m
}()
