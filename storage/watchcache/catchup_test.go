package watchcache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// slowStart passes w's events on, pausing before each of the first n: a
// client that reads its initial snapshot slowly, then keeps up.
func slowStart(w watch.Interface, n int, pause time.Duration) watch.Interface {
	p := &pacedWatch{Interface: w, ch: make(chan watch.Event)}
	go func() {
		defer close(p.ch)
		i := 0
		for ev := range w.ResultChan() {
			if i++; i <= n {
				time.Sleep(pause)
			}
			p.ch <- ev
		}
	}()
	return p
}

// seedPods creates n pods and waits until the cache has them.
func seedPods(ctx context.Context, t *testing.T, c *Cache, w *writer, n int) map[string]*podState {
	t.Helper()
	state := map[string]*podState{}
	for i := range n {
		name := fmt.Sprintf("pod-%04d", i)
		state[name] = &podState{node: "n", label: "0"}
		w.apply(ctx, t, name, nil, state[name])
	}
	waitFor(t, 30*time.Second, func() bool { return c.ResourceVersion() >= w.lastRV() })
	return state
}

// TestWatcherSendingItsSnapshotIsNotEndedAsSlow: a client reads the
// initial state of a watch (legacy RV="0": a snapshot of every pod) for
// several times the slow-watcher budget while writes go on; then it reads
// at full speed. Its buffer overflows during the snapshot, which is not
// slowness: the budget counts from the end of its start, so it is not
// ended, and gets the snapshot then every write, in order.
func TestWatcherSendingItsSnapshotIsNotEndedAsSlow(t *testing.T) {
	const pods, writes = 200, 300
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) {
		o.WatchBuffer = 10
		o.SlowWatcherBudget = 50 * time.Millisecond
	}))
	w := &writer{c: c}
	state := seedPods(ctx, t, c, w, pods)
	seeded := len(w.ops())

	// 200 snapshot events at 5 ms each: a second, twenty budgets.
	cons := consume(slowStart(watchFrom(t, ctx, c, 0, fields.Everything(), labels.Everything()), pods, 5*time.Millisecond))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range writes {
			name := fmt.Sprintf("pod-%04d", i%pods)
			next := &podState{node: "n", label: fmt.Sprint(i + 1)}
			w.apply(ctx, t, name, state[name], next)
			state[name] = next
		}
	}()
	wg.Wait()
	barrier(t, c, w.lastRV(), []*consumer{cons})

	got, _, st := cons.snapshot()
	if st != nil {
		t.Fatalf("watcher ended while sending its snapshot: %s", st.Message)
	}
	if n := c.SlowWatchersEnded(); n != 0 {
		t.Fatalf("%d watchers ended as slow", n)
	}
	want := expect(w.ops()[:seeded], func(string, *podState) bool { return true })
	want = append(want, expect(w.ops()[seeded:], func(string, *podState) bool { return true })...)
	checkExactly(t, "watcher with a slow start", got, want)
}

// TestWatcherStuckInItsSnapshotIsEndedPastTheWindow: a client that never
// reads its snapshot is not timed out, but once more events have queued
// behind it than the event window holds, it is ended with 410 Expired.
func TestWatcherStuckInItsSnapshotIsEndedPastTheWindow(t *testing.T) {
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) {
		o.WatchBuffer = 10
		o.SlowWatcherBudget = 10 * time.Millisecond
		o.MaxEvents = minEvents
	}))
	w := &writer{c: c}
	state := seedPods(ctx, t, c, w, resultBuffer+10) // more than the result channel holds
	stuck := watchFrom(t, ctx, c, 0, fields.Everything(), labels.Everything())

	write := func(i int) {
		name := fmt.Sprintf("pod-%04d", i%len(state))
		next := &podState{node: "n", label: fmt.Sprint(i + 1)}
		w.apply(ctx, t, name, state[name], next)
		state[name] = next
	}
	for i := range minEvents / 2 {
		write(i)
	}
	time.Sleep(2 * bookmarkTick) // many budgets: the tick ends nobody catching up
	if n := c.SlowWatchersEnded(); n != 0 {
		t.Fatalf("a watcher stuck in its snapshot was ended after %d events, fewer than the window's %d", minEvents/2, minEvents)
	}
	for i := minEvents / 2; c.SlowWatchersEnded() == 0; i++ {
		if i > 3*minEvents {
			t.Fatalf("still not ended after %d events", i)
		}
		write(i)
	}
	s := consume(stuck)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stuck watcher's channel did not close")
	}
	if _, _, st := s.snapshot(); !isExpiredStatus(st) || !strings.Contains(st.Message, "initial events") {
		t.Fatalf("ended with %v, want 410 Expired about its initial events", st)
	}
}
