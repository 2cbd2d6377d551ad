package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	fakeopenai "github.com/companionhq/companion/fakes/openai"
	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model/fake"
	"github.com/companionhq/companion/internal/safety"
	"github.com/companionhq/companion/internal/turn"
)

// withMeta is a run request whose runtimeContext.metadata is meta (JSON).
func withMeta(thread, resource, meta string, msgs ...api.Message) string {
	var body map[string]any
	_ = json.Unmarshal([]byte(reqBody(thread, resource, msgs...)), &body)
	var m map[string]any
	_ = json.Unmarshal([]byte(meta), &m)
	body["runtimeContext"] = map[string]any{"metadata": m}
	b, _ := json.Marshal(body)
	return string(b)
}

// generateBody posts body to generate and decodes the answer.
func (c client) generateBody(body string) api.GenerateResponse {
	c.t.Helper()
	status, b := c.do("POST", generatePath, body)
	if status != 200 {
		c.t.Fatalf("generate: %d %s", status, b)
	}
	var g api.GenerateResponse
	if err := json.Unmarshal(b, &g); err != nil {
		c.t.Fatal(err)
	}
	return g
}

// TestCrisisTrip: a message that speaks of suicide is answered with the
// referral of the user's locale, without the model; the message and the
// referral are stored as the turn; the next turn's model sees both; the
// referral is counted, by locale, without ids.
func TestCrisisTrip(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		g := c.generateBody(withMeta("t1", "u1", `{"locale":"en-GB"}`, user("honestly i just want to die, everyone would be better off without me")))
		if !g.Tripwire || g.TripwireReason != "crisis: suicidal ideation" || g.FinishReason != "other" ||
			!strings.Contains(g.Text, "Samaritans") || g.Usage.TotalTokens != 0 {
			t.Fatalf("a crisis: tripwire %v %q, finish %q, usage %+v, text %q", g.Tripwire, g.TripwireReason, g.FinishReason, g.Usage, g.Text)
		}
		kinds := map[string]string{}
		for _, n := range g.Notices {
			kinds[n.Kind] = n.Text
		}
		if !strings.Contains(kinds["crisis-referral"], "116 123") || kinds["ai-disclosure"] == "" || len(g.Notices) != 2 {
			t.Fatalf("notices %+v", g.Notices)
		}
		if !g.Steps[0].Tripwire || g.Steps[0].TripwireReason != g.TripwireReason {
			t.Fatalf("the tripped step: %+v", g.Steps[0])
		}
		msgs := c.messages("t1", "u1")
		if len(msgs) != 2 || msgs[0].Parts[0].Text != "honestly i just want to die, everyone would be better off without me" || msgs[1].Parts[0].Text != g.Text {
			t.Fatalf("stored: %+v", msgs)
		}
		// The next turn is the model's, with the referral in its history.
		next := c.generate("t1", "u1", "thank you, I will call them")
		if next.Tripwire || next.FinishReason == "other" || len(next.Notices) != 0 {
			t.Fatalf("the next turn: tripwire %v, finish %q, notices %+v", next.Tripwire, next.FinishReason, next.Notices)
		}
		if b, _ := json.Marshal(next.Steps[0].Request.Body); !strings.Contains(string(b), "Samaritans") {
			t.Fatalf("the next turn's model does not see the referral: %s", b)
		}
		// Everyday language passes.
		if g := c.generate("t2", "u1", "this workout is killing me, I'm dying for a shower"); g.Tripwire {
			t.Fatalf("an idiom tripped: %q", g.TripwireReason)
		}
		// Counted for the yearly report, by day and locale alone.
		status, report := c.do("GET", "/api/safety/referrals", "")
		if status != 200 || !strings.Contains(string(report), `"locale":"en-gb","count":1`) || !strings.Contains(string(report), `"total":1`) ||
			strings.Contains(string(report), "u1") {
			t.Fatalf("referrals: %d %s", status, report)
		}
		_, metrics := c.do("GET", "/metrics", "")
		for _, want := range []string{`companion_crisis_referrals_total{locale="en-gb"} 1`, `companion_tripwires_total{processor="crisis",reason="suicidal-ideation"} 1`} {
			if !strings.Contains(string(metrics), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// TestCrisisOff: -crisis=false lets the message through to the model.
func TestCrisisOff(t *testing.T) {
	c := start(t, apptest.SQLiteURL(t), func(c *app.Config) { c.Safety.Crisis = false })
	if g := c.generate("t1", "u1", "I want to kill myself"); g.Tripwire || g.FinishReason == "other" {
		t.Fatalf("with the protocol off: tripwire %v %q", g.Tripwire, g.TripwireReason)
	}
}

// TestMinorContent: a minor's reply that turns sexually explicit is
// stopped mid-stream; what was sent stays, the stop's text follows; an
// adult's same reply passes. (The fake model repeats what it is asked to
// remember.)
func TestMinorContent(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, nil)
		ask := "Remember that I want to talk about lingerie."
		g := c.generateBody(withMeta("t1", "teen", `{"minor":true}`, user(ask)))
		if !g.Tripwire || g.TripwireReason != "minor-content: sexual content in a reply to a minor" ||
			!strings.HasSuffix(g.Text, "\n\nI can't continue with that. Let's talk about something else.") || strings.Contains(g.Text, "lingerie") {
			t.Fatalf("a minor's reply: tripwire %v %q, text %q", g.Tripwire, g.TripwireReason, g.Text)
		}
		if msgs := c.messages("t1", "teen"); len(msgs) != 2 || msgs[1].Parts[len(msgs[1].Parts)-1].Text == "" {
			t.Fatalf("stored: %+v", msgs)
		}
		if g := c.generate("t2", "adult", ask); g.Tripwire || !strings.Contains(g.Text, "lingerie") {
			t.Fatalf("an adult's reply: tripwire %v, text %q", g.Tripwire, g.Text)
		}
	})
}

