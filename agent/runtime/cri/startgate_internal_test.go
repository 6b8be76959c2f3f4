package cri

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *startGate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting()
}

// TestStartGateOrder: with the gate full, waiting calls get their turn
// containers first, then sandboxes, each in arrival order; a nil gate
// lets everything in.
func TestStartGateOrder(t *testing.T) {
	var nilGate *startGate
	if err := nilGate.acquire(context.Background(), startSandbox); err != nil {
		t.Fatal(err)
	}
	nilGate.release()
	if newStartGate(0) != nil || newStartGate(-1) != nil {
		t.Fatal("a bound of 0 or less is no gate")
	}

	g := newStartGate(1)
	if err := g.acquire(context.Background(), startSandbox); err != nil {
		t.Fatal(err)
	}
	arrivals := []struct {
		name string
		p    startGatePriority
	}{{"sandbox-1", startSandbox}, {"container-1", startContainer}, {"sandbox-2", startSandbox}, {"container-2", startContainer}}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for i, a := range arrivals {
		wg.Go(func() {
			if err := g.acquire(context.Background(), a.p); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, a.name)
			mu.Unlock()
			g.release()
		})
		waitFor(t, "the call to queue", func() bool { return g.queued() == i+1 })
	}
	g.release()
	wg.Wait()
	if want := []string{"container-1", "container-2", "sandbox-1", "sandbox-2"}; !slices.Equal(order, want) {
		t.Errorf("turns in order %v, want %v", order, want)
	}
	if g.free != 1 || g.queued() != 0 {
		t.Errorf("after all: %d free, %d waiting; want 1 and 0", g.free, g.queued())
	}
}

// TestStartGateCancelledWaiterLeaves: a call whose context ends while it
// waits returns the context's error, holds nothing and leaves the queue,
// so the next release goes to the one behind it.
func TestStartGateCancelledWaiterLeaves(t *testing.T) {
	g := newStartGate(1)
	if err := g.acquire(context.Background(), startContainer); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error)
	go func() { gone <- g.acquire(ctx, startSandbox) }()
	waitFor(t, "the first waiter", func() bool { return g.queued() == 1 })
	next := make(chan error)
	go func() { next <- g.acquire(context.Background(), startSandbox) }()
	waitFor(t, "the second waiter", func() bool { return g.queued() == 2 })
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait returned %v, want context.Canceled", err)
	}
	if n := g.queued(); n != 1 {
		t.Fatalf("%d waiting after the cancel, want 1", n)
	}
	g.release()
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	g.release()
	if g.free != 1 {
		t.Errorf("%d free at the end, want 1", g.free)
	}
}

// TestStartGateTurnAtCancel: a turn given just as the waiter's context
// ends is handed on, not lost.
func TestStartGateTurnAtCancel(t *testing.T) {
	for range 200 {
		g := newStartGate(1)
		if err := g.acquire(context.Background(), startContainer); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- g.acquire(ctx, startSandbox) }()
		waitFor(t, "the waiter", func() bool { return g.queued() == 1 })
		go cancel()
		g.release()
		if err := <-done; err == nil {
			g.release()
		}
		if g.free != 1 || g.queued() != 0 {
			t.Fatalf("%d free, %d waiting, want 1 and 0", g.free, g.queued())
		}
	}
}

// TestStartGateHungCallGivesItsTurnBack: a call that holds its turn
// longer than maxTurn lets the next one in; its own end afterwards does
// not free a second turn.
func TestStartGateHungCallGivesItsTurnBack(t *testing.T) {
	defer func(d time.Duration) { maxTurn = d }(maxTurn)
	maxTurn = 50 * time.Millisecond
	g := newStartGate(1)
	hung, err := g.enter(context.Background(), startSandbox)
	if err != nil {
		t.Fatal(err)
	}
	next, err := g.enter(context.Background(), startSandbox) // waits for maxTurn
	if err != nil {
		t.Fatal(err)
	}
	hung() // the hung call ends at last: its turn was given back already
	g.mu.Lock()
	free := g.free
	g.mu.Unlock()
	if free != 0 {
		t.Fatalf("%d free while the second call holds the only turn, want 0", free)
	}
	next()
	next()
	g.mu.Lock()
	free = g.free
	g.mu.Unlock()
	if free != 1 {
		t.Errorf("%d free at the end, want 1", free)
	}
}
