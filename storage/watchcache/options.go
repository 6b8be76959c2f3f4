package watchcache

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/storage/intern"
)

// Defaults, matching kube-apiserver's where they are observable.
const (
	// DefaultHistoryWindow is how much history the event window keeps at
	// least (upstream's eventFreshDuration): a minute of bookmarks plus
	// slack, so a client resuming after a bookmark is not told 410.
	DefaultHistoryWindow = 75 * time.Second
	// DefaultMaxEvents bounds the event window (upstream's 100*1024); it
	// plays the role of a --watch-cache-sizes entry.
	DefaultMaxEvents = 100 * 1024
	// minEvents is the window's initial and smallest capacity.
	minEvents = 100
	// DefaultWatchBuffer is the per-watcher buffer, in events: of
	// watchers an index narrows, of single-object watchers, and of every
	// watcher of a resource without an index.
	//
	// Upstream's cacher sizes a watcher's input channel as one second of
	// its event window (capacity / 75 s, so 1366 at the largest window),
	// clamped to at least 10 and at most 10 for watchers a trigger
	// narrows, 1000 for the others on a resource with an index, and 100 on
	// a resource without one (suggestedWatchChannelSize). Kite's fixed
	// sizes are each at least upstream's largest: a resource without an
	// index gets upstream's 100 from the first event on, where upstream
	// starts at 10 and grows with the window.
	DefaultWatchBuffer = 100
	// DefaultUnfilteredWatchBuffer is the buffer of watchers that no index
	// narrows on a resource that has one (they see every change).
	DefaultUnfilteredWatchBuffer = 1000
	// DefaultSlowWatcherBudget is how long a watcher's buffer may stay
	// full before the watcher is ended with 410 Expired. Upstream blocks
	// its dispatcher on full watchers for a budget shared by all of them
	// (100 ms at most, refilled at 50 ms a second); this one is each
	// watcher's own, and the dispatcher never blocks. It runs once the
	// watcher has sent its initial events and caught up with what queued
	// meanwhile; until then the queue is bounded by MaxEvents instead.
	DefaultSlowWatcherBudget = 250 * time.Millisecond
	// DefaultBookmarkInterval is the period of bookmarks to each watcher
	// that allows them.
	DefaultBookmarkInterval = time.Minute
	// DefaultFreshnessTimeout is how long a read waits for the cache to
	// reach a resourceVersion (upstream's blockTimeout).
	DefaultFreshnessTimeout = 3 * time.Second
	// DefaultProgressInterval is how often a cache with watchers asks
	// etcd for its current revision (kube-apiserver runs etcd with 5 s
	// progress notifications).
	DefaultProgressInterval = 5 * time.Second
	// progressRequestPeriod is how often etcd is asked for a progress
	// notification while reads wait.
	progressRequestPeriod = 100 * time.Millisecond
	// bookmarkTick is how often due bookmarks and slow watchers are checked.
	bookmarkTick = 250 * time.Millisecond
)