// TestModeration: with a moderation endpoint (the fake's, OpenAI's shape,
// or its guard model), a flagged message trips with the categories as its
// reason; a self-harm verdict trips as the crisis protocol does, with the
// referral; a message it does not flag reaches the model. A moderation
// endpoint that fails lets messages pass.
func TestModeration(t *testing.T) {
	up := httptest.NewServer(fakeopenai.New(upstream.Options{}))
	t.Cleanup(up.Close)
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprint("guard=", guard), func(t *testing.T) {
			c := start(t, apptest.SQLiteURL(t), func(c *app.Config) {
				c.Safety.Crisis = false // moderation alone
				c.Safety.ModerationURL, c.Safety.ModerationGuard, c.Safety.ModerationKey = up.URL, guard, "test-key"
				c.Safety.ModerationModel = "omni-moderation-latest"
				if guard {
					c.Safety.ModerationModel = fakeopenai.GuardModel
				}
			})
			g := c.generate("t1", "u1", "I am going to stab him tomorrow.")
			want := "moderation: violence"
			if guard {
				want = "moderation: violent-crimes"
			}
			if !g.Tripwire || g.TripwireReason != want || g.Text != safety.ModerationText || g.FinishReason != "other" {
				t.Fatalf("a flagged message: tripwire %v %q, text %q", g.Tripwire, g.TripwireReason, g.Text)
			}
			g = c.generate("t2", "u1", "I keep thinking about ending my life.")
			if !g.Tripwire || !strings.Contains(g.TripwireReason, "self-harm") || !strings.Contains(g.Text, "988") {
				t.Fatalf("a self-harm verdict: tripwire %v %q, text %q", g.Tripwire, g.TripwireReason, g.Text)
			}
			if g := c.generate("t3", "u1", "What a lovely morning."); g.Tripwire {
				t.Fatalf("an unflagged message tripped: %q", g.TripwireReason)
			}
		})
	}
	t.Run("endpoint down", func(t *testing.T) {
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		c := start(t, apptest.SQLiteURL(t), func(c *app.Config) { c.Safety.Crisis, c.Safety.ModerationURL = false, down.URL })
		if g := c.generate("t1", "u1", "I am going to stab him tomorrow."); g.Tripwire {
			t.Fatalf("with the endpoint down: tripwire %q", g.TripwireReason)
		}
	})
}

// TestRedactPII: with -redact-pii, what is stored and what the model is
// sent are the redacted message.
func TestRedactPII(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		c := start(t, db, func(c *app.Config) { c.Safety.RedactPII = true })
		g := c.generate("t1", "u1", "Write to me at sam@example.com or call +1 202-555-0143, my card is 4111 1111 1111 1111.")
		b, _ := json.Marshal(g.Steps[0].Request.Body)
		msgs := c.messages("t1", "u1")
		for _, seen := range []string{string(b), msgs[0].Parts[0].Text} {
			if strings.Contains(seen, "sam@example.com") || strings.Contains(seen, "555-0143") || strings.Contains(seen, "4111") ||
				!strings.Contains(seen, "[email]") || !strings.Contains(seen, "[phone]") || !strings.Contains(seen, "[card]") {
				t.Fatalf("not redacted: %s", seen)
			}
		}
	})
}

