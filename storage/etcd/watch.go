package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// resultBufSize is the buffer of a watch's result channel: it absorbs
// bursts so that a briefly slow reader does not stall the etcd stream.
const resultBufSize = 100

// establishTimeout bounds how long Watch waits for etcd to confirm the
// watch before returning anyway.
const establishTimeout = 5 * time.Second

// Watch implements storage.Interface.
//
// Where the watch starts (upstream etcd3 semantics, with WatchList on):
//   - RV N > 0: changes after N; with SendInitialEvents=true, first the
//     current state (TooLargeResourceVersion if N is in the future);
//   - RV "" or "0" with SendInitialEvents unset (legacy): the current state
//     as ADDED events, then changes;
//   - RV "" or "0" with SendInitialEvents=true: the same;
//   - RV "" or "0" with SendInitialEvents=false: changes after etcd's
//     current revision.
//
// With SendInitialEvents=true and AllowWatchBookmarks, a BOOKMARK annotated
// "k8s.io/initial-events-end" follows the initial state. With
// ProgressNotify, etcd's progress notifications arrive as BOOKMARKs.
//
// One goroutine per watch reads etcd, decodes and filters, and sends to the
// result channel; it ends (closing the channel) with ctx, Stop or an error,
// which is delivered as a single ERROR event. Watch returns once etcd has
// confirmed the watch (at most after establishTimeout), so that a change
// the caller makes next is delivered without etcd's catch-up delay.
func (s *Store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	key, err := s.prepareKey(key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	rv, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	ctx = watchContext(ctx)
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	startRev := int64(rv)
	if startRev == 0 && opts.SendInitialEvents != nil && !sendInitial {
		// Only changes from now on.
		cur, err := s.GetCurrentResourceVersion(ctx)
		if err != nil {
			return nil, err
		}
		startRev = int64(cur)
	}
	w := &watcher{
		s:              s,
		key:            key,
		recursive:      opts.Recursive,
		progressNotify: opts.ProgressNotify,
		recordTimes:    opts.RecordTimestamps,
		pred:           opts.Predicate,
		filtering:      !opts.Predicate.Empty(),
		rev:            startRev,
		initialEvents:  (opts.SendInitialEvents == nil && rv == 0) || sendInitial,
		endBookmark:    sendInitial && opts.Predicate.AllowWatchBookmarks,
		result:         make(chan watch.Event, resultBufSize),
		established:    make(chan struct{}),
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	go w.run()
	// Return once etcd has the watch, so that the caller's next write is
	// seen; but do not hang a caller on an unreachable etcd: the watch goes
	// on trying, and fails with an ERROR event if it must.
	t := time.NewTimer(establishTimeout)
	select {
	case <-w.established:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	if s.watchInit != nil {
		// Like upstream, the watch counts as initialized at once: etcd
		// gives no cheap way to know when it has caught up.
		s.watchInit(ctx)
	}
	return w, nil
}

// watcher is one watch: it implements watch.Interface.
type watcher struct {
	s              *Store
	key            string
	recursive      bool
	progressNotify bool
	recordTimes    bool
	pred           storage.SelectionPredicate
	filtering      bool
	rev            int64 // the watch sends changes after this revision
	initialEvents  bool
	endBookmark    bool

	ctx    context.Context
	cancel context.CancelFunc
	result chan watch.Event

	// established is closed once etcd has confirmed the watch (or the
	// watch ended before that).
	established     chan struct{}
	establishedOnce sync.Once
}

func (w *watcher) markEstablished() { w.establishedOnce.Do(func() { close(w.established) }) }

// Stop implements watch.Interface.
func (w *watcher) Stop() { w.cancel() }

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

func (w *watcher) run() {
	defer close(w.result)
	defer w.cancel()
	defer w.markEstablished()
	if err := w.watch(); err != nil && !isCancel(err) && w.ctx.Err() == nil {
		w.sendError(err)
	}
}

// watch does the work of run; it returns when the watch must end.
func (w *watcher) watch() error {
	// The first page of the initial state fixes the revision the etcd
	// watch starts after.
	var page *clientv3.GetResponse
	if w.initialEvents {
		if w.rev > 0 {
			cur, err := w.s.GetCurrentResourceVersion(w.ctx)
			if err != nil {
				return err
			}
			if uint64(w.rev) > cur {
				return storage.NewTooLargeResourceVersionError(uint64(w.rev), cur, int(wait.Jitter(time.Second, 3).Seconds()))
			}
		}
		var err error
		if page, err = w.readPage(w.key, 0); err != nil {
			return err
		}
		w.rev = page.Header.Revision
	}

	// Register the etcd watch before sending anything, and wait until etcd
	// confirms it: then a change made after Watch returned (or after the
	// reader saw the initial state) reaches the watch at once, instead of
	// through etcd's catch-up loop for watches that start in the past.
	opts := []clientv3.OpOption{clientv3.WithRev(w.rev + 1), clientv3.WithPrevKV(), clientv3.WithCreatedNotify()}
	if w.recursive {
		opts = append(opts, clientv3.WithPrefix())
	}
	if w.progressNotify {
		opts = append(opts, clientv3.WithProgressNotify())
	}
	events := w.s.client.Watch(w.ctx, w.key, opts...)
	select {
	case resp, ok := <-events:
		w.markEstablished()
		if !ok {
			return w.ctx.Err()
		}
		if err := w.process(resp); err != nil {
			return err
		}
	case <-w.ctx.Done():
		return w.ctx.Err()
	}

	if w.initialEvents {
		if err := w.sendInitial(page); err != nil {
			return err
		}
	}
	if w.endBookmark {
		if err := w.sendBookmark(w.rev, true); err != nil {
			return err
		}
	}
	for resp := range events {
		if err := w.process(resp); err != nil {
			return err
		}
	}
	// The etcd channel closes when the context ends (or the client closes).
	return w.ctx.Err()
}

// process delivers what one etcd watch response says.
func (w *watcher) process(resp clientv3.WatchResponse) error {
	if err := resp.Err(); err != nil {
		return err
	}
	if resp.Created {
		return nil
	}
	if resp.IsProgressNotify() {
		return w.sendBookmark(resp.Header.GetRevision(), false)
	}
	sizes := w.s.sizeEstimator()
	for _, e := range resp.Events {
		if sizes != nil {
			if e.Type == clientv3.EventTypeDelete {
				sizes.Delete(e.Kv)
			} else {
				sizes.Put(e.Kv)
			}
		}
		if err := w.handle(e); err != nil {
			return err
		}
	}
	return nil
}

// readPage reads a page of the initial state from key on, at revision
// atRev (0: the current one).
func (w *watcher) readPage(from string, atRev int64) (*clientv3.GetResponse, error) {
	var opts []clientv3.OpOption
	if w.recursive {
		opts = append(opts, clientv3.WithLimit(w.s.watchPageSize), clientv3.WithRange(clientv3.GetPrefixRangeEnd(w.key)))
	}
	if atRev != 0 {
		opts = append(opts, clientv3.WithRev(atRev))
	}
	resp, err := w.s.client.KV.Get(w.ctx, from, opts...)
	if err != nil {
		return nil, interpretListError(err, true, from, w.key)
	}
	if len(resp.Kvs) == 0 && resp.More {
		return nil, fmt.Errorf("watch %q: no results were found, but etcd indicated there were more values remaining", w.key)
	}
	return resp, nil
}

// sendInitial sends the initial state, from its first page on, as ADDED
// events; further pages are read at the first page's revision, w.rev.
func (w *watcher) sendInitial(page *clientv3.GetResponse) error {
	for {
		var lastKey []byte
		for i, kv := range page.Kvs {
			lastKey = kv.Key
			data, err := w.s.fromStorageKV(w.ctx, kv.Key, kv.Value)
			if err != nil {
				return err
			}
			obj, err := w.s.decodeNew(kv.Key, data, nil, kv.ModRevision)
			if err != nil {
				return err
			}
			// Let the value go early: a long initial state takes a while.
			page.Kvs[i] = nil
			if !w.matches(obj) {
				continue
			}
			if err := w.send(watch.Event{Type: watch.Added, Object: obj}); err != nil {
				return err
			}
		}
		if !page.More {
			return nil
		}
		var err error
		if page, err = w.readPage(string(lastKey)+"\x00", w.rev); err != nil {
			return err
		}
	}
}

// handle turns one etcd event into at most one watch event. Against a
// predicate, a change is ADDED when the object enters it, DELETED (with the
// old object) when it leaves, MODIFIED when it stays.
func (w *watcher) handle(e *clientv3.Event) error {
	rev := e.Kv.ModRevision
	created := e.IsCreate()
	deleted := e.Type == clientv3.EventTypeDelete
	if !created && e.PrevKv == nil {
		// The previous value was compacted away before we saw the event.
		return fmt.Errorf("etcd event received with PrevKv=nil (key=%q, modRevision=%d, type=%s)", e.Kv.Key, rev, e.Type)
	}
	var cur, prev runtime.Object
	var err error
	if !deleted {
		if cur, err = w.decode(e.Kv.Key, e.Kv.Value, rev); err != nil {
			return err
		}
	}
	// The old object is needed for deletions, and to learn whether the
	// object was inside the predicate before. It carries the event's
	// revision: a DELETED object is the last state at the deletion's RV.
	if e.PrevKv != nil && (deleted || w.filtering) {
		if prev, err = w.decode(e.Kv.Key, e.PrevKv.Value, rev); err != nil {
			if c := corruptObjError(string(e.Kv.Key), err); c != nil && deleted {
				return &corruptDeletedError{err: c}
			}
			return err
		}
	}
	var ev watch.Event
	switch {
	case deleted:
		if !w.matches(prev) {
			return nil
		}
		ev = watch.Event{Type: watch.Deleted, Object: prev}
	case created:
		if !w.matches(cur) {
			return nil
		}
		ev = watch.Event{Type: watch.Added, Object: cur}
	default:
		curIn := w.matches(cur)
		prevIn := w.matches(prev)
		switch {
		case curIn && prevIn:
			ev = watch.Event{Type: watch.Modified, Object: cur}
		case curIn:
			ev = watch.Event{Type: watch.Added, Object: cur}
		case prevIn:
			ev = watch.Event{Type: watch.Deleted, Object: prev}
		default:
			return nil
		}
	}
	if w.recordTimes {
		ev.Object = &timedObject{Object: ev.Object, recordTime: time.Now()}
	}
	return w.send(ev)
}

// decode transforms and decodes a value of key, read from an event.
func (w *watcher) decode(key, value []byte, rev int64) (runtime.Object, error) {
	data, err := w.s.fromStorageKV(w.ctx, key, value)
	if err != nil {
		return nil, err
	}
	return w.s.decodeNew(key, data, nil, rev)
}

func (w *watcher) matches(obj runtime.Object) bool {
	if !w.filtering {
		return true
	}
	ok, err := w.pred.Matches(obj)
	return err == nil && ok
}

// sendBookmark sends a BOOKMARK at rev: an empty object of the resource
// carrying only the resourceVersion (and the initial-events-end annotation
// after the initial state).
func (w *watcher) sendBookmark(rev int64, initialEventsEnd bool) error {
	obj := w.s.newFunc()
	if err := w.s.versioner.UpdateObject(obj, uint64(rev)); err != nil {
		return fmt.Errorf("failed to propagate object resource version: %w", err)
	}
	if initialEventsEnd {
		if err := storage.AnnotateInitialEventsEndBookmark(obj); err != nil {
			return fmt.Errorf("annotate initial-events-end bookmark of %T: %w", obj, err)
		}
	}
	return w.send(watch.Event{Type: watch.Bookmark, Object: obj})
}

// send delivers an event, blocking while the reader is slow (which in turn
// holds back the etcd stream: nothing is dropped).
func (w *watcher) send(ev watch.Event) error {
	select {
	case w.result <- ev:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

// sendError delivers err as the watch's last event: a metav1.Status,
// Expired (410) for a compacted revision, InternalError when err carries
// no API status.
func (w *watcher) sendError(err error) {
	err = interpretWatchError(err)
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		apiStatus = apierrors.NewInternalError(err)
	}
	st := apiStatus.Status()
	klog.V(4).Infof("etcd store: watch of %s ended: %v", w.key, err)
	select {
	case w.result <- watch.Event{Type: watch.Error, Object: &st}:
	case <-w.ctx.Done():
	}
}

// isCancel tells whether err only says the watch was cancelled.
func isCancel(err error) bool {
	if errors.Is(err, context.Canceled) {
		return true
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Canceled {
		return true
	}
	return false
}

// timedObject wraps an object of a watch opened with RecordTimestamps with
// the time it was decoded (storage.WatchEventWithRecordTime); only the watch
// cache asks for it and unwraps it.
type timedObject struct {
	runtime.Object
	recordTime time.Time
}

var _ storage.WatchEventWithRecordTime = &timedObject{}

func (t *timedObject) GetObjectMeta() metav1.Object {
	m, _ := meta.Accessor(t.Object)
	return m
}

func (t *timedObject) DeepCopyObject() runtime.Object {
	return &timedObject{Object: t.Object.DeepCopyObject(), recordTime: t.recordTime}
}

func (t *timedObject) RecordTime() time.Time { return t.recordTime }

func (t *timedObject) Unwrap() runtime.Object { return t.Object }
