package watchcache

// Tests of the watch cache's delivery guarantees over a real etcd:
// every watcher sees every event that matches it, in order, exactly once,
// or is ended with an error that makes it re-list; a list at R followed by
// a watch from R misses and repeats nothing; a stuck watcher does not
// delay the others.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

func nodeName(i int) string { return "node-" + strconv.Itoa(i) }

func watchFrom(t testing.TB, ctx context.Context, c *Cache, rv uint64, field fields.Selector, label labels.Selector) watch.Interface {
	t.Helper()
	w, err := c.Watch(ctx, podPrefix, storage.ListOptions{
		ResourceVersion: strconv.FormatUint(rv, 10),
		Recursive:       true,
		Predicate:       storage.SelectionPredicate{Label: label, Field: field, AllowWatchBookmarks: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// TestTenThousandWatchersGetExactlyTheirEvents: 10 000 watchers of one
// node each (the kubelet's field selector) and one watcher of everything;
// pods are created on nodes, moved between nodes and deleted. Each watcher
// gets exactly the events of its node, in order: ADDED when a pod arrives,
// DELETED when it leaves or goes.
func TestTenThousandWatchersGetExactlyTheirEvents(t *testing.T) {
	const watchers, pods, moves, deletes = 10_000, 1500, 500, 300
	ctx, c, _ := testSetup(t, withNodeNameIndex)
	start := c.ResourceVersion()
	t0 := time.Now()
	defer func() { t.Logf("took %v", time.Since(t0)) }()

	consumers := make([]*consumer, watchers+1)
	for i := range watchers {
		consumers[i] = consume(watchFrom(t, ctx, c, start, fields.OneTermEqualSelector("spec.nodeName", nodeName(i)), labels.Everything()))
	}
	consumers[watchers] = consume(watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything()))
	if n := c.Watchers(); n != watchers+1 {
		t.Fatalf("%d watchers registered, want %d", n, watchers+1)
	}

	w := &writer{c: c}
	const workers = 8
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < pods; i += workers {
				name := fmt.Sprintf("pod-%05d", i)
				at := &podState{node: nodeName(i * 7 % watchers)}
				w.apply(ctx, t, name, nil, at)
				if i < moves {
					to := &podState{node: nodeName((i*7 + 1) % watchers)}
					w.apply(ctx, t, name, at, to)
					at = to
				}
				if i >= pods-deletes {
					w.apply(ctx, t, name, at, nil)
				}
			}
		}()
	}
	t.Logf("watchers registered after %v", time.Since(t0))
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("writes done after %v", time.Since(t0))
	ops := w.ops()
	barrier(t, c, w.lastRV(), consumers)
	t.Logf("barrier after %v", time.Since(t0))

	byNode := expectByNode(ops)
	for i := range watchers {
		want := byNode[nodeName(i)]
		got, _, st := consumers[i].snapshot()
		if st != nil {
			t.Fatalf("watcher of %s ended: %v", nodeName(i), st.Message)
		}
		checkExactly(t, "watcher of "+nodeName(i), got, want)
	}
	got, _, _ := consumers[watchers].snapshot()
	checkExactly(t, "watcher of everything", got, expect(ops, func(string, *podState) bool { return true }))
	if n := c.SlowWatchersEnded(); n != 0 {
		t.Fatalf("%d watchers ended as slow", n)
	}
}

// TestStuckWatcherIsEndedWithoutDelayingOthers: a watcher whose client
// never reads is ended with 410 Expired once its buffer has stayed full
// past the budget; the watchers that read get every event, in order, before
// and after, and the stuck one's last words are the 410.
func TestStuckWatcherIsEndedWithoutDelayingOthers(t *testing.T) {
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) {
		o.WatchBuffer = 10
		o.SlowWatcherBudget = 100 * time.Millisecond
	}))
	start := c.ResourceVersion()
	var readers []*consumer
	for range 5 {
		readers = append(readers, consume(watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything())))
	}
	stuck := watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything())

	w := &writer{c: c}
	deadline := time.Now().Add(60 * time.Second)
	i := 0
	for c.SlowWatchersEnded() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the stuck watcher was not ended after %d events", i)
		}
		w.apply(ctx, t, fmt.Sprintf("pod-%05d", i), nil, &podState{node: "n"})
		i++
	}
	// Life goes on for the others.
	for j := range 50 {
		w.apply(ctx, t, fmt.Sprintf("after-%05d", j), nil, &podState{node: "n"})
	}
	ops := w.ops()
	barrier(t, c, w.lastRV(), readers)
	want := expect(ops, func(string, *podState) bool { return true })
	for k, r := range readers {
		got, _, st := r.snapshot()
		if st != nil {
			t.Fatalf("reader %d ended: %v", k, st.Message)
		}
		checkExactly(t, fmt.Sprintf("reader %d", k), got, want)
	}
	if n := c.SlowWatchersEnded(); n != 1 {
		t.Fatalf("%d watchers ended as slow, want 1", n)
	}

	// The stuck client finally reads: a prefix of the events, in order,
	// then 410 Expired, then the end.
	s := consume(stuck)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the stuck watcher's channel did not close")
	}
	got, _, st := s.snapshot()
	if !isExpiredStatus(st) {
		t.Fatalf("stuck watcher ended with %v, want 410 Expired", st)
	}
	if len(got) >= len(want) {
		t.Fatalf("stuck watcher got all %d events; it should have been cut", len(got))
	}
	checkExactly(t, "stuck watcher", got, want[:len(got)])
}