// Options configure a Cache. Store, ResourcePrefix, KeyFunc, NewFunc and
// NewListFunc are required.
type Options struct {
	// Store is the storage the cache fronts (the etcd store): writes go
	// through to it, reads the cache cannot serve fall back to it, and it
	// fills the cache (list, then watch with progress notifications).
	Store storage.Interface
	// ResourcePrefix is the resource's key prefix, e.g. "/pods".
	ResourcePrefix string
	// GroupResource names the resource in errors and logs.
	GroupResource schema.GroupResource
	// KeyFunc computes an object's key, e.g. storage.NamespaceKeyFunc.
	// It and AttrFunc must be safe for concurrent use: the objects of a
	// first list are prepared on several goroutines.
	KeyFunc func(runtime.Object) (string, error)
	// NewFunc and NewListFunc return an empty object and list.
	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object
	// AttrFunc returns an object's labels and selectable fields; nil means
	// storage.DefaultNamespaceScopedAttr.
	AttrFunc storage.AttrFunc
	// Indexers are the resource's indexes, by field name (pods:
	// "spec.nodeName"). A list or watch whose field selector requires an
	// exact value of one is served from the index, and a watch is offered
	// only the events whose new or previous object has that value
	// (upstream's trigger functions). Each function must agree with the
	// field of the same name that AttrFunc returns.
	Indexers storage.IndexerFuncs
	// Intern, if set, shares through t the parts of each object the cache
	// takes in that objects of this resource tend to have in common
	// (pods: resource lists, images), beyond the labels, annotations and
	// managedFields the cache interns for every resource. It may change
	// obj, which no one else holds yet, and must keep every encoding of
	// it the same. An unstructured object reaches it in the cache's
	// compact form (its JSON, metadata typed), not as
	// *unstructured.Unstructured.
	Intern func(t *intern.Table, obj runtime.Object)
	// HistoryWindow is the least history kept; 0 means
	// DefaultHistoryWindow. Less than the default is refused, as upstream.
	HistoryWindow time.Duration
	// MaxEvents bounds the event window; 0 means DefaultMaxEvents.
	MaxEvents int
	// WatchBuffer and UnfilteredWatchBuffer size the per-watcher buffers;
	// 0 means the defaults.
	WatchBuffer, UnfilteredWatchBuffer int
	// SlowWatcherBudget is how long a watcher's buffer may stay full;
	// 0 means DefaultSlowWatcherBudget.
	SlowWatcherBudget time.Duration
	// BookmarkInterval is the period of bookmarks; 0 means the default.
	BookmarkInterval time.Duration
	// FreshnessTimeout bounds waits for a resourceVersion; 0 means the
	// default.
	FreshnessTimeout time.Duration
	// ProgressInterval is how often, while the cache has watchers, it asks
	// etcd for a progress notification, so that bookmarks carry etcd's
	// revision even when the resource does not change; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// ListerWatcher fills the cache; nil means the Store, listed with a
	// consistent read and watched with progress notifications. Tests use
	// it to interpose on the etcd watch.
	ListerWatcher listwatch.ListerWatcher
	// OnEvent, when set, is called with the object of every change the
	// cache takes in from etcd, before it is dispatched (upstream's
	// eventHandler; benchmarks measure write-to-cache latency with it). It
	// must not block or change the object.
	OnEvent func(obj runtime.Object)
	// MinWatchTimeout and MaxWatchTimeout bound how long each watch of the
	// ListerWatcher lasts before it is renewed (without a re-list); zero
	// means the Reflector's defaults.
	MinWatchTimeout, MaxWatchTimeout time.Duration
}

func (o *Options) complete() error {
	switch {
	case o.Store == nil:
		return errors.New("watchcache: Options.Store is required")
	case o.ResourcePrefix == "":
		return errors.New("watchcache: Options.ResourcePrefix is required")
	case o.KeyFunc == nil:
		return errors.New("watchcache: Options.KeyFunc is required")
	case o.NewFunc == nil || o.NewListFunc == nil:
		return errors.New("watchcache: Options.NewFunc and NewListFunc are required")
	case o.HistoryWindow != 0 && o.HistoryWindow < DefaultHistoryWindow:
		return fmt.Errorf("watchcache: HistoryWindow %v is shorter than the minimum %v", o.HistoryWindow, DefaultHistoryWindow)
	case o.MaxEvents < 0:
		return fmt.Errorf("watchcache: MaxEvents %d is negative", o.MaxEvents)
	}
	if o.AttrFunc == nil {
		o.AttrFunc = storage.DefaultNamespaceScopedAttr
	}
	if o.HistoryWindow == 0 {
		o.HistoryWindow = DefaultHistoryWindow
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MaxEvents < minEvents {
		o.MaxEvents = minEvents
	}
	if o.WatchBuffer <= 0 {
		o.WatchBuffer = DefaultWatchBuffer
	}
	if o.UnfilteredWatchBuffer <= 0 {
		o.UnfilteredWatchBuffer = DefaultUnfilteredWatchBuffer
	}
	if o.SlowWatcherBudget <= 0 {
		o.SlowWatcherBudget = DefaultSlowWatcherBudget
	}
	if o.BookmarkInterval <= 0 {
		o.BookmarkInterval = DefaultBookmarkInterval
	}
	if o.FreshnessTimeout <= 0 {
		o.FreshnessTimeout = DefaultFreshnessTimeout
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	return nil
}

// indexNames returns the indexer names in a fixed order.
func (o *Options) indexNames() []string {
	names := make([]string, 0, len(o.Indexers))
	for name := range o.Indexers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
