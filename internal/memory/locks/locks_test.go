package locks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/memory/locks"
	_ "github.com/companionhq/companion/internal/testkit"
)

// TestWaitersTakeTurnsInOrder: waiters are served in the order they came.
func TestWaitersTakeTurnsInOrder(t *testing.T) {
	var s locks.Set
	ctx := context.Background()
	release, err := s.Acquire(ctx, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 5)
	var released sync.WaitGroup
	for i := range 5 {
		released.Add(1)
		go func() {
			defer released.Done()
			r, err := s.Acquire(ctx, "k", 10*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			r()
		}()
		time.Sleep(20 * time.Millisecond) // let waiter i queue before i+1
	}
	release()
	release() // twice is harmless
	for want := range 5 {
		if got := <-order; got != want {
			t.Fatalf("waiter %d served before waiter %d", got, want)
		}
	}
	// All released: the entry is gone and the key is free at once. The
	// last waiter reports its turn before it releases, so wait for that.
	released.Wait()
	r, err := s.Acquire(ctx, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	r()
}

func TestTimeoutAndCancel(t *testing.T) {
	var s locks.Set
	release, _ := s.Acquire(context.Background(), "k", 0)
	defer release()
	if _, err := s.Acquire(context.Background(), "k", 50*time.Millisecond); !errors.Is(err, locks.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Acquire(ctx, "k", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if r, err := s.Acquire(context.Background(), "other", 0); err != nil {
		t.Fatalf("another key: %v", err)
	} else {
		r()
	}
}
