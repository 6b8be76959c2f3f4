package watchcache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// podState is what the invariant tests vary on a pod; nil means absent.
type podState struct {
	node  string
	label string
}

// op is one acknowledged write: the pod's state before and after, at rv.
type op struct {
	name     string
	rv       uint64
	old, new *podState
}

// seen is one notification as a watcher received it.
type seen struct {
	typ  watch.EventType
	name string
	rv   uint64
}

func (s seen) String() string { return fmt.Sprintf("%s %s@%d", s.typ, s.name, s.rv) }

// expect computes what a watcher that selects pods by match must receive
// for ops, in resourceVersion order: ADDED when a pod enters its
// selection, MODIFIED while it stays, DELETED when it leaves.
func expect(ops []op, match func(name string, s *podState) bool) []seen {
	sorted := slices.Clone(ops)
	slices.SortFunc(sorted, func(a, b op) int { return int(a.rv) - int(b.rv) })
	var out []seen
	for _, o := range sorted {
		was := o.old != nil && match(o.name, o.old)
		is := o.new != nil && match(o.name, o.new)
		switch {
		case is && !was:
			out = append(out, seen{watch.Added, o.name, o.rv})
		case is && was:
			out = append(out, seen{watch.Modified, o.name, o.rv})
		case was:
			out = append(out, seen{watch.Deleted, o.name, o.rv})
		}
	}
	return out
}

// writer applies writes through the cache (which passes them to etcd) and
// records them.
type writer struct {
	c  *Cache
	mu sync.Mutex
	op []op
}

func podKey(name string) string { return "/pods/ns/" + name }

func (w *writer) apply(ctx context.Context, t testing.TB, name string, old, new *podState) {
	t.Helper()
	out := &example.Pod{}
	var err error
	switch {
	case old == nil:
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"l": new.label}}, Spec: example.PodSpec{NodeName: new.node}}
		err = w.c.Create(ctx, podKey(name), pod, out, 0)
	case new == nil:
		err = w.c.Delete(ctx, podKey(name), out, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
	default:
		err = w.c.GuaranteedUpdate(ctx, podKey(name), out, false, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			pod := in.(*example.Pod).DeepCopy()
			pod.Spec.NodeName = new.node
			pod.Labels = map[string]string{"l": new.label}
			return pod, nil, nil
		}, nil)
	}
	if err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	rv, err := storage.APIObjectVersioner{}.ObjectResourceVersion(out)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.op = append(w.op, op{name: name, rv: rv, old: old, new: new})
	w.mu.Unlock()
}

func (w *writer) ops() []op {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.op)
}

func (w *writer) lastRV() uint64 {
	var rv uint64
	for _, o := range w.ops() {
		rv = max(rv, o.rv)
	}
	return rv
}

// consumer reads one watch to its end.
type consumer struct {
	mu       sync.Mutex
	events   []seen
	bookmark uint64 // highest bookmark seen
	err      *metav1.Status
	closed   bool
	done     chan struct{}
}

func consume(w watch.Interface) *consumer {
	c := &consumer{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ev := range w.ResultChan() {
			obj := ev.Object
			if co, ok := obj.(runtime.CacheableObject); ok {
				obj = co.GetObject()
			}
			c.mu.Lock()
			switch ev.Type {
			case watch.Error:
				st := obj.(*metav1.Status)
				c.err = st
			case watch.Bookmark:
				rv, _ := storage.APIObjectVersioner{}.ObjectResourceVersion(obj)
				c.bookmark = max(c.bookmark, rv)
			default:
				pod := obj.(*example.Pod)
				rv, _ := storage.APIObjectVersioner{}.ObjectResourceVersion(pod)
				c.events = append(c.events, seen{ev.Type, pod.Name, rv})
			}
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}()
	return c
}

func (c *consumer) snapshot() (events []seen, bookmark uint64, err *metav1.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events), c.bookmark, c.err
}

// barrier makes the cache send every bookmark-allowing watcher a bookmark
// behind everything written so far, and waits until each consumer has it:
// what a consumer holds then is everything it will get up to rv.
func barrier(t testing.TB, c *Cache, rv uint64, consumers []*consumer) {
	t.Helper()
	waitFor(t, 60*time.Second, func() bool { return c.ResourceVersion() >= rv })
	c.pending.push(pendingItem{bookmarkAll: true})
	deadline := time.Now().Add(120 * time.Second)
	for _, cons := range consumers {
		for {
			_, bm, st := cons.snapshot()
			if bm >= rv || st != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a watcher did not get the barrier bookmark at %d (has %d)", rv, bm)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// checkExactly fails unless got is want: every event, once, in order.
func checkExactly(t testing.TB, who string, got, want []seen) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d is %v, want %v (got %d events, want %d)", who, i, got[i], want[i], len(got), len(want))
		}
	}
	t.Fatalf("%s: got %d events, want %d (first extra or missing: got %v / want %v)", who, len(got), len(want), tail(got, len(want)), tail(want, len(got)))
}

func tail(s []seen, from int) []seen {
	if from >= len(s) {
		return nil
	}
	return s[from:min(len(s), from+3)]
}

func isExpiredStatus(st *metav1.Status) bool {
	return st != nil && apierrors.IsResourceExpired(&apierrors.StatusError{ErrStatus: *st})
}

func fieldsEverything() fields.Selector { return fields.Everything() }
func labelsEverything() labels.Selector { return labels.Everything() }
