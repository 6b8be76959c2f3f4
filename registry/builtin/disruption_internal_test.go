package builtin

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBudgetTurnsAreTakenInTurnAndGivenUpWithTheRequest: an eviction
// waits for the one whose write on the same budget is in flight, not for
// one on another budget; a waiting eviction whose request ends gives up
// with the request's error; and a budget nobody waits for is forgotten.
func TestBudgetTurnsAreTakenInTurnAndGivenUpWithTheRequest(t *testing.T) {
	b := &budgetLocks{held: map[string]*budgetLock{}}
	release, err := b.lock(context.Background(), "ns/a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.lock(context.Background(), "ns/b")
	if err != nil {
		t.Fatalf("another budget's turn: %v", err)
	}
	other()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.lock(ctx, "ns/a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting while ns/a's turn is taken: %v, want the request's deadline", err)
	}

	got := make(chan error, 1)
	go func() {
		r, err := b.lock(context.Background(), "ns/a")
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("took ns/a's turn while it was held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-got; err != nil {
		t.Fatalf("the turn after the release: %v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) != 0 {
		t.Errorf("budgets still held after every release: %v", b.held)
	}
}
