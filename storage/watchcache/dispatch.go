package watchcache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// registry files watchers so that an event is offered only to those that
// can match it: watchers of one key under that key, watchers whose field
// selector pins an indexed field under that value (upstream's trigger
// functions), everyone else in others.
//
// The registry is owned by the dispatcher goroutine, which alone reads and
// changes it, without a lock: watchers join and leave through the pending
// queue (pendingItem.register and unregister), in order with the changes.
// A lock here, held by the dispatcher across an event's 10 000 candidates,
// was one that a new watch waited for while holding the cache's read lock:
// ingestion queued behind that watch, and every read behind ingestion.
// Only live, the count of watchers, is read from anywhere.
type registry struct {
	byKey   map[string]map[*watcher]struct{}
	byIndex []map[string]map[*watcher]struct{}
	others  map[*watcher]struct{}
	all     map[*watcher]struct{}
	// live counts the watchers from their Watch call until they leave
	// the registry, registered or still on their way in.
	live atomic.Int64
}

func newRegistry(indexes int) *registry {
	r := &registry{
		byKey:   map[string]map[*watcher]struct{}{},
		byIndex: make([]map[string]map[*watcher]struct{}, indexes),
		others:  map[*watcher]struct{}{},
		all:     map[*watcher]struct{}{},
	}
	for i := range r.byIndex {
		r.byIndex[i] = map[string]map[*watcher]struct{}{}
	}
	return r
}

// add files w; the dispatcher calls it when it reaches w's register item.
func (r *registry) add(w *watcher) {
	r.all[w] = struct{}{}
	switch {
	case w.byKey:
		addTo(r.byKey, w.key, w)
	case w.index >= 0:
		addTo(r.byIndex[w.index], w.indexValue, w)
	default:
		r.others[w] = struct{}{}
	}
}

func addTo(m map[string]map[*watcher]struct{}, k string, w *watcher) {
	set := m[k]
	if set == nil {
		set = map[*watcher]struct{}{}
		m[k] = set
	}
	set[w] = struct{}{}
}

// remove takes w out, if it is in; only the dispatcher calls it.
func (r *registry) remove(w *watcher) {
	if _, ok := r.all[w]; !ok {
		return
	}
	delete(r.all, w)
	r.live.Add(-1)
	switch {
	case w.byKey:
		removeFrom(r.byKey, w.key, w)
	case w.index >= 0:
		removeFrom(r.byIndex[w.index], w.indexValue, w)
	default:
		delete(r.others, w)
	}
}

func removeFrom(m map[string]map[*watcher]struct{}, k string, w *watcher) {
	set := m[k]
	delete(set, w)
	if len(set) == 0 {
		delete(m, k)
	}
}

// Len is the number of live watchers; safe from any goroutine.
func (r *registry) Len() int { return int(r.live.Load()) }

// pending is the hand-off from ingestion to the dispatcher: ingestion
// appends and goes back to etcd at once, whatever the watchers do.
type pending struct {
	// mu guards items. It is held only to append one item or to take
	// them all, never across anything else, so no one waits on it for
	// long. Lock order: ingestion and Watch push while holding the
	// cache's mu (that is what orders a watcher's registration among the
	// changes); nothing takes the cache's mu while holding this one.
	mu    sync.Mutex
	items []pendingItem
	wake  chan struct{}
}

// pendingItem is a change to dispatch, a resourceVersion learnt from a
// progress notification (ev == nil), the differences a re-list found, or
// a watcher joining or leaving the registry.
type pendingItem struct {
	ev     *event
	rv     uint64
	relist []*event
	// register files a new watcher: pushed under the cache's read lock
	// with the watcher's start taken, it comes after every change the
	// start holds and before every later one. unregister takes a watcher
	// out (its goroutine has ended).
	register, unregister *watcher
	// bookmarkAll sends a bookmark to every watcher that allows them now,
	// behind everything dispatched so far (tests use it as a barrier).
	bookmarkAll bool
}

func (p *pending) push(it pendingItem) {
	p.mu.Lock()
	p.items = append(p.items, it)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pending) take() []pendingItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	items := p.items
	p.items = nil
	return items
}

// dispatchLoop is the dispatcher: it offers each change to the watchers
// that can match it, in resourceVersion order, and sends bookmarks. It
// never blocks on a watcher. It stops every watcher when ctx ends.
func (c *Cache) dispatchLoop(ctx context.Context) {
	defer c.wg.Done()
	ticker := time.NewTicker(bookmarkTick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			// Watchers still on their way in stop by themselves: each
			// stops with the cache's context.
			for w := range c.reg.all {
				w.Stop()
			}
			return
		case <-c.pending.wake:
			// Watchers are woken once per batch of events rather than per
			// event (a wake-up costs more than the rest of a delivery),
			// but at least every millisecond, so none waits on a long batch.
			flushed := time.Now()
			for _, it := range c.pending.take() {
				if len(c.toWake) > 0 && time.Since(flushed) > time.Millisecond {
					c.wakeAll()
					flushed = time.Now()
				}
				switch {
				case it.register != nil:
					c.reg.add(it.register)
				case it.unregister != nil:
					c.reg.remove(it.unregister)
				case it.bookmarkAll:
					c.bookmarkAll()
				case it.ev != nil:
					c.dispatch(it.ev)
					c.dispatchedRV = it.ev.rv
				case it.relist != nil:
					c.endReached(it.relist, it.rv)
					c.dispatchedRV = it.rv
				default:
					c.dispatchedRV = max(c.dispatchedRV, it.rv)
				}
			}
			c.wakeAll()
		case now := <-ticker.C:
			c.tick(now)
		}
	}
}

