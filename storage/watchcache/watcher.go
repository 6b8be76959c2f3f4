package watchcache

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// watcher is one watch served from the cache. The dispatcher filters
// events for it and appends the matching ones to its queue, which never
// blocks; the watcher's own goroutine moves them to the result channel at
// the client's pace. A queue that stays full past the slow-watcher budget
// ends the watcher with 410 Expired, so its client re-lists, and costs the
// other watchers nothing. The budget runs only once the watcher has sent
// its start and caught up with what was queued meanwhile (catchingUp).
type watcher struct {
	c         *Cache
	key       string // prepared key: a prefix ending in "/" when recursive
	recursive bool
	pred      storage.SelectionPredicate
	bookmarks bool
	deadline  time.Time // zero: none

	// Where the registry files the watcher (see registry).
	byKey      bool
	index      int // index into the cache's indexNames, or -1
	indexValue string

	bufSize int
	result  chan watch.Event
	done    chan struct{} // closed by Stop or by the end of ctx
	stop    sync.Once

	// mu guards the fields below; the dispatcher and the goroutine share
	// them. It is a leaf: whoever holds it takes no other lock, and
	// neither goroutine holds another lock when it takes it.
	mu        sync.Mutex
	queue     []queued
	fullSince time.Time
	// catchingUp says the watcher is still in its start: sending its
	// snapshot or replay, then the backlog queued meanwhile, until the
	// goroutine finds less than a buffer's worth queued. The slow-watcher
	// budget does not run while it catches up (a snapshot of thousands of
	// objects takes longer than the budget, and under sustained writes the
	// watcher would be ended and re-list forever); the queue is bounded
	// by catchUpLimit instead.
	catchingUp   bool
	catchUpLimit int
	ended        error // set when the cache ends the watcher
	wake         chan struct{}
	// idle says the goroutine has sent its start and everything queued,
	// and waits for a wake-up. While it is idle the dispatcher sends a
	// notification straight into the result channel when there is room
	// (deliver), saving the goroutine's wake-up, which costs more than
	// the rest of a delivery; order holds because nothing is queued.
	idle bool
	// pos and startPos are the goroutine's position (the resourceVersion
	// of the last notification sent) and where its start left it; the
	// dispatcher reads and moves pos only while the goroutine is idle.
	pos, startPos uint64
	// closed is set, under mu, before the result channel is closed, so
	// that the dispatcher never sends on a closed channel.
	closed bool

	// nextBookmark is owned by the dispatcher; zero means never.
	nextBookmark time.Time
}

// queued is one notification on its way to the client, with the
// resourceVersion the watcher's position moves to.
type queued struct {
	ev watch.Event
	rv uint64
}

// start says what a watcher sends before live events: the state of a
// snapshot, or the events of the window after a resourceVersion.
type start struct {
	rv       uint64   // the watcher's position once these are sent
	snapshot *tree    // send every matching object as ADDED
	events   []*event // or replay these
	// endBookmark sends a BOOKMARK annotated k8s.io/initial-events-end
	// at rv after the state.
	endBookmark bool
}

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface.
func (w *watcher) Stop() {
	w.stop.Do(func() {
		close(w.done)
		select {
		case w.wake <- struct{}{}:
		default:
		}
	})
}

// matches is the watcher's filter on an element: key scope then selector.
func (w *watcher) matches(e *element) bool {
	if w.recursive {
		if !strings.HasPrefix(e.key, w.key) {
			return false
		}
	} else if e.key != w.key {
		return false
	}
	return matchAttributes(&w.pred, e)
}

// convert turns a change into what this watcher must see, by whether the
// object enters, stays in or leaves its selection.
func (w *watcher) convert(ev *event) (watch.Event, bool) {
	cur := ev.cur != nil && w.matches(ev.cur)
	prev := ev.prev != nil && w.matches(ev.prev)
	switch {
	case cur && !prev:
		return watch.Event{Type: watch.Added, Object: &ev.cur.obj}, true
	case cur && prev:
		return watch.Event{Type: watch.Modified, Object: &ev.cur.obj}, true
	case prev:
		return watch.Event{Type: watch.Deleted, Object: ev.goneObject(w.c.versioner)}, true
	}
	return watch.Event{}, false
}

// enqueue appends a notification; it never blocks. needWake says the
// queue was empty, so the goroutine must be woken (the dispatcher wakes
// once per batch of events, not once per event). ok is false when the
// watcher has been full for longer than budget and must be ended.
func (w *watcher) enqueue(q queued, now time.Time, budget time.Duration) (needWake, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil || w.closed {
		// Ended, or its goroutine is gone and its unregister item is on
		// its way to the dispatcher.
		return false, true
	}
	if w.deliver(q) {
		return false, true
	}
	needWake = len(w.queue) == 0
	w.queue = append(w.queue, q)
	if w.catchingUp {
		// A backlog longer than the event window could not be resumed
		// from either: the client is better off re-listing.
		return needWake, len(w.queue) <= w.catchUpLimit
	}
	if len(w.queue) >= w.bufSize {
		if w.fullSince.IsZero() {
			w.fullSince = now
		} else if now.Sub(w.fullSince) > budget {
			return needWake, false
		}
	}
	return needWake, true
}

