package watchcache

import (
	"context"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// etcdLists runs a GetList and returns the etcd list requests it made.
func etcdLists(t *testing.T, c *Cache, env *testEnv, opts storage.ListOptions) (*example.PodList, []storagetesting.RecordedList) {
	t.Helper()
	key := t.Name() + strconv.FormatInt(time.Now().UnixNano(), 10)
	ctx := context.WithValue(context.Background(), storagetesting.RecorderContextKey, key)
	list := &example.PodList{}
	if err := c.GetList(ctx, podPrefix, opts, list); err != nil {
		t.Fatalf("GetList(%+v): %v", opts, err)
	}
	return list, env.recorder.ListRequestForKey(key)
}

// TestListsServedFromMemory: consistent, "0", NotOlderThan, Exact and
// continued lists are answered by the cache, without listing etcd.
func TestListsServedFromMemory(t *testing.T) {
	ctx, c, env := testSetup(t)
	w := &writer{c: c}
	for i := range 5 {
		w.apply(ctx, t, "pod-"+strconv.Itoa(i), nil, &podState{node: "n"})
	}
	rv := strconv.FormatUint(w.lastRV(), 10)
	first := strconv.FormatUint(w.ops()[0].rv, 10)
	page, _ := etcdLists(t, c, env, storage.ListOptions{Recursive: true, Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: 2}})
	tests := []struct {
		name  string
		opts  storage.ListOptions
		items int
	}{
		{name: "consistent", opts: storage.ListOptions{Predicate: storage.Everything}, items: 5},
		{name: "any", opts: storage.ListOptions{ResourceVersion: "0", Predicate: storage.Everything}, items: 5},
		{name: "not older than", opts: storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Predicate: storage.Everything}, items: 5},
		{name: "exact, in the window", opts: storage.ListOptions{ResourceVersion: first, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: storage.Everything}, items: 1},
		{name: "continue", opts: storage.ListOptions{Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: 2, Continue: page.Continue}}, items: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Recursive = true
			list, calls := etcdLists(t, c, env, tt.opts)
			if len(calls) != 0 {
				t.Fatalf("the cache listed etcd: %+v", calls)
			}
			if len(list.Items) != tt.items {
				t.Fatalf("%d items, want %d", len(list.Items), tt.items)
			}
		})
	}
}

