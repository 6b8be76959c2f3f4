package watchcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/storage/intern"
)

// Cache is the watch cache of one resource: a storage.Interface that
// serves reads and watches from memory and sends writes to the store
// below it. Build it with New, fill it with Start, end it with Stop.
type Cache struct {
	opts       Options
	store      storage.Interface
	versioner  storage.Versioner
	indexNames []string
	indexFuncs []storage.IndexerFunc
	reflector  *listwatch.Reflector
	// layouts and interns share what elements have in common; only the
	// goroutine taking in changes (the Reflector's, through sink) uses
	// them.
	layouts fieldLayouts
	interns *intern.Table

	// ctx ends when the cache stops; every goroutine of the cache, the
	// watchers' included, ends with it. wg joins them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  sync.Once

	// mu guards st, ready and changed. Ingestion holds it to apply an
	// event and queue it for the dispatcher; readers hold it to take a
	// snapshot (a pointer) and, for a watch, to queue the watcher's
	// registration, never while they copy or send. Nothing waits for the
	// dispatcher or a watcher while holding it: the only lock taken under
	// it is pending.mu, held by anyone for one append or take.
	mu    sync.RWMutex
	st    *state
	ready bool
	// changed is closed when st.rv advances; nil when nobody waits.
	changed chan struct{}
	// readyCh is closed by the first list.
	readyCh chan struct{}

	// reg is owned by the dispatcher goroutine (see registry): watchers
	// join and leave it through pending; only reg.live is read elsewhere.
	reg *registry
	// pending is the queue from ingestion and Watch to the dispatcher,
	// with its own lock (see pending).
	pending pending
	// dispatchedRV is the resourceVersion up to which every change has
	// been offered to the watchers; toWake are the watchers to wake at the
	// end of the dispatcher's current batch. Only the dispatcher goroutine
	// uses them.
	dispatchedRV uint64
	toWake       []*watcher

	// stream is the gRPC metadata that puts the cache's etcd watch and
	// its progress requests on a watch stream of their own (see
	// ownStream).
	stream metadata.MD

	lastProgressRequest atomic.Int64 // unix nanoseconds
	// progressAnswered is set when a progress notification arrives and
	// cleared by the request after it: the one outstanding request has
	// been answered, so a reader still waiting may ask again at once.
	progressAnswered atomic.Bool
	// stopMu orders progress requests before Stop's cancel: see
	// requestProgress.
	stopMu    sync.RWMutex
	slowEnded atomic.Int64
	jitter    func() float64
}

var _ storage.Interface = (*Cache)(nil)