// TestFullWatcherDoesNotHoldUpOthers: with a budget too long to matter, a
// watcher whose client does not read sits with a full buffer while the
// readers get every event: nothing couples them but the dispatcher, which
// never waits for a watcher.
func TestFullWatcherDoesNotHoldUpOthers(t *testing.T) {
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) {
		o.WatchBuffer = 10
		o.SlowWatcherBudget = time.Hour
	}))
	start := c.ResourceVersion()
	var readers []*consumer
	for range 3 {
		readers = append(readers, consume(watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything())))
	}
	_ = watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything()) // never read
	w := &writer{c: c}
	for i := range 200 {
		w.apply(ctx, t, fmt.Sprintf("pod-%05d", i), nil, &podState{node: "n"})
	}
	barrier(t, c, w.lastRV(), readers)
	want := expect(w.ops(), func(string, *podState) bool { return true })
	for k, r := range readers {
		got, _, _ := r.snapshot()
		checkExactly(t, fmt.Sprintf("reader %d", k), got, want)
	}
	if n := c.SlowWatchersEnded(); n != 0 {
		t.Fatalf("%d watchers ended; the budget is an hour", n)
	}
}

// TestWatcherReadInBurstsGetsEveryEventInOrder reads watchers with pauses,
// so that their result channels fill (notifications queue and the
// watcher's goroutine sends them) and drain (the goroutine idles and the
// dispatcher delivers straight into the channel) many times over: each
// gets every event once, in order, across the switches between the two.
func TestWatcherReadInBurstsGetsEveryEventInOrder(t *testing.T) {
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) {
		o.SlowWatcherBudget = time.Hour
	}))
	start := c.ResourceVersion()
	var readers []*consumer
	for k := range 4 {
		readers = append(readers, consume(paced(watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything()), 7+k*5, 5*time.Millisecond)))
	}
	w := &writer{c: c}
	state := map[string]*podState{}
	for i := range 300 {
		name := fmt.Sprintf("pod-%03d", i%40)
		old := state[name]
		var next *podState
		if old == nil || i%7 != 0 { // every seventh write to a pod deletes it
			next = &podState{node: "n", label: fmt.Sprint(i)}
		}
		w.apply(ctx, t, name, old, next)
		state[name] = next
	}
	barrier(t, c, w.lastRV(), readers)
	want := expect(w.ops(), func(string, *podState) bool { return true })
	for k, r := range readers {
		got, _, _ := r.snapshot()
		checkExactly(t, fmt.Sprintf("reader %d", k), got, want)
	}
}

