package turn

import (
	"context"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
)

// TestNotify: the AI disclosure at the start of each interaction (a new
// thread, or one quiet for InteractionGap) and once in every interval of a
// continuing one; a minor's break reminder once in every interval of a
// continuing one; an input trip's notice with them.
func TestNotify(t *testing.T) {
	start := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	tail := []memory.Message{{Seq: 1}}
	tests := []struct {
		name    string
		updated time.Duration // when the thread last changed, after start
		now     time.Duration
		tail    []memory.Message
		minor   bool
		trip    *agent.Trip
		want    []string
	}{
		{"a new thread", 0, 0, nil, false, nil, []string{agent.NoticeAIDisclosure}},
		{"a continuing interaction", 10 * time.Minute, 12 * time.Minute, tail, false, nil, nil},
		{"its third hour passed", 2*time.Hour + 59*time.Minute, 3*time.Hour + time.Minute, tail, false, nil, []string{agent.NoticeAIDisclosure}},
		{"within its fourth hour", 3*time.Hour + time.Minute, 3*time.Hour + 20*time.Minute, tail, false, nil, nil},
		{"after a quiet half hour", time.Hour, time.Hour + 30*time.Minute, tail, false, nil, []string{agent.NoticeAIDisclosure}},
		{"a minor in a continuing interaction", 10 * time.Minute, 12 * time.Minute, tail, true, nil, nil},
		{"a minor's third hour passed", 2*time.Hour + 59*time.Minute, 3*time.Hour + time.Minute, tail, true, nil,
			[]string{agent.NoticeAIDisclosure, agent.NoticeBreakReminder}},
		{"a minor's new thread is disclosed, not reminded", 0, 0, nil, true, nil, []string{agent.NoticeAIDisclosure}},
		{"a crisis referral", 10 * time.Minute, 12 * time.Minute, tail, false,
			&agent.Trip{Code: "self-harm", Notice: &agent.Notice{Kind: agent.NoticeCrisisReferral, Text: "988"}}, []string{agent.NoticeCrisisReferral}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turns := &Turns{cfg: Config{Observer: nopObserver{}, Store: &referralCounter{}, Safety: SafetyConfig{
				Disclosure: "AI", DisclosureInterval: 3 * time.Hour, BreakReminder: "break", BreakReminderInterval: 3 * time.Hour,
				MinorOutput: []agent.OutputProcessor{nil}}}}
			s := &State{Now: at(tt.now), tail: tt.tail, trip: tt.trip,
				Thread: memory.Thread{CreatedAt: start, UpdatedAt: at(tt.updated)}}
			s.In.Minor = tt.minor
			if err := turns.notify(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range s.In.Notices {
				got = append(got, n.Kind)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("notices %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("notices %v, want %v", got, tt.want)
				}
			}
			if tt.trip != nil && (s.In.Trip != tt.trip || s.In.Trip.Notice != nil || s.In.Output != nil) {
				t.Fatalf("a tripped turn: trip %+v, output %v", s.In.Trip, s.In.Output)
			}
			if tt.trip == nil && (len(s.In.Output) == 1) != tt.minor {
				t.Fatalf("output processors %v of a minor %v", s.In.Output, tt.minor)
			}
		})
	}
}