// New returns a cache for one resource; it serves from the store until
// Start has filled it.
func New(opts Options) (*Cache, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	c := &Cache{
		opts:       opts,
		store:      opts.Store,
		versioner:  opts.Store.Versioner(),
		indexNames: opts.indexNames(),
		readyCh:    make(chan struct{}),
		pending:    pending{wake: make(chan struct{}, 1)},
		jitter:     rand.Float64,
		interns:    intern.New(intern.Options{}),
	}
	if c.versioner == nil {
		c.versioner = storage.APIObjectVersioner{}
	}
	// Unique per cache, not per resource: two caches of one resource over
	// one client (a test's, a restarted stack's) must not share either.
	c.stream = metadata.Pairs(streamMetadataKey, fmt.Sprintf("%s#%016x", opts.ResourcePrefix, rand.Uint64()))
	for _, name := range c.indexNames {
		c.indexFuncs = append(c.indexFuncs, opts.Indexers[name])
	}
	c.layouts.indexNames = c.indexNames
	c.st = newState(c.indexNames, newHistory(opts.HistoryWindow, minEvents, opts.MaxEvents))
	c.reg = newRegistry(len(c.indexNames))
	c.ctx, c.cancel = context.WithCancel(context.Background())

	lw := opts.ListerWatcher
	if lw == nil {
		lw = &storeListerWatcher{store: opts.Store, prefix: opts.ResourcePrefix, newList: opts.NewListFunc}
	}
	r, err := listwatch.NewReflector(listwatch.Options{
		Name:            "watchcache " + opts.GroupResource.String(),
		ListerWatcher:   lw,
		Store:           sink{c},
		PageSize:        -1,
		MinWatchTimeout: opts.MinWatchTimeout,
		MaxWatchTimeout: opts.MaxWatchTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("watchcache %s: %w", opts.GroupResource, err)
	}
	c.reflector = r
	return c, nil
}

// Start fills the cache and keeps it current until ctx ends or Stop. It
// returns at once; Wait or Ready tell when the first list is in.
func (c *Cache) Start(ctx context.Context) {
	c.start.Do(func() {
		stop := context.AfterFunc(ctx, c.cancel)
		c.wg.Add(4)
		go c.progressLoop(c.ctx)
		go func() {
			defer c.wg.Done()
			<-c.ctx.Done()
			stop()
		}()
		go c.dispatchLoop(c.ctx)
		go func() {
			defer c.wg.Done()
			// The Reflector's etcd watch goes on the cache's own stream,
			// where requestProgress asks (see ownStream).
			c.reflector.Run(c.ownStream(c.ctx))
		}()
	})
}

// Stop ends the cache: its watchers' result channels close, its
// goroutines end, and it returns when they have.
func (c *Cache) Stop() {
	c.stopMu.Lock() // no progress request after the cancel (requestProgress)
	c.cancel()
	c.stopMu.Unlock()
	// A Watch that saw the cache running has registered its goroutine
	// under the lock by the time this returns.
	c.mu.Lock()
	c.mu.Unlock() //nolint:staticcheck // an empty critical section is the point
	c.wg.Wait()
}

// Ready reports whether the first list has been loaded.
func (c *Cache) Ready() bool {
	select {
	case <-c.readyCh:
		return true
	default:
		return false
	}
}

// ObjectCount is how many objects the cache holds now, and whether it
// has filled (its first list loaded): what API priority and fairness'
// work estimator reads to cost a list, at no cost (upstream reads a
// count kept by a loop over etcd every minute).
func (c *Cache) ObjectCount() (int64, bool) {
	if !c.Ready() {
		return 0, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return int64(c.st.tree.Len()), true
}

// Wait blocks until the cache is ready, ctx ends or the cache stops.
func (c *Cache) Wait(ctx context.Context) error {
	select {
	case <-c.readyCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return fmt.Errorf("watchcache %s: stopped before it was ready", c.opts.GroupResource)
	}
}

// ResourceVersion is the resourceVersion the cache is current to.
func (c *Cache) ResourceVersion() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.st.rv
}

// Watchers is the number of live watchers.
func (c *Cache) Watchers() int { return c.reg.Len() }

// SlowWatchersEnded counts the watchers ended for not keeping up.
func (c *Cache) SlowWatchersEnded() int64 { return c.slowEnded.Load() }

// forget takes w out of the registry, through the dispatcher that owns it.
func (c *Cache) forget(w *watcher) { c.pending.push(pendingItem{unregister: w}) }

// notifyLocked wakes readers waiting for a resourceVersion; mu is held
// for writing.
func (c *Cache) notifyLocked() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// waitFresh waits until the cache has reached rv, asking etcd for a
// progress notification every 100 ms meanwhile (the resource may have no
// writes to carry the cache forward). After FreshnessTimeout it fails
// with TooLargeResourceVersion, as upstream.
func (c *Cache) waitFresh(ctx context.Context, rv uint64) error {
	if rv == 0 {
		return nil
	}
	deadline := time.Now().Add(c.opts.FreshnessTimeout)
	for {
		c.mu.Lock()
		cur := c.st.rv
		if cur >= rv {
			c.mu.Unlock()
			return nil
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()

		remaining := time.Until(deadline)
		if remaining <= 0 {
			return storage.NewTooLargeResourceVersionError(rv, cur, 1)
		}
		c.requestProgress(ctx)
		t := time.NewTimer(min(remaining, progressRequestPeriod))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-c.ctx.Done():
			t.Stop()
			return fmt.Errorf("watchcache %s: stopped", c.opts.GroupResource)
		}
		t.Stop()
	}
}

// progressLoop asks etcd for progress notifications while the cache has
// watchers: the Reflector passes them on as resourceVersions, and the
// watchers' bookmarks move on with etcd even on a quiet resource.
func (c *Cache) progressLoop(ctx context.Context) {
	defer c.wg.Done()
	t := time.NewTicker(c.opts.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if c.Ready() && c.reg.Len() > 0 {
				c.requestProgress(ctx)
			}
		}
	}
}