// paced forwards w's events, pausing for pause after every every-th.
func paced(w watch.Interface, every int, pause time.Duration) watch.Interface {
	p := &pacedWatch{Interface: w, ch: make(chan watch.Event)}
	go func() {
		defer close(p.ch)
		i := 0
		for ev := range w.ResultChan() {
			if i++; i%every == 0 {
				time.Sleep(pause)
			}
			p.ch <- ev
		}
	}()
	return p
}

type pacedWatch struct {
	watch.Interface
	ch chan watch.Event
}

func (p *pacedWatch) ResultChan() <-chan watch.Event { return p.ch }

// cuttingListerWatcher is the cache's view of the store with a handle to
// end the current etcd watch, as a dropped connection or an etcd leader
// change would.
type cuttingListerWatcher struct {
	inner   *storeListerWatcher
	mu      sync.Mutex
	current watch.Interface
	gate    chan struct{} // when not nil, new watches wait for it to close
	watches atomic.Int64
	lists   atomic.Int64
	waiting atomic.Int64 // watches waiting at the gate
}

// hold makes new watches wait until release, as an etcd that cannot be
// reached would.
func (l *cuttingListerWatcher) hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gate = make(chan struct{})
}

func (l *cuttingListerWatcher) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.gate)
	l.gate = nil
}

func (l *cuttingListerWatcher) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.lists.Add(1)
	return l.inner.List(ctx, opts)
}

func (l *cuttingListerWatcher) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	gate := l.gate
	l.mu.Unlock()
	if gate != nil {
		l.waiting.Add(1)
		defer l.waiting.Add(-1)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w, err := l.inner.Watch(ctx, opts)
	if err == nil {
		l.watches.Add(1)
		l.mu.Lock()
		if gate == nil && l.gate != nil {
			// A hold began while this watch was opening: it is cut at
			// once, and the Reflector's next watch waits at the gate.
			w.Stop()
		} else {
			l.current = w
		}
		l.mu.Unlock()
	}
	return w, err
}

// down holds new watches, cuts the current one and waits until the
// Reflector waits at the gate: from then on the cache hears nothing.
func (l *cuttingListerWatcher) down(t testing.TB) {
	l.hold()
	l.cut()
	waitFor(t, 30*time.Second, func() bool { return l.waiting.Load() > 0 })
}

func (l *cuttingListerWatcher) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current != nil {
		l.current.Stop()
		l.current = nil
	}
}

