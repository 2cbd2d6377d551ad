package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
)

// TestInputTrip: a run an input processor tripped calls no model; its one
// step's text is the trip's, it finishes "other", and the result carries
// the trip and the notices.
func TestInputTrip(t *testing.T) {
	m := &script{}
	rec := &recorder{}
	in := input("a message that trips")
	in.Notices = []agent.Notice{{Kind: agent.NoticeAIDisclosure, Text: "You talk to an AI."}}
	in.Trip = &agent.Trip{Processor: "crisis", Code: "suicidal-ideation", Reason: "crisis: suicidal ideation", Text: "Call or text 988."}
	res, err := newAgent(t, m).Run(context.Background(), in, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t, res)
	if len(m.reqs) != 0 {
		t.Fatalf("the model was called %d times", len(m.reqs))
	}
	if got, want := rec.names(), "RunStarted,StepStarted,TextDelta,StepFinished"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if start := rec.events[0].(agent.RunStarted); len(start.Notices) != 1 || start.Notices[0].Kind != agent.NoticeAIDisclosure {
		t.Fatalf("start %+v", start)
	}
	if res.Text() != "Call or text 988." || res.FinishReason != agent.FinishTripped || res.Trip == nil || res.Trip.Code != "suicidal-ideation" ||
		len(res.Steps) != 1 || res.Steps[0].FinishReason != agent.FinishTripped || len(res.Notices) != 1 {
		t.Fatalf("result %q %q trip %+v steps %+v notices %+v", res.Text(), res.FinishReason, res.Trip, res.Steps, res.Notices)
	}
	if len(res.Reply) != 1 || res.Reply[0].Content != "Call or text 988." || res.Reply[0].Role != model.RoleAssistant {
		t.Fatalf("reply %+v", res.Reply)
	}
}

// banned trips on a whole word.
type banned struct{ word string }

func (banned) ID() string { return "banned" }
func (b banned) Check(text string, _ int) *agent.Trip {
	for _, w := range strings.Fields(text) {
		if strings.Trim(w, ".,!?") == b.word {
			return &agent.Trip{Code: "word", Reason: "banned: " + b.word, Text: "Let's talk about something else."}
		}
	}
	return nil
}

// TestOutputTrip: an output processor stops the reply mid-stream. What was
// sent stays, the trip's text follows, the model's stream is left, and a
// word is held back until it is whole, never longer than a piece.
func TestOutputTrip(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		want   string // the reply's text
		trip   bool
		sent   []string // the text deltas
	}{
		{"a clean reply passes whole", []string{"Hello", " there", ", friend."}, "Hello there, friend.", false, []string{"Hello ", "there, friend."}},
		{"a word split across pieces is held back", []string{"It is a bad", "word", " here"}, "It is a \n\nLet's talk about something else.", true, []string{"It is a ", "\n\nLet's talk about something else."}},
		{"the word at once", []string{"One ", "badword", " two"}, "One \n\nLet's talk about something else.", true, []string{"One ", "\n\nLet's talk about something else."}},
		{"held back at most a piece", []string{"abc", "def", "ghi"}, "abcdefghi", false, []string{"abc", "def", "ghi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps []model.Part
			for _, p := range tt.pieces {
				ps = append(ps, text(p))
			}
			m := &script{turns: []turn{{parts: append(ps, finish(model.FinishStop, 5, 3))}}}
			rec := &recorder{}
			in := input("hi")
			in.Output = []agent.OutputProcessor{banned{"badword"}}
			res, err := newAgent(t, m).Run(context.Background(), in, rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			rec.check(t, res)
			var sent []string
			for _, ev := range rec.events {
				if d, ok := ev.(agent.TextDelta); ok {
					sent = append(sent, d.Text)
				}
			}
			if res.Text() != tt.want || (res.Trip != nil) != tt.trip || strings.Join(sent, "|") != strings.Join(tt.sent, "|") {
				t.Fatalf("text %q trip %+v sent %q; want %q, trip %v, sent %q", res.Text(), res.Trip, sent, tt.want, tt.trip, tt.sent)
			}
			if tt.trip && (res.FinishReason != agent.FinishTripped || res.Trip.Processor != "banned" || res.Reply[0].Content != tt.want) {
				t.Fatalf("finish %q trip %+v reply %+v", res.FinishReason, res.Trip, res.Reply)
			}
		})
	}
}

// TestPreface: the preface opens the reply, before the model's text, in
// the first step's text and the stored reply; the model is called as
// usual, and the run does not trip.
func TestPreface(t *testing.T) {
	m := &script{turns: []turn{{parts: parts(text("I'm here"), text(" with you."), finish(model.FinishStop, 5, 3))}}}
	rec := &recorder{}
	in := input("hi")
	in.Preface = "Call or text 988.\n\n"
	in.Output = []agent.OutputProcessor{banned{"badword"}}
	res, err := newAgent(t, m).Run(context.Background(), in, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t, res)
	if len(m.reqs) != 1 || res.Trip != nil || res.FinishReason != model.FinishStop || res.Text() != "Call or text 988.\n\nI'm here with you." {
		t.Fatalf("calls %d, trip %+v, finish %q, text %q", len(m.reqs), res.Trip, res.FinishReason, res.Text())
	}
	if d, ok := rec.events[2].(agent.TextDelta); !ok || d.Text != in.Preface {
		t.Fatalf("the first text is %+v, not the preface", rec.events[2])
	}
	if res.Reply[0].Content != res.Text() {
		t.Fatalf("reply %+v", res.Reply)
	}
}
