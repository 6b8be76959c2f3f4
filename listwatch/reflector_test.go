package listwatch

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func testPod(ns, name, rv, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv},
		Spec:       v1.PodSpec{NodeName: node},
	}
}

// chanLW is an in-process ListerWatcher: lists come from a function and
// each watch is a fresh watcher the test feeds.
type chanLW struct {
	list     func(opts metav1.ListOptions) (runtime.Object, error)
	mu       sync.Mutex
	watches  chan *watch.RaceFreeFakeWatcher
	watchOps []metav1.ListOptions
}

func newChanLW(list func(metav1.ListOptions) (runtime.Object, error)) *chanLW {
	return &chanLW{list: list, watches: make(chan *watch.RaceFreeFakeWatcher, 16)}
}

func (c *chanLW) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return c.list(opts)
}

func (c *chanLW) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	c.watchOps = append(c.watchOps, opts)
	c.mu.Unlock()
	w := watch.NewRaceFreeFake()
	c.watches <- w
	return w, nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestReflectorListsThenAppliesWatchEventsAndBookmarks(t *testing.T) {
	lw := newChanLW(func(opts metav1.ListOptions) (runtime.Object, error) {
		return &v1.PodList{
			ListMeta: metav1.ListMeta{ResourceVersion: "10"},
			Items:    []v1.Pod{*testPod("ns", "a", "5", "n1")},
		}, nil
	})
	store := NewIndexer(IndexerOptions[*v1.Pod]{})
	r, err := NewReflector(Options{Name: "pods", ListerWatcher: lw, Store: store, ExpectedType: &v1.Pod{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	select {
	case <-r.Synced():
	case <-time.After(20 * time.Second):
		t.Fatal("never synced")
	}
	if !r.HasSynced() || store.Len() != 1 || r.LastSyncResourceVersion() != "10" {
		t.Fatalf("after list: synced=%v len=%d rv=%q", r.HasSynced(), store.Len(), r.LastSyncResourceVersion())
	}
	w := <-lw.watches
	w.Add(testPod("ns", "b", "11", "n2"))
	w.Modify(testPod("ns", "a", "12", "n1"))
	w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "15"}})
	waitFor(t, "bookmark RV", func() bool { return r.LastSyncResourceVersion() == "15" })
	if got := store.Keys(); len(got) != 2 || store.ResourceVersion() != "15" {
		t.Fatalf("keys %v store rv %q", got, store.ResourceVersion())
	}
	lw.mu.Lock()
	op := lw.watchOps[0]
	lw.mu.Unlock()
	if op.ResourceVersion != "10" || !op.AllowWatchBookmarks || op.TimeoutSeconds == nil ||
		*op.TimeoutSeconds < 300 || *op.TimeoutSeconds >= 600 {
		t.Fatalf("watch options %+v", op)
	}
}

func TestNewReflectorRefusesIncompleteOptions(t *testing.T) {
	lw := ListWatchFuncs{}
	store := NewIndexer(IndexerOptions[*v1.Pod]{})
	tests := []struct {
		name string
		opts Options
	}{
		{"no ListerWatcher", Options{Store: store}},
		{"no Store", Options{ListerWatcher: lw}},
		{"max watch timeout under min", Options{ListerWatcher: lw, Store: store, MinWatchTimeout: time.Hour, MaxWatchTimeout: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewReflector(tt.opts); err == nil {
				t.Fatal("NewReflector succeeded")
			}
		})
	}
}

func TestReflectorStopsWithItsContextDuringAList(t *testing.T) {
	entered := make(chan struct{})
	lw := ListWatchFuncs{ListFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
		close(entered)
		<-ctx.Done() // a list that hangs until cancelled
		return nil, ctx.Err()
	}}
	r, err := NewReflector(Options{ListerWatcher: lw, Store: NewIndexer(IndexerOptions[*v1.Pod]{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	<-entered
	if r.HasSynced() {
		t.Fatal("synced before its list returned")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestReflectorSkipsEventsItCannotUse(t *testing.T) {
	lw := &stepLW{listRV: "10"}
	store := NewIndexer(IndexerOptions[*v1.Pod]{})
	r, err := NewReflector(Options{Name: "pods", ListerWatcher: lw, Store: store, ExpectedType: &v1.Pod{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the watch", func() bool { return lw.watcher() != nil })
	w := lw.watcher()
	w.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "11"}}) // wrong type
	w.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12"}})              // store refuses: no name
	w.Add(testPod("ns", "a", "13", "n1"))
	waitFor(t, "rv 13", func() bool { return r.LastSyncResourceVersion() == "13" })
	if got := store.Keys(); len(got) != 1 || got[0] != "ns/a" {
		t.Fatalf("store keys %q", got)
	}
	if _, w := lw.counts(); w != 1 {
		t.Fatalf("%d watches: unusable events must not end the watch", w)
	}
}

func TestReflectorDoesNotResumeFromSyntheticAddsOfAWatchFromEmptyRV(t *testing.T) {
	lw := &stepLW{listRV: ""} // a server whose lists carry no resourceVersion
	r, err := NewReflector(Options{Name: "pods", ListerWatcher: lw, Store: NewIndexer(IndexerOptions[*v1.Pod]{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the watch", func() bool { return lw.watcher() != nil })
	w := lw.watcher()
	w.Add(testPod("ns", "b", "20", "n1"))
	w.Add(testPod("ns", "a", "7", "n1"))
	w.Modify(testPod("ns", "a", "21", "n1"))
	waitFor(t, "rv 21", func() bool { return r.LastSyncResourceVersion() == "21" })
	w.Stop()
	waitFor(t, "the second watch", func() bool { _, n := lw.counts(); return n == 2 })
	if lw.watchOpts(0).ResourceVersion != "" || lw.watchOpts(1).ResourceVersion != "21" {
		t.Fatalf("watched from %q then %q", lw.watchOpts(0).ResourceVersion, lw.watchOpts(1).ResourceVersion)
	}
}

func TestReflectorRunsOnce(t *testing.T) {
	lw := &stepLW{listRV: "1"}
	r, err := NewReflector(Options{ListerWatcher: lw, Store: NewIndexer(IndexerOptions[*v1.Pod]{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-r.Synced()
	second := make(chan struct{})
	go func() { defer close(second); r.Run(ctx) }()
	select {
	case <-second:
	case <-time.After(20 * time.Second):
		t.Fatal("a second Run did not return at once")
	}
	if lists, _ := lw.counts(); lists != 1 {
		t.Fatalf("%d lists, want 1", lists)
	}
}

func TestReflectorWithExpectedGVKSkipsOtherKinds(t *testing.T) {
	lw := &stepLW{listRV: "10"}
	store := NewIndexer(IndexerOptions[runtime.Object]{})
	gvk := v1.SchemeGroupVersion.WithKind("Pod")
	r, err := NewReflector(Options{Name: "pods", ListerWatcher: lw, Store: store, ExpectedGVK: &gvk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the watch", func() bool { return lw.watcher() != nil })
	object := func(kind, name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetResourceVersion(rv)
		return u
	}
	lw.watcher().Add(object("ConfigMap", "cm", "11"))
	lw.watcher().Add(object("Pod", "p", "12"))
	waitFor(t, "rv 12", func() bool { return r.LastSyncResourceVersion() == "12" })
	if got := store.Keys(); len(got) != 1 || got[0] != "ns/p" {
		t.Fatalf("store keys %q, want only the pod", got)
	}
}