// requestProgress asks etcd for a progress notification, whatever the
// number of waiting readers at most one request at a time: the next goes
// once the last has been answered, or progressRequestPeriod after it
// (etcd drops a request it cannot answer yet). Waiting out the period
// after an answered request cost a reader that came within 100 ms of the
// previous one (a client listing after each write) the whole period.
func (c *Cache) requestProgress(ctx context.Context) {
	now := time.Now().UnixNano()
	last := c.lastProgressRequest.Load()
	if now-last < int64(progressRequestPeriod) && !c.progressAnswered.Load() || !c.lastProgressRequest.CompareAndSwap(last, now) {
		return
	}
	c.progressAnswered.Store(false)
	// The request goes on the stream of the cache's etcd watch. One sent
	// when the cache has no watch would open a stream that nothing ever
	// closes (the etcd client closes a stream when its last watch ends,
	// and this one would never have had any): sending holds stopMu for
	// reading, and Stop cancels under it, so no request leaves after the
	// watch's context has ended. The send is a hand-off to the etcd
	// client's stream goroutine, which does not take it while it
	// reconnects: it is bounded, as Stop waits for it.
	c.stopMu.RLock()
	defer c.stopMu.RUnlock()
	if c.ctx.Err() != nil || !c.Ready() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, progressSendTimeout)
	defer cancel()
	_ = c.store.RequestWatchProgress(c.ownStream(ctx)) // best effort: the wait times out otherwise
}

// progressSendTimeout bounds the hand-off of a progress request to the
// etcd client.
const progressSendTimeout = time.Second

// streamMetadataKey names the gRPC metadata that gives each cache its own
// etcd watch stream.
const streamMetadataKey = "kite-watch-cache"

// ownStream returns ctx with the cache's stream metadata: the etcd client
// runs one gRPC watch stream per distinct outgoing metadata, and a
// progress request is answered on the stream it names. etcd answers it
// only when every watch on that stream is synced and none starts after
// its current revision; on the one stream all watches shared, a single
// watch opened after the last write (a cache's first watch after its
// list, a watch etcd serves) held back every cache's progress until the
// next write, and a wait for freshness on a quiet cluster failed with 504
// (see docs/watchcache.md). On its own stream the cache's watch is alone,
// and it can start after etcd's revision only when the cache has that
// revision already, so it never holds back a wait that needs progress.
// A ListerWatcher of Options must pass the ctx it is given on to the
// store's Watch (the tests' wrappers of storeListerWatcher do) for its
// watch to receive the progress notifications.
func (c *Cache) ownStream(ctx context.Context) context.Context {
	return metadata.NewOutgoingContext(ctx, c.stream)
}

// bookmarkObject is the object of a BOOKMARK at rv: an empty object of
// the resource with only its resourceVersion (and the initial-events-end
// annotation when asked).
func (c *Cache) bookmarkObject(rv uint64, initialEventsEnd bool) runtime.Object {
	obj := c.opts.NewFunc()
	_ = c.versioner.UpdateObject(obj, rv)
	if initialEventsEnd {
		_ = storage.AnnotateInitialEventsEndBookmark(obj)
	}
	// A bookmark is the resource's own type, as upstream sends it: a
	// consumer of storage.Interface (upstream's own suites among them)
	// checks event types, and a bookmark is made for one watcher, so
	// there is no encoding to share.
	return obj
}
