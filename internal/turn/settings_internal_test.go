package turn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/memory/postgres"
)

// PostgreSQL reads a turn's mark and working memory with the thread: a
// change of its method's name must not quietly cost every turn a round
// trip.
var _ beginReader = (*postgres.Store)(nil)

// settingsStore is a store that only knows resources' settings: minors
// are marked, reads counts the reads, err fails them.
type settingsStore struct {
	memory.Store
	minors map[string]bool
	reads  int
	err    error
}

func (s *settingsStore) ResourceSettings(_ context.Context, resourceID string) (memory.ResourceSettings, error) {
	s.reads++
	if s.err != nil {
		return memory.ResourceSettings{}, s.err
	}
	return memory.ResourceSettings{ResourceID: resourceID, Minor: s.minors[resourceID]}, nil
}

// TestKnowMinor: a turn's user is a minor when the request says so or
// the resource is marked one; the mark read with the thread is used as
// is, else it is read (not when the request says so, nor without a
// resource); a read that fails fails the turn as the store's failure. A
// stored minor then gets the break reminder and the minor's output
// processors.
func TestKnowMinor(t *testing.T) {
	marked := &memory.ResourceSettings{ResourceID: "teen", Minor: true}
	unmarked := &memory.ResourceSettings{ResourceID: "teen"}
	tests := []struct {
		name     string
		resource string
		asked    bool                     // the request says minor
		withTake *memory.ResourceSettings // read with the thread
		stored   bool
		err      error
		want     bool
		reads    int
	}{
		{name: "the request says so", resource: "teen", asked: true, err: errors.New("not read"), want: true},
		{name: "no resource", err: errors.New("not read")},
		{name: "marked, read with the thread", resource: "teen", withTake: marked, err: errors.New("not read"), want: true},
		{name: "not marked, read with the thread", resource: "teen", withTake: unmarked, stored: true},
		{name: "marked, read on its own", resource: "teen", stored: true, want: true, reads: 1},
		{name: "not marked, read on its own", resource: "adult", reads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &settingsStore{minors: map[string]bool{"teen": tt.stored}, err: tt.err}
			turns := &Turns{cfg: Config{Store: store}}
			s := &State{settings: tt.withTake}
			s.In.ResourceID, s.In.Minor = tt.resource, tt.asked
			if err := turns.knowMinor(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if s.In.Minor != tt.want || store.reads != tt.reads {
				t.Fatalf("minor %v after %d reads, want %v after %d", s.In.Minor, store.reads, tt.want, tt.reads)
			}
		})
	}

	t.Run("a read that fails", func(t *testing.T) {
		turns := &Turns{cfg: Config{Store: &settingsStore{err: errors.New("disk I/O error")}}}
		s := &State{}
		s.In.ResourceID = "teen"
		err := turns.knowMinor(context.Background(), s)
		if apperr.CodeOf(err) != apperr.Unavailable || s.In.Minor {
			t.Fatalf("%v (%s), minor %v: want the store's failure", err, apperr.CodeOf(err), s.In.Minor)
		}
	})

	t.Run("a stored minor's notices and processors", func(t *testing.T) {
		start := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
		for _, resource := range []string{"teen", "adult"} {
			turns := &Turns{cfg: Config{Observer: nopObserver{}, Store: &settingsStore{minors: map[string]bool{"teen": true}}, Safety: SafetyConfig{
				BreakReminder: "break", BreakReminderInterval: 3 * time.Hour, MinorOutput: []agent.OutputProcessor{nil}}}}
			s := &State{Now: start.Add(3*time.Hour + time.Minute), tail: []memory.Message{{Seq: 1}},
				Thread: memory.Thread{CreatedAt: start, UpdatedAt: start.Add(2*time.Hour + 59*time.Minute)}}
			s.In.ResourceID = resource
			for _, step := range []func(context.Context, *State) error{turns.knowMinor, turns.notify} {
				if err := step(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			minor := resource == "teen"
			if reminded := len(s.In.Notices) == 1 && s.In.Notices[0].Kind == agent.NoticeBreakReminder; reminded != minor {
				t.Errorf("%s: notices %+v", resource, s.In.Notices)
			}
			if (len(s.In.Output) == 1) != minor {
				t.Errorf("%s: output processors %v", resource, s.In.Output)
			}
		}
	})
}

// readingStore is a store that reads with the thread (beginReader) and
// records what it was asked to, answering with a minor's mark.
type readingStore struct {
	memory.Store
	asked memory.BeginReads
}

func (r *readingStore) LockBeginReading(_ context.Context, th memory.Thread, _ int, _ []string, _ memory.Plan, reads memory.BeginReads) (memory.Turn, memory.Thread, []memory.Message, error) {
	r.asked = reads
	if reads.Settings != nil {
		reads.Settings.Minor = true
	}
	if reads.WorkingMemory != nil {
		reads.WorkingMemory.Version = 1
	}
	return nil, th, nil, nil
}

// TestLockBeginReadsTheMark: a store that reads with the thread is asked
// for the resource's settings when the turn must know them, and for
// working memory unless it is off; what it read is the State's.
func TestLockBeginReadsTheMark(t *testing.T) {
	tests := []struct {
		name             string
		resource         string
		asked, wmOff     bool
		settings, wmRead bool
	}{
		{name: "a resource's turn", resource: "teen", settings: true, wmRead: true},
		{name: "working memory off", resource: "teen", wmOff: true, settings: true},
		{name: "the request says minor", resource: "teen", asked: true, wmRead: true},
		{name: "no resource", wmRead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &readingStore{}
			turns := &Turns{cfg: Config{Store: store, WorkingMemory: WorkingMemoryConfig{Off: tt.wmOff}.withDefaults()}}
			s := &State{}
			s.In.ThreadID, s.In.ResourceID, s.In.Minor = "t1", tt.resource, tt.asked
			if _, _, err := turns.lockBegin(context.Background(), s, memory.Thread{ID: "t1"}, 0, nil, nil); err != nil {
				t.Fatal(err)
			}
			if got := store.asked.Settings != nil; got != tt.settings {
				t.Fatalf("asked for the settings: %v, want %v", got, tt.settings)
			}
			if tt.settings && (store.asked.Settings.ResourceID != tt.resource || s.settings == nil || !s.settings.Minor) {
				t.Fatalf("asked for %+v, the state has %+v", store.asked.Settings, s.settings)
			}
			if got := store.asked.WorkingMemory != nil; got != tt.wmRead || (tt.wmRead && (s.wm == nil || s.wm.Version != 1)) {
				t.Fatalf("asked for working memory: %v, want %v; the state has %+v", got, tt.wmRead, s.wm)
			}
		})
	}
}