// deliver sends q straight to the result channel if the goroutine is
// idle, nothing is queued and the channel has room; it reports whether q
// is dealt with (sent, or dropped as older than the position). w.mu is
// held.
func (w *watcher) deliver(q queued) bool {
	if !w.idle || w.closed || len(w.queue) > 0 {
		return false
	}
	if stale(q, w.pos, w.startPos) {
		return true
	}
	select {
	case w.result <- q.ev:
		w.pos = q.rv
		return true
	default:
		return false
	}
}

// stale says whether q is behind a watcher at pos that started at
// startPos. The watcher may have been registered while events it already
// has from its start were still being dispatched: never go back. A
// bookmark may repeat the last event's resourceVersion (it says nothing
// newer happened), never the start's.
func stale(q queued, pos, startPos uint64) bool {
	return q.rv < pos || q.rv <= startPos || (q.rv == pos && q.ev.Type != watch.Bookmark)
}

// wakeUp makes the goroutine look at its queue.
func (w *watcher) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// tooSlow reports whether the watcher has been full past budget.
func (w *watcher) tooSlow(now time.Time, budget time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended == nil && !w.closed && !w.catchingUp && !w.fullSince.IsZero() && now.Sub(w.fullSince) > budget
}

// end makes the goroutine drop what is queued, send err and close.
func (w *watcher) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		return
	}
	w.ended = err
	w.queue = nil
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take records the goroutine's position and returns the queued
// notifications, or the error that ends the watcher. With nothing queued
// the goroutine goes idle (see idle) and take returns the position, which
// the dispatcher moves on by what it delivers. The goroutine calls it only
// once its start is sent; the first batch shorter than the buffer ends
// the catching up, and the slow-watcher budget runs from then on.
func (w *watcher) take(pos uint64) ([]queued, uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		return nil, pos, w.ended
	}
	w.pos = pos
	batch := w.queue
	w.queue = nil
	w.fullSince = time.Time{}
	w.idle = len(batch) == 0
	if len(batch) < w.bufSize {
		w.catchingUp = false
	}
	return batch, pos, nil
}

// busy ends the goroutine's idleness and returns its position.
func (w *watcher) busy() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.idle = false
	return w.pos
}

// closeResult closes the result channel once the dispatcher can no
// longer send on it.
func (w *watcher) closeResult() {
	w.mu.Lock()
	w.closed, w.idle = true, false
	w.mu.Unlock()
	close(w.result)
}

// run sends the start, then live notifications, until the client stops,
// ctx ends or the cache ends the watcher. It closes the result channel.
func (w *watcher) run(ctx context.Context, s start) {
	defer w.c.wg.Done()
	defer w.closeResult()
	defer w.c.forget(w)
	// The end of ctx or of the cache stops the watcher, so that the loop
	// waits on one channel: a four-way select per event costs more than
	// the rest of a delivery.
	stopOnCtx := context.AfterFunc(ctx, w.Stop)
	defer stopOnCtx()
	stopOnCache := context.AfterFunc(w.c.ctx, w.Stop)
	defer stopOnCache()

	pos := s.rv
	switch {
	case s.snapshot != nil:
		ok := true
		visit := func(e *element) bool {
			if w.matches(e) {
				ok = w.send(watch.Event{Type: watch.Added, Object: &e.obj})
			}
			return ok
		}
		if w.recursive {
			s.snapshot.AscendPrefix(w.key, "", visit)
		} else if e := s.snapshot.Get(w.key); e != nil {
			visit(e)
		}
		if !ok {
			return
		}
	default:
		for _, ev := range s.events {
			if e, ok := w.convert(ev); ok && !w.send(e) {
				return
			}
			pos = max(pos, ev.rv)
		}
	}
	startPos := pos
	if s.endBookmark {
		if !w.send(watch.Event{Type: watch.Bookmark, Object: w.c.bookmarkObject(s.rv, true)}) {
			return
		}
	}

	w.mu.Lock()
	w.startPos = startPos
	w.mu.Unlock()
	for {
		batch, at, err := w.take(pos)
		if err != nil {
			w.send(watch.Event{Type: watch.Error, Object: errorObject(err)})
			return
		}
		if len(batch) == 0 {
			// Idle: the dispatcher delivers while the channel has room,
			// and wakes the goroutine once it queues.
			<-w.wake
			if w.stopped() {
				return
			}
			pos = w.busy()
			continue
		}
		pos = at
		for _, q := range batch {
			if stale(q, pos, startPos) {
				continue
			}
			if !w.send(q.ev) {
				return
			}
			pos = q.rv
		}
	}
}

func (w *watcher) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// send delivers one notification, or gives up when the watcher stops.
func (w *watcher) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	default:
	}
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	}
}

// errorObject is the object of an ERROR event for err.
func errorObject(err error) runtime.Object {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		st := s.Status()
		return &st
	}
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Message: err.Error(),
		Reason:  metav1.StatusReasonInternalError,
		Code:    http.StatusInternalServerError,
	}
}

func (w *watcher) isCatchingUp() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.catchingUp
}