// TestNotOlderThanAFutureVersionIsTooLarge: a read at a resourceVersion the
// cache never reaches waits for the freshness timeout, then says
// ResourceVersionTooLarge (504 with a retry hint), for lists, gets and
// watch lists alike.
func TestNotOlderThanAFutureVersionIsTooLarge(t *testing.T) {
	ctx, c, _ := testSetup(t, withOptions(func(o *Options) { o.FreshnessTimeout = 200 * time.Millisecond }))
	future := strconv.FormatUint(c.ResourceVersion()+1000, 10)
	err := c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: future, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: storage.Everything}, &example.PodList{})
	if !storage.IsTooLargeResourceVersion(err) {
		t.Fatalf("GetList: %v, want TooLargeResourceVersion", err)
	}
	err = c.Get(ctx, podKey("x"), storage.GetOptions{ResourceVersion: future}, &example.Pod{})
	if !storage.IsTooLargeResourceVersion(err) {
		t.Fatalf("Get: %v, want TooLargeResourceVersion", err)
	}
	sendInitial := true
	w, err := c.Watch(ctx, podPrefix, storage.ListOptions{ResourceVersion: future, SendInitialEvents: &sendInitial, Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if ev.Type != watch.Error || ev.Object.(*metav1.Status).Code != 504 {
		t.Fatalf("watch list: %v %v, want an ERROR 504", ev.Type, ev.Object)
	}
}

// TestConsistentListFallsBackToEtcd: when the cache cannot catch up with
// etcd's current revision (its etcd watch is down), a consistent list is
// answered by etcd, with the latest data.
func TestConsistentListFallsBackToEtcd(t *testing.T) {
	var lw *cuttingListerWatcher
	ctx, c, env := testSetup(t, withOptions(func(o *Options) {
		o.FreshnessTimeout = 200 * time.Millisecond
		lw = &cuttingListerWatcher{inner: &storeListerWatcher{store: o.Store, prefix: o.ResourcePrefix, newList: o.NewListFunc}}
		o.ListerWatcher = lw
	}))
	lw.down(t)
	t.Cleanup(lw.release)
	w := &writer{c: c}
	w.apply(ctx, t, "unseen", nil, &podState{node: "n"})
	list, calls := etcdLists(t, c, env, storage.ListOptions{Recursive: true, Predicate: storage.Everything})
	if len(calls) != 1 {
		t.Fatalf("etcd list calls %+v, want one (the fallback)", calls)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "unseen" {
		t.Fatalf("fallback list %+v, want the unseen pod", list.Items)
	}
}

// TestReadsBeforeTheFirstListGoToEtcd: a cache that has not listed yet
// answers from etcd and is not ready.
func TestReadsBeforeTheFirstListGoToEtcd(t *testing.T) {
	ctx, c, env := testSetup(t)
	idle, err := New(Options{
		Store:          env.store,
		ResourcePrefix: podPrefix,
		KeyFunc:        func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(podPrefix, obj) },
		NewFunc:        newPod,
		NewListFunc:    newPodList,
		AttrFunc:       podAttrs,
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{c: c}
	w.apply(ctx, t, "p", nil, &podState{node: "n"})
	if err := idle.ReadinessCheck(); err != storage.ErrStorageNotReady {
		t.Fatalf("ReadinessCheck() = %v, want ErrStorageNotReady", err)
	}
	got := &example.Pod{}
	if err := idle.Get(ctx, podKey("p"), storage.GetOptions{ResourceVersion: "0"}, got); err != nil || got.Name != "p" {
		t.Fatalf("Get: %v %v", got.Name, err)
	}
	list := &example.PodList{}
	if err := idle.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, list); err != nil || len(list.Items) != 1 {
		t.Fatalf("GetList: %d items, %v", len(list.Items), err)
	}
	cached, err := idle.ListCached(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil || len(cached.Items) != 1 || cached.Items[0].GetName() != "p" || cached.ResourceVersion == 0 {
		t.Fatalf("ListCached from etcd: %+v, %v", cached, err)
	}
	wi, err := idle.Watch(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	if ev := <-wi.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("watch from etcd: %v", ev.Type)
	}
	idle.Stop()
}

// TestQuietResourceResumesAfterCompaction: etcd compacts revisions of
// other resources past a client's resourceVersion; this resource did not
// change meanwhile, so the client's watch resumes instead of a 410.
func TestQuietResourceResumesAfterCompaction(t *testing.T) {
	ctx, c, env := testSetup(t)
	w := &writer{c: c}
	w.apply(ctx, t, "before", nil, &podState{node: "n"})
	waitFor(t, 30*time.Second, func() bool { return c.ResourceVersion() >= w.lastRV() })
	from := w.lastRV()
	var rev int64
	for range 3 {
		rev = etcdtest.IncreaseRV(env.etcd)(ctx, t)
	}
	compactStore(env)(ctx, t, strconv.FormatInt(rev, 10))

	cons := consume(watchFrom(t, ctx, c, from, fieldsEverything(), labelsEverything()))
	after := &writer{c: c}
	after.apply(ctx, t, "after", nil, &podState{node: "n"})
	barrier(t, c, after.lastRV(), []*consumer{cons})
	got, _, st := cons.snapshot()
	if st != nil {
		t.Fatalf("watch from %d ended: %v", from, st.Message)
	}
	checkExactly(t, "watcher", got, expect(after.ops(), func(string, *podState) bool { return true }))
}

// TestQuietResourceBookmarksFollowEtcd: nothing of the resource changes,
// other keys do; the watchers' bookmarks still move on to etcd's revision
// (the cache asks etcd for progress notifications while it has watchers).
func TestQuietResourceBookmarksFollowEtcd(t *testing.T) {
	ctx, c, env := testSetup(t, withOptions(func(o *Options) {
		o.BookmarkInterval = 200 * time.Millisecond
		o.ProgressInterval = 50 * time.Millisecond
	}))
	cons := consume(watchFrom(t, ctx, c, c.ResourceVersion(), fieldsEverything(), labelsEverything()))
	rev := uint64(etcdtest.IncreaseRV(env.etcd)(ctx, t))
	waitFor(t, 30*time.Second, func() bool {
		_, bm, _ := cons.snapshot()
		return bm >= rev
	})
	if got, _, st := cons.snapshot(); len(got) != 0 || st != nil {
		t.Fatalf("quiet watcher got %v, %v", got, st)
	}
}
