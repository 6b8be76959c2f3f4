package watchcache

import (
	"context"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// behindWithAWatchFromTheFuture leaves the cache behind etcd, as a quiet
// resource is when others are written, and then opens, over the same
// etcd client, a watch that starts after etcd's current revision: what a
// watch etcd serves (an uncached resource, a cache not yet listed) and a
// cache's first watch after its list do when nothing is written after
// them. etcd answers no progress request on a watch stream that holds
// such a watch, until the next write. It returns etcd's revision.
func behindWithAWatchFromTheFuture(t *testing.T, ctx context.Context, c *Cache, env *testEnv) uint64 {
	t.Helper()
	w := &writer{c: c}
	w.apply(ctx, t, "seen", nil, &podState{node: "n"})
	waitFor(t, 30*time.Second, func() bool { return c.ResourceVersion() >= w.lastRV() })
	for range 3 {
		if _, err := env.etcd.Put(ctx, "/elsewhere/key", "v"); err != nil {
			t.Fatal(err)
		}
	}
	// A legacy watch served by etcd starts at its initial state's
	// revision + 1; Watch returns once etcd has it.
	future, err := env.store.Watch(ctx, "/pods/quiet/", storage.ListOptions{Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(future.Stop)
	rv, err := env.store.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ResourceVersion(); got >= rv {
		t.Fatalf("cache at %d, not behind etcd's %d", got, rv)
	}
	return rv
}

// TestFreshnessWaitsAreNotHeldBackByOtherWatches: a cache behind etcd
// catches up by a progress notification on its own etcd watch, which a
// watch of someone else starting after etcd's revision cannot hold back.
// A plain watch with no resourceVersion (which the API server turns into
// one with initial events, as upstream's) starts with a state at least
// as new as etcd's revision, instead of failing after the freshness
// timeout with 504 "Too large resource version: <etcd's>, current:
// <cache's>", the failure once seen in TestDeletedCRDGoesAfterItsCustomResources;
// reads that wait for a resourceVersion are answered, and a consistent
// list is served from memory rather than by its etcd fallback.
func TestFreshnessWaitsAreNotHeldBackByOtherWatches(t *testing.T) {
	t.Run("watch from now with initial events", func(t *testing.T) {
		ctx, c, env := testSetup(t)
		rv := behindWithAWatchFromTheFuture(t, ctx, c, env)
		sendInitial := true
		pred := storage.Everything
		pred.AllowWatchBookmarks = true
		w, err := c.Watch(ctx, podPrefix, storage.ListOptions{SendInitialEvents: &sendInitial, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: pred})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var added []string
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				t.Fatalf("watch: ERROR %v", ev.Object)
			case watch.Added:
				added = append(added, ev.Object.(*CachedObject).GetObject().(*example.Pod).Name)
				continue
			case watch.Bookmark:
				got, err := c.versioner.ObjectResourceVersion(ev.Object)
				if err != nil {
					t.Fatal(err)
				}
				if got < rv {
					t.Errorf("initial state at %d, older than etcd's %d when the watch began", got, rv)
				}
			}
			break
		}
		if len(added) != 1 || added[0] != "seen" {
			t.Errorf("initial events %v, want [seen]", added)
		}
	})
	t.Run("list not older than etcd's revision", func(t *testing.T) {
		ctx, c, env := testSetup(t)
		rv := behindWithAWatchFromTheFuture(t, ctx, c, env)
		list := &example.PodList{}
		err := c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: storage.Everything}, list)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list.Items) != 1 {
			t.Errorf("%d items, want 1", len(list.Items))
		}
	})
	t.Run("consistent list", func(t *testing.T) {
		_, c, env := testSetup(t)
		rv := behindWithAWatchFromTheFuture(t, context.Background(), c, env)
		list, calls := etcdLists(t, c, env, storage.ListOptions{Recursive: true, Predicate: storage.Everything})
		if len(calls) != 0 {
			t.Errorf("etcd list calls %+v, want none: the cache catches up and answers", calls)
		}
		if got, _ := strconv.ParseUint(list.ResourceVersion, 10, 64); got < rv {
			t.Errorf("list at %d, older than etcd's %d", got, rv)
		}
	})
}

// TestFreshnessWaitAsksAgainOnceAnswered: a reader that needs a newer
// revision soon after another reader's progress request was answered asks
// etcd at once, instead of waiting out the 100 ms between requests (a
// client that lists a quiet resource after each write elsewhere paid the
// whole period on every list but the first).
func TestFreshnessWaitAsksAgainOnceAnswered(t *testing.T) {
	ctx, c, env := testSetup(t)
	for i := range 5 {
		resp, err := env.etcd.Put(ctx, "/elsewhere/key", strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().UnixNano()
		if err := c.waitFresh(ctx, uint64(resp.Header.Revision)); err != nil {
			t.Fatal(err)
		}
		// When this wait's request left, not how long the wait took
		// (the answer's round trip is the machine's to make long): the
		// request of a wait that follows an answered one leaves as the
		// wait starts, before any I/O. The bug sent it only when its
		// timer of progressRequestPeriod (100 ms) fired, so never sooner
		// than that after the wait started.
		if sent := time.Duration(c.lastProgressRequest.Load() - start); i > 0 && sent >= progressRequestPeriod {
			t.Errorf("wait %d for revision %d sent its progress request %v after it started, want at once: the previous request was answered", i, resp.Header.Revision, sent)
		}
	}
}
