package offstack_test

import (
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/offstack"
)

func TestDoWaitsForF(t *testing.T) {
	got := 0
	offstack.Do(func() { got = 42 })
	if got != 42 {
		t.Fatalf("after Do, f's result is %d, want 42", got)
	}
}

// TestDoCarriesAPanic: a panic in f goes on in Do's caller, with f's value
// and the stack where it happened, not the new goroutine's crash.
func TestDoCarriesAPanic(t *testing.T) {
	defer func() {
		v := recover()
		p, ok := v.(*offstack.Panic)
		if !ok {
			t.Fatalf("recovered %T (%v), want *offstack.Panic", v, v)
		}
		if p.Value != "deep down" {
			t.Errorf("the panic's value is %v, want \"deep down\"", p.Value)
		}
		if !strings.Contains(string(p.Stack), "panicDeepDown") {
			t.Errorf("the panic's stack does not show where it happened:\n%s", p.Stack)
		}
		if s := p.String(); !strings.Contains(s, "deep down") || !strings.Contains(s, "panicDeepDown") {
			t.Errorf("String() = %q, want the value and the stack", s)
		}
	}()
	offstack.Do(panicDeepDown)
	t.Fatal("Do returned after f panicked")
}

func panicDeepDown() { panic("deep down") }

// BenchmarkDo is the cost of running off the stack once, which a turn pays for its
// Begin, and a stream for its request, its head and each record read from
// Redis.
func BenchmarkDo(b *testing.B) {
	for b.Loop() {
		offstack.Do(func() {})
	}
}