// TestWatchersLoseNothingAcrossCompactionAndEtcdWatchRestarts: while pods
// are created, moved, relabelled and deleted, etcd is compacted and the
// cache's etcd watch is cut again and again. Watchers of everything, of a
// node, of a label and of one pod stay open throughout and get exactly
// their events; a list at R followed by a watch from R adds up to the same.
func TestWatchersLoseNothingAcrossCompactionAndEtcdWatchRestarts(t *testing.T) {
	var lw *cuttingListerWatcher
	ctx, c, env := testSetup(t, withNodeNameIndex, withOptions(func(o *Options) {
		lw = &cuttingListerWatcher{inner: &storeListerWatcher{store: o.Store, prefix: o.ResourcePrefix, newList: o.NewListFunc}}
		o.ListerWatcher = lw
	}))
	start := c.ResourceVersion()
	type selection struct {
		name  string
		field fields.Selector
		label labels.Selector
		key   string
		match func(name string, s *podState) bool
	}
	selections := []selection{
		{name: "everything", match: func(string, *podState) bool { return true }},
		{name: "node-1", field: fields.OneTermEqualSelector("spec.nodeName", "node-1"), match: func(_ string, s *podState) bool { return s.node == "node-1" }},
		{name: "node-2", field: fields.OneTermEqualSelector("spec.nodeName", "node-2"), match: func(_ string, s *podState) bool { return s.node == "node-2" }},
		{name: "label b", label: labels.SelectorFromSet(labels.Set{"l": "b"}), match: func(_ string, s *podState) bool { return s.label == "b" }},
		{name: "one pod", key: podKey("pod-007"), match: func(n string, _ *podState) bool { return n == "pod-007" }},
	}
	var consumers []*consumer
	for _, sel := range selections {
		f, l := sel.field, sel.label
		if f == nil {
			f = fields.Everything()
		}
		if l == nil {
			l = labels.Everything()
		}
		if sel.key != "" {
			w, err := c.Watch(ctx, sel.key, storage.ListOptions{ResourceVersion: strconv.FormatUint(start, 10), Predicate: storage.SelectionPredicate{Label: l, Field: f, AllowWatchBookmarks: true}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			consumers = append(consumers, consume(w))
			continue
		}
		consumers = append(consumers, consume(watchFrom(t, ctx, c, start, f, l)))
	}

	w := &writer{c: c}
	state := map[string]*podState{}
	nodes := []string{"node-1", "node-2", "node-3"}
	labelsOf := []string{"a", "b"}
	var listRV uint64
	var listed *example.PodList
	for step := range 600 {
		name := fmt.Sprintf("pod-%03d", step%40)
		old := state[name]
		var next *podState
		if old == nil || step%7 != 0 {
			next = &podState{node: nodes[step%3], label: labelsOf[step/3%2]}
		}
		w.apply(ctx, t, name, old, next)
		state[name] = next
		switch {
		case step%50 == 10:
			// Cut a live etcd watch (one that has delivered everything
			// so far): the Reflector resumes from its last resourceVersion.
			waitFor(t, 30*time.Second, func() bool { return c.ResourceVersion() >= w.lastRV() })
			lw.cut()
		case step%50 == 30:
			// Compact what the cache has seen, as the compactor compacts
			// old history: the cache's etcd watch is past it.
			waitFor(t, 30*time.Second, func() bool { return c.ResourceVersion() >= w.lastRV() })
			if err := compactAt(ctx, env, c.ResourceVersion()); err != nil {
				t.Fatal(err)
			}
		case step == 300:
			// Invariant 2: a list at R then a watch from R.
			listed = &example.PodList{}
			if err := c.GetList(ctx, podPrefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, listed); err != nil {
				t.Fatal(err)
			}
			listRV, _ = strconv.ParseUint(listed.ResourceVersion, 10, 64)
			consumers = append(consumers, consume(watchFrom(t, ctx, c, listRV, fields.Everything(), labels.Everything())))
		}
	}
	ops := w.ops()
	barrier(t, c, w.lastRV(), consumers)

	for i, sel := range selections {
		got, _, st := consumers[i].snapshot()
		if st != nil {
			t.Fatalf("watcher of %s ended: %v", sel.name, st.Message)
		}
		checkExactly(t, "watcher of "+sel.name, got, expect(ops, sel.match))
	}

	// The list at R plus the watch from R give the final state and
	// repeat nothing.
	var after []op
	for _, o := range ops {
		if o.rv > listRV {
			after = append(after, o)
		}
	}
	got, _, _ := consumers[len(selections)].snapshot()
	checkExactly(t, "watcher from the list's resourceVersion", got, expect(after, func(string, *podState) bool { return true }))
	final := map[string]bool{}
	for _, p := range listed.Items {
		final[p.Name] = true
	}
	for _, e := range got {
		final[e.name] = e.typ != watch.Deleted
	}
	for name, s := range state {
		if (s != nil) != final[name] {
			t.Fatalf("list + watch say %s exists=%v, etcd says %v", name, final[name], s != nil)
		}
	}
	if n := lw.watches.Load(); n < 10 {
		t.Fatalf("the etcd watch started %d times, want at least 10 (it was cut 12 times)", n)
	}
	if n := c.Watchers(); n != len(consumers) {
		t.Fatalf("%d watchers left, want all %d", n, len(consumers))
	}
}

func compactAt(ctx context.Context, env *testEnv, rv uint64) error {
	_, err := env.etcd.Compact(ctx, int64(rv))
	return err
}

// expectByNode is expect for a watcher of each node, in one pass.
func expectByNode(ops []op) map[string][]seen {
	sorted := slices.Clone(ops)
	slices.SortFunc(sorted, func(a, b op) int { return int(a.rv) - int(b.rv) })
	out := map[string][]seen{}
	for _, o := range sorted {
		switch {
		case o.old == nil:
			out[o.new.node] = append(out[o.new.node], seen{watch.Added, o.name, o.rv})
		case o.new == nil:
			out[o.old.node] = append(out[o.old.node], seen{watch.Deleted, o.name, o.rv})
		case o.old.node == o.new.node:
			out[o.new.node] = append(out[o.new.node], seen{watch.Modified, o.name, o.rv})
		default:
			out[o.old.node] = append(out[o.old.node], seen{watch.Deleted, o.name, o.rv})
			out[o.new.node] = append(out[o.new.node], seen{watch.Added, o.name, o.rv})
		}
	}
	return out
}

// TestRelistEndsOnlyTheWatchersThatMissedChanges: the cache's etcd watch
// is down while pods of node-1 change and etcd compacts that history, so
// the cache must re-list. Watchers whose selection changed meanwhile
// (node-1, everything) are ended with 410 Expired, so their clients
// re-list; the watcher of node-2, whose pods did not change, stays open
// and gets every later event without a gap or a repeat.
func TestRelistEndsOnlyTheWatchersThatMissedChanges(t *testing.T) {
	var lw *cuttingListerWatcher
	ctx, c, env := testSetup(t, withNodeNameIndex, withOptions(func(o *Options) {
		lw = &cuttingListerWatcher{inner: &storeListerWatcher{store: o.Store, prefix: o.ResourcePrefix, newList: o.NewListFunc}}
		o.ListerWatcher = lw
	}))
	w := &writer{c: c}
	for i := range 10 {
		w.apply(ctx, t, fmt.Sprintf("pod-%d", i), nil, &podState{node: []string{"node-1", "node-2"}[i%2]})
	}
	waitFor(t, 30*time.Second, func() bool { return c.ResourceVersion() >= w.lastRV() })
	start := c.ResourceVersion()
	node1 := consume(watchFrom(t, ctx, c, start, fields.OneTermEqualSelector("spec.nodeName", "node-1"), labels.Everything()))
	node2 := consume(watchFrom(t, ctx, c, start, fields.OneTermEqualSelector("spec.nodeName", "node-2"), labels.Everything()))
	all := consume(watchFrom(t, ctx, c, start, fields.Everything(), labels.Everything()))

	lw.down(t)
	missed := &writer{c: c}
	missed.apply(ctx, t, "pod-0", &podState{node: "node-1"}, &podState{node: "node-1", label: "x"})
	missed.apply(ctx, t, "pod-2", &podState{node: "node-1"}, nil)
	if err := compactAt(ctx, env, missed.lastRV()); err != nil {
		t.Fatal(err)
	}
	lw.release()
	// The Reflector's watch from before the gap is refused (410), it
	// re-lists, and the cache catches up.
	waitFor(t, 60*time.Second, func() bool { return c.ResourceVersion() >= missed.lastRV() })

	after := &writer{c: c}
	after.apply(ctx, t, "pod-1", &podState{node: "node-2"}, &podState{node: "node-2", label: "y"})
	after.apply(ctx, t, "pod-new", nil, &podState{node: "node-2"})
	barrier(t, c, after.lastRV(), []*consumer{node2})

	for name, cons := range map[string]*consumer{"node-1": node1, "everything": all} {
		select {
		case <-cons.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("watcher of %s was not ended", name)
		}
		if _, _, st := cons.snapshot(); !isExpiredStatus(st) {
			t.Fatalf("watcher of %s ended with %v, want 410 Expired", name, st)
		}
	}
	if n := lw.lists.Load(); n != 2 {
		t.Fatalf("the cache listed %d times, want 2 (the first list and the re-list)", n)
	}
	got, _, st := node2.snapshot()
	if st != nil {
		t.Fatalf("watcher of node-2 ended: %v", st.Message)
	}
	checkExactly(t, "watcher of node-2", got, expect(after.ops(), func(_ string, s *podState) bool { return s.node == "node-2" }))
}
