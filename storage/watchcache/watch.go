package watchcache

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// resultBuffer is the capacity of a watcher's result channel; the queue in
// front of it is the watcher's real buffer.
const resultBuffer = 16

// Watch implements storage.Interface with upstream's semantics (C-24):
//
//	RV      SendInitialEvents  starts with
//	""      unset              the current state (legacy)
//	""      true               the state once the cache has reached etcd's
//	                           current revision, then (with bookmarks
//	                           allowed) a BOOKMARK k8s.io/initial-events-end
//	""      false              nothing: changes after etcd's current revision
//	"0"     unset              the current state (legacy)
//	"0"     true               the current state, then the bookmark
//	"0"     false              nothing: changes from now
//	N       true               the state once the cache has reached N, then
//	                           the bookmark
//	N       unset/false        the window's changes after N; 410 Expired if
//	                           the window no longer reaches back to N
//
// The API server gives a watch from "" or "0" without sendInitialEvents
// initial events (upstream's SetListOptionsDefaults, WatchList on), so a
// plain client watch with no resourceVersion is the second row and waits
// for the cache to reach etcd's revision, as upstream's; the legacy rows
// are for callers in the process (docs/watchcache.md).
//
// Errors found after the request is parsed arrive as one ERROR event, as
// upstream. Before the first list the watch is served by etcd.
func (c *Cache) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if !c.Ready() {
		return c.store.Watch(ctx, key, opts)
	}
	prepared, err := storage.PrepareKey(c.opts.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	requested, err := c.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	pred := normalize(opts.Predicate)
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	legacyState := opts.SendInitialEvents == nil && requested == 0

	// from is the resourceVersion the watch starts after.
	from := requested
	if opts.ResourceVersion == "" && opts.SendInitialEvents != nil {
		if from, err = c.store.GetCurrentResourceVersion(ctx); err != nil {
			return errorWatch(err), nil
		}
	}
	if sendInitial {
		if err := c.waitFresh(ctx, from); err != nil {
			return errorWatch(err), nil
		}
	}

	w := c.newWatcher(ctx, prepared, opts.Recursive, pred)
	c.mu.RLock()
	var s start
	switch {
	case sendInitial || legacyState:
		t := c.st.tree
		s = start{rv: c.st.rv, snapshot: &t, endBookmark: sendInitial && pred.AllowWatchBookmarks}
	default:
		if opts.ResourceVersion == "0" {
			from = c.st.rv
		}
		events, ok := c.st.hist.since(from)
		if compacted := c.store.CompactRevision(); ok && int64(from) < compacted && len(events) > 0 && int64(events[0].rv) <= compacted {
			// etcd compacted changes of this resource after from: the
			// cache says so as etcd would (clients re-list). When the
			// resource did not change in between, resuming is the same as
			// resuming at the compaction and the cache serves it, sparing
			// quiet resources the 410s that etcd would cause.
			ok = false
		}
		if !ok {
			complete := c.st.hist.complete
			c.mu.RUnlock()
			return errorWatch(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, complete))), nil
		}
		s = start{rv: from, events: events}
	}
	if c.ctx.Err() != nil {
		c.mu.RUnlock()
		// As upstream's cacher: the request fails with 503, which a client
		// takes for a server going away (it is: the cache stops with the
		// server) rather than an error event of a watch that worked.
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("watchcache %s: stopped", c.opts.GroupResource))
	}
	// Queued for the dispatcher under the lock that ingestion takes, the
	// registration meets the start exactly: it follows every change the
	// start holds and precedes every later one, which the dispatcher then
	// offers to w. Nothing here waits for the dispatcher.
	c.reg.live.Add(1)
	c.pending.push(pendingItem{register: w})
	// Added under the lock: Stop, which takes it after cancelling, then
	// waits for this watcher too.
	c.wg.Add(1)
	c.mu.RUnlock()

	go w.run(ctx, s)
	return w, nil
}

func (c *Cache) newWatcher(ctx context.Context, key string, recursive bool, pred storage.SelectionPredicate) *watcher {
	w := &watcher{
		c:         c,
		key:       key,
		recursive: recursive,
		pred:      pred,
		bookmarks: pred.AllowWatchBookmarks,
		index:     -1,
		bufSize:   c.opts.WatchBuffer,
		// Past the event window's bound, a watcher still catching up is
		// further behind than a client resuming could be.
		catchingUp:   true,
		catchUpLimit: c.opts.MaxEvents,
		result:       make(chan watch.Event, resultBuffer),
		done:         make(chan struct{}),
		wake:         make(chan struct{}, 1),
	}
	w.deadline, _ = ctx.Deadline()
	switch {
	case !recursive:
		w.byKey = true
	default:
		for i, name := range c.indexNames {
			if v, ok := pred.Field.RequiresExactMatch(name); ok {
				w.index, w.indexValue = i, v
				break
			}
		}
		if w.index < 0 && len(c.indexNames) > 0 {
			w.bufSize = c.opts.UnfilteredWatchBuffer
		}
	}
	if w.bookmarks {
		w.nextBookmark = c.nextBookmark(time.Now(), w.deadline)
	}
	return w
}

// errWatch is a watch that delivers one ERROR event and closes.
type errWatch struct{ ch chan watch.Event }

func errorWatch(err error) watch.Interface {
	ch := make(chan watch.Event, 1)
	ch <- watch.Event{Type: watch.Error, Object: errorObject(err)}
	close(ch)
	return errWatch{ch: ch}
}

func (e errWatch) ResultChan() <-chan watch.Event { return e.ch }
func (e errWatch) Stop()                          {}
