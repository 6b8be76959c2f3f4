package watchcache

import (
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// stallingSelector is a label selector that, once armed, holds up the
// first goroutine that matches with it until released: a watcher with it
// stops the dispatcher in the middle of an event's candidates, as 10 000
// watchers to offer an event to do for milliseconds.
type stallingSelector struct {
	labels.Selector
	armed    chan struct{} // closed to arm
	stalled  chan struct{} // closed when a match is held up
	release  chan struct{} // closed to let it go
	stallOne sync.Once
}

func (s *stallingSelector) Empty() bool { return false }

func (s *stallingSelector) Matches(l labels.Labels) bool {
	select {
	case <-s.armed:
		s.stallOne.Do(func() {
			close(s.stalled)
			<-s.release
		})
	default:
	}
	return s.Selector.Matches(l)
}

// TestReadsDoNotWaitForTheDispatcher: while the dispatcher is held up in
// the middle of offering an event to the watchers, a new watch, a write
// taken in by the cache, and gets and lists from the cache all go through.
// (They did not: a new watch waited for the registry's lock, which the
// dispatcher held, while holding the cache's read lock; the next change
// waited for that read lock, and every read queued behind the change.)
func TestReadsDoNotWaitForTheDispatcher(t *testing.T) {
	ctx, c, _ := testSetup(t)
	create := func(name string) {
		t.Helper()
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if err := c.Create(ctx, podKey(name), pod, &example.Pod{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	create("before")
	waitFor(t, 5*time.Second, func() bool {
		return c.Get(ctx, podKey("before"), storage.GetOptions{ResourceVersion: "0"}, &example.Pod{}) == nil
	})
	sel := &stallingSelector{Selector: labels.Everything(), armed: make(chan struct{}), stalled: make(chan struct{}), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(sel.release)
		}
	}
	defer release()
	stalling := watchFrom(t, ctx, c, c.ResourceVersion(), fields.Everything(), sel)
	close(sel.armed)
	create("stalls-the-dispatcher")
	select {
	case <-sel.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the dispatcher never offered the event to the stalling watcher")
	}

	within := func(what string, f func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s waited for the stalled dispatcher", what)
		}
	}
	within("a new watch", func() error {
		w, err := c.Watch(ctx, podPrefix, storage.ListOptions{ResourceVersion: strconv.FormatUint(c.ResourceVersion(), 10), Recursive: true, Predicate: storage.Everything})
		if err == nil {
			t.Cleanup(w.Stop)
		}
		return err
	})
	// A change the cache takes in (it needs the write lock) ...
	create("taken-in")
	waitFor(t, 5*time.Second, func() bool {
		var out example.Pod
		return c.Get(ctx, podKey("taken-in"), storage.GetOptions{ResourceVersion: "0"}, &out) == nil
	})
	// ... and reads after it.
	for i := range 3 {
		within("get "+strconv.Itoa(i), func() error {
			return c.Get(ctx, podKey("before"), storage.GetOptions{ResourceVersion: "0"}, &example.Pod{})
		})
		within("list "+strconv.Itoa(i), func() error {
			return c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, &example.PodList{})
		})
	}

	// Let the dispatcher go: the stalling watcher gets both changes.
	release()
	cons := consume(stalling)
	deadline := time.Now().Add(10 * time.Second)
	for got, _, st := cons.snapshot(); len(got) != 2; got, _, st = cons.snapshot() {
		if time.Now().After(deadline) {
			t.Fatalf("stalling watcher got %v, ended %v", got, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got, _, _ := cons.snapshot()
	if got[0].name != "stalls-the-dispatcher" || got[1].name != "taken-in" {
		t.Fatalf("stalling watcher got %v", got)
	}
}
