package app

import (
	"cmp"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/safety"
	"github.com/companionhq/companion/internal/safety/moderation"
	"github.com/companionhq/companion/internal/turn"
)

// openAIBaseURL is where moderation goes when neither -moderation-url nor
// -model-base-url says.
const openAIBaseURL = "https://api.openai.com/v1"

// safetyConfig is how turns guard their users under cfg: the input
// processors in the order they run (redaction first, so that nothing
// after it sees what it removes; the crisis protocol before moderation,
// so that a crisis is answered with its referral), the output processors
// of a minor's replies, and the notices.
//
// Moderation asks cfg.ModerationURL, else the model provider's address
// (modelBaseURL, -model-base-url), else OpenAI's: the moderation of the
// provider the operator configured.
func safetyConfig(cfg SafetyConfig, modelBaseURL string) (turn.SafetyConfig, error) {
	out := turn.SafetyConfig{
		Disclosure: cfg.Disclosure, DisclosureInterval: cfg.DisclosureInterval,
		BreakReminder: cfg.BreakReminder, BreakReminderInterval: cfg.BreakReminderInterval,
		MinorOutput: []agent.OutputProcessor{safety.MinorContent{}},
	}
	if cfg.RedactPII {
		out.Input = append(out.Input, safety.PII{})
	}
	moderated := cfg.ModerationURL != "" || cfg.ModerationModel != ""
	if !cfg.Crisis && !moderated {
		return out, nil
	}
	referrals := safety.DefaultReferrals()
	if cfg.ReferralsFile != "" {
		var err error
		if referrals, err = safety.LoadReferrals(cfg.ReferralsFile); err != nil {
			return out, err
		}
	}
	// The referral a moderation verdict of self-harm trips with is the
	// protocol's, on or off.
	protocol := safety.NewCrisis(referrals)
	if cfg.CrisisReply == "model" {
		protocol = protocol.WithModel()
	}
	if cfg.Crisis {
		out.Input = append(out.Input, protocol)
	}
	if moderated {
		base := cmp.Or(cfg.ModerationURL, modelBaseURL, openAIBaseURL)
		mc := moderation.Config{BaseURL: base, APIKey: cfg.ModerationKey, Model: cfg.ModerationModel}
		var check moderation.Checker = moderation.NewOpenAI(mc)
		if cfg.ModerationGuard {
			check = moderation.NewGuard(mc)
		}
		out.Input = append(out.Input, safety.NewModeration(check, protocol))
	}
	return out, nil
}
