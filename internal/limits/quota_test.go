package limits_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/apperr"
	"github.com/companionhq/companion/internal/limits"
	"github.com/companionhq/companion/internal/memory"
)

// usedToday answers Used with fixed figures for one day.
type usedToday struct {
	day    string
	tokens int64
	cost   float64
	err    error
}

func (u usedToday) Used(_ context.Context, _ string, day string) (int64, float64, error) {
	if day != u.day {
		return 0, 0, nil
	}
	return u.tokens, u.cost, u.err
}

func TestQuota(t *testing.T) {
	now := time.Date(2026, 5, 2, 18, 0, 0, 0, time.UTC)
	broken := errors.New("the store is down")
	tests := []struct {
		name  string
		quota limits.Quota
		used  usedToday
		// want is a part of the refusal's message, "" for none; wantErr an
		// error returned as it is.
		want    string
		wantErr error
	}{
		{name: "no quota", used: usedToday{day: "2026-05-02", tokens: 1e9, cost: 1e9}},
		{name: "under both", quota: limits.Quota{Tokens: 100, Cost: 1}, used: usedToday{day: "2026-05-02", tokens: 99, cost: 0.99}},
		{name: "tokens spent", quota: limits.Quota{Tokens: 100}, used: usedToday{day: "2026-05-02", tokens: 100},
			want: `resource "r" has used 100 tokens today, its quota of 100 (-token-quota)`},
		{name: "money spent", quota: limits.Quota{Cost: 0.003}, used: usedToday{day: "2026-05-02", cost: 0.0031},
			want: `resource "r" has spent $0.0031 today, its quota of $0.003 (-cost-quota)`},
		{name: "yesterday does not count", quota: limits.Quota{Tokens: 1}, used: usedToday{day: "2026-05-01", tokens: 1e6}},
		{name: "the store fails", quota: limits.Quota{Tokens: 1}, used: usedToday{day: "2026-05-02", err: broken}, wantErr: broken},
		{name: "no quota reads nothing", used: usedToday{day: "2026-05-02", err: broken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.quota.Check(context.Background(), tt.used, "r", now)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
			case tt.want == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			default:
				var ae *apperr.Error
				if !errors.As(err, &ae) || ae.Code != apperr.RateLimited || !strings.Contains(ae.Message, tt.want) {
					t.Fatalf("got %v, want a rate-limit refusal saying %q", err, tt.want)
				}
				if got := ae.RetryAfter; got != 6*time.Hour {
					t.Fatalf("retry after %s, want 6h (until 00:00 UTC)", got)
				}
			}
		})
	}
}

func TestThreadBytes(t *testing.T) {
	th := memory.Thread{ID: "t", Bytes: 90}
	row := memory.Message{Text: "0123456789"} // 10 bytes
	if err := limits.ThreadBytes(0).Check(th, []memory.Message{row, row}); err != nil {
		t.Fatalf("no limit refused: %v", err)
	}
	if err := limits.ThreadBytes(100).Check(th, []memory.Message{row}); err != nil {
		t.Fatalf("a thread that reaches its limit exactly was refused: %v", err)
	}
	err := limits.ThreadBytes(100).Check(th, []memory.Message{row, row})
	if apperr.CodeOf(err) != apperr.TooLarge || !strings.Contains(err.Error(), `thread "t" stores 90 bytes`) {
		t.Fatalf("got %v, want a too-large refusal", err)
	}
}