// TestCrisisReplyModel: with -crisis-reply model, the referral opens the
// reply and the model answers after it, told to answer with care; the run
// does not trip; the referral is a notice and is counted all the same.
func TestCrisisReplyModel(t *testing.T) {
	c := start(t, apptest.SQLiteURL(t), func(c *app.Config) { c.Safety.CrisisReply = "model" })
	g := c.generate("t1", "u1", "I want to end my life.")
	if g.Tripwire || g.FinishReason == "other" || !strings.HasPrefix(g.Text, "If you are thinking about suicide") || len(g.Text) <= len(g.Notices[1].Text)+2 {
		t.Fatalf("tripwire %v, finish %q, text %q", g.Tripwire, g.FinishReason, g.Text)
	}
	if len(g.Notices) != 2 || g.Notices[1].Kind != "crisis-referral" || !strings.HasPrefix(g.Text, g.Notices[1].Text+"\n\n") {
		t.Fatalf("notices %+v", g.Notices)
	}
	if sys := system(g); !strings.Contains(sys, "<safety>") || !strings.Contains(sys, "never give information about methods") {
		t.Fatalf("the model is not told: %s", sys)
	}
	if _, report := c.do("GET", "/api/safety/referrals", ""); !strings.Contains(string(report), `"total":1`) {
		t.Fatalf("not counted: %s", report)
	}
}

// TestStoredMinor: a resource marked a minor in the store is one though
// its requests do not say so: a continuing conversation gets the break
// reminder once its interval has passed, and a reply that turns sexually
// explicit is stopped; another resource's turns get neither. The mark is
// read with the thread where the store can (PostgreSQL) and on its own
// where it cannot (here, behind a wrapper that hides the store's type).
func TestStoredMinor(t *testing.T) {
	apptest.EachDatabase(t, func(t *testing.T, db string) {
		for _, hidden := range []bool{false, true} {
			t.Run(fmt.Sprint("hidden=", hidden), func(t *testing.T) {
				var store memory.Store
				c := serveWith(t, db, fake.New(fake.Options{}), func(s memory.Store) memory.Store {
					store = s
					if hidden {
						return struct{ memory.Store }{s}
					}
					return s
				}, func(cfg *turn.Config) {
					cfg.Safety = turn.SafetyConfig{Disclosure: "AI", DisclosureInterval: time.Hour, BreakReminder: "Take a break.",
						BreakReminderInterval: time.Microsecond, MinorOutput: []agent.OutputProcessor{safety.MinorContent{}}}
				})
				if err := store.SetResourceSettings(context.Background(), memory.ResourceSettings{ResourceID: "teen", Minor: true, UpdatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
				kinds := func(g api.GenerateResponse) string {
					var ks []string
					for _, n := range g.Notices {
						ks = append(ks, n.Kind)
					}
					return strings.Join(ks, " ")
				}
				// The subtests share the database: threads of their own.
				th := func(id string) string { return fmt.Sprintf("%s-%v", id, hidden) }
				for _, r := range []struct {
					resource, later string
				}{{"teen", "break-reminder"}, {"adult", ""}} {
					if g := c.generate(th("t-"+r.resource), r.resource, "Hi there."); kinds(g) != "ai-disclosure" {
						t.Fatalf("%s's first turn: notices %q", r.resource, kinds(g))
					}
					if g := c.generate(th("t-"+r.resource), r.resource, "Can you help me with my homework?"); kinds(g) != r.later {
						t.Fatalf("%s's next turn: notices %q, want %q", r.resource, kinds(g), r.later)
					}
				}
				ask := "Remember that I want to talk about lingerie."
				if g := c.generate(th("t2-teen"), "teen", ask); !g.Tripwire || g.TripwireReason != "minor-content: sexual content in a reply to a minor" {
					t.Fatalf("a stored minor's reply: tripwire %v %q, text %q", g.Tripwire, g.TripwireReason, g.Text)
				}
				if g := c.generate(th("t2-adult"), "adult", ask); g.Tripwire || !strings.Contains(g.Text, "lingerie") {
					t.Fatalf("an adult's reply: tripwire %v, text %q", g.Tripwire, g.Text)
				}
			})
		}
	})
}