// wakeAll wakes the watchers that got notifications since the last call.
func (c *Cache) wakeAll() {
	for i, w := range c.toWake {
		w.wakeUp()
		c.toWake[i] = nil
	}
	c.toWake = c.toWake[:0]
}

// dispatch offers one change to its candidate watchers.
func (c *Cache) dispatch(ev *event) {
	now := time.Now()
	budget := c.opts.SlowWatcherBudget
	var slow []*watcher
	c.reg.candidates(ev, func(w *watcher) {
		if e, ok := w.convert(ev); ok {
			needWake, ok := w.enqueue(queued{ev: e, rv: ev.rv}, now, budget)
			if needWake {
				c.toWake = append(c.toWake, w)
			}
			if !ok {
				slow = append(slow, w)
			}
		}
	})
	for _, w := range slow {
		c.endSlow(w)
	}
}

// candidates calls fn for every watcher that may match ev: those of its
// key, those of its objects' indexed values (new and previous), and those
// that no index narrows.
func (r *registry) candidates(ev *event, fn func(*watcher)) {
	each := func(set map[*watcher]struct{}) {
		for w := range set {
			fn(w)
		}
	}
	each(r.byKey[ev.key])
	for i := range r.byIndex {
		var cur string
		if ev.cur != nil {
			cur = ev.cur.index(i)
			each(r.byIndex[i][cur])
		}
		if ev.prev != nil && (ev.cur == nil || ev.prev.index(i) != cur) {
			each(r.byIndex[i][ev.prev.index(i)])
		}
	}
	each(r.others)
}

// endSlow ends a watcher that did not keep up.
func (c *Cache) endSlow(w *watcher) {
	c.reg.remove(w)
	c.slowEnded.Add(1)
	msg := fmt.Sprintf("watch of %s ended: the client did not read %d buffered events within %v, re-list",
		c.opts.GroupResource, w.bufSize, c.opts.SlowWatcherBudget)
	if w.isCatchingUp() {
		msg = fmt.Sprintf("watch of %s ended: more than %d events arrived while the client read its initial events, re-list",
			c.opts.GroupResource, w.catchUpLimit)
	}
	w.end(apierrors.NewResourceExpired(msg))
}

// endReached ends the watchers that a re-list's differences reach: they
// missed events the cache never saw. The others stay consistent and go on.
func (c *Cache) endReached(diffs []*event, rv uint64) {
	r := c.reg
	reached := map[*watcher]struct{}{}
	for _, ev := range diffs {
		r.candidates(ev, func(w *watcher) {
			if _, done := reached[w]; done {
				return
			}
			if _, ok := w.convert(ev); ok {
				reached[w] = struct{}{}
			}
		})
	}
	for w := range reached {
		r.remove(w)
		w.end(apierrors.NewResourceExpired(fmt.Sprintf(
			"watch of %s ended: the cache re-listed at resource version %d and this watch missed changes, re-list",
			c.opts.GroupResource, rv)))
	}
}

// tick sends due bookmarks and ends watchers that stayed full too long
// without a new event to notice it.
func (c *Cache) tick(now time.Time) {
	rv := c.dispatchedRV
	for w := range c.reg.all {
		if w.tooSlow(now, c.opts.SlowWatcherBudget) {
			c.endSlow(w)
			continue
		}
		if !w.bookmarks || w.nextBookmark.IsZero() || now.Before(w.nextBookmark) || rv == 0 {
			continue
		}
		// Each watcher gets its own bookmark object: encoders set the
		// kind on the object they write, so one object must not be
		// encoded by several watchers at once.
		bookmark := watch.Event{Type: watch.Bookmark, Object: c.bookmarkObject(rv, false)}
		if w.offerBookmark(queued{ev: bookmark, rv: rv}) {
			w.nextBookmark = c.nextBookmark(now, w.deadline)
		}
	}
}

// nextBookmark is when a watcher gets its next bookmark: about a
// bookmark interval from now (jittered, so watchers started together do
// not get them together), and at the latest 2 s before its deadline, so a
// client whose watch times out can resume from a recent resourceVersion.
// Zero means never.
func (c *Cache) nextBookmark(now, deadline time.Time) time.Time {
	next := now.Add(c.opts.BookmarkInterval - time.Duration(c.jitter()*float64(c.opts.BookmarkInterval)/4))
	if !deadline.IsZero() {
		if pre := deadline.Add(-2 * time.Second); pre.Before(next) {
			next = pre
		}
		if next.Before(now) {
			return time.Time{}
		}
	}
	return next
}

// offerBookmark queues a bookmark unless the watcher's buffer is full (a
// bookmark never counts against the slow-watcher budget); false means
// try again at the next tick.
func (w *watcher) offerBookmark(q queued) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil || w.closed {
		return true
	}
	if len(w.queue) >= w.bufSize {
		return false
	}
	w.queue = append(w.queue, q)
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// bookmarkAll queues a bookmark at the dispatched resourceVersion for every
// watcher that allows bookmarks, full or not.
func (c *Cache) bookmarkAll() {
	if c.dispatchedRV == 0 {
		return
	}
	for w := range c.reg.all {
		if !w.bookmarks {
			continue
		}
		// One object per watcher, as in offerBookmarks.
		bookmark := watch.Event{Type: watch.Bookmark, Object: c.bookmarkObject(c.dispatchedRV, false)}
		w.mu.Lock()
		if w.ended == nil && !w.closed {
			w.queue = append(w.queue, queued{ev: bookmark, rv: c.dispatchedRV})
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		w.mu.Unlock()
	}
}
