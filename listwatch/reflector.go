package listwatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Reflector defaults.
const (
	// DefaultPageSize is the page size of lists at resourceVersion "" and
	// "0", as client-go's pager.
	DefaultPageSize = 500
	// DefaultMinWatchTimeout and DefaultMaxWatchTimeout bound the random
	// TimeoutSeconds of each watch, so that watches of many clients do not
	// end together and a silently dead connection does not hang forever.
	DefaultMinWatchTimeout = 5 * time.Minute
	DefaultMaxWatchTimeout = 10 * time.Minute
	// shortWatch is how short a watch that ends cleanly with no event must
	// be for the Reflector to back off before the next one: a server that
	// closes every watch at once must not be hammered.
	shortWatch = time.Second
	// watchTimeoutGrace is how long after its TimeoutSeconds a Reflector
	// ends a watch the server has not ended.
	watchTimeoutGrace = 30 * time.Second
)

// Options configures a Reflector.
type Options struct {
	// Name appears in logs and errors, e.g. "pods".
	Name string
	// ListerWatcher is listed and watched. Required.
	ListerWatcher ListerWatcher
	// Store receives the list results and watch events. Required.
	Store Store
	// ExpectedType, when not nil, is the Go type of the objects: events
	// carrying another type are logged and skipped.
	ExpectedType runtime.Object
	// ExpectedGVK, when not nil, is the kind of the objects (for
	// unstructured objects): events of another kind are logged and skipped.
	ExpectedGVK *schema.GroupVersionKind
	// PageSize is the limit of list pages at resourceVersion "" or "0";
	// 0 means DefaultPageSize and a negative value lists in one request.
	// Lists at a given resourceVersion are never paged, so that an API
	// server can serve them from its watch cache.
	PageSize int64
	// MinWatchTimeout and MaxWatchTimeout bound the random TimeoutSeconds
	// asked for each watch; zero means the defaults.
	MinWatchTimeout, MaxWatchTimeout time.Duration
	// Backoff shapes the waits after failures; its Clock is set to Clock.
	Backoff BackoffOptions
	// Clock drives waits and measures watches; defaults to the real clock.
	Clock clock.WithTicker
	// Rand returns a float in [0, 1) for watch timeouts and jitter;
	// defaults to math/rand/v2.
	Rand func() float64
	// StreamingList fills the store with a streaming list (a watch with
	// sendInitialEvents=true, resourceVersionMatch=NotOlderThan, ended by
	// a bookmark annotated k8s.io/initial-events-end) instead of a list,
	// and goes on watching on the same stream. A server that refuses it
	// (400 or 422) is listed instead from then on; other failures fall back
	// to a list for that attempt, as in client-go.
	StreamingList bool
	// RefusedMaxWait, when set, caps the wait after a connection refused
	// (the server is not listening, so a retry costs it nothing) or a
	// connection lost under the request (reset, broken pipe, EOF before
	// an answer: a client that still held a connection to a server that
	// restarted meets it this way first) to a random time in
	// [RefusedMaxWait/2, RefusedMaxWait), so that the Reflector is back
	// within that time of the server's return. The node agent uses 1 s.
	// Failures the server answered (429, 500, ...) keep the exponential
	// backoff.
	RefusedMaxWait time.Duration
}

// Reflector keeps a Store in step with a ListerWatcher: it lists, replaces
// the store's content, then watches from the list's resourceVersion and
// applies each event. It recovers on its own:
//
//   - a watch that ends cleanly (server timeout, closed connection) is
//     reopened at once from the last resourceVersion seen, without a list;
//   - a watch or list that fails (connection refused, 429, 5xx, an error
//     event) is retried after an exponential backoff; a failed watch is
//     reopened from the same resourceVersion, without a list;
//   - Expired or Gone (410), or a too-large resourceVersion, means the
//     resourceVersion is no longer usable: the Reflector lists again at the
//     last resourceVersion and, if that too is expired, at "" (a consistent
//     read), then watches from the new list.
//
// Bookmarks advance the resourceVersion and are passed to the store when
// it implements ResourceVersionUpdater. Run it once.
type Reflector struct {
	name     string
	lw       ListerWatcher
	store    Store
	expType  reflect.Type
	expGVK   *schema.GroupVersionKind
	pageSize int64
	minWatch time.Duration
	maxWatch time.Duration
	clock    clock.WithTicker
	rand     func() float64
	backoff  *Backoff
	// refusedMax is Options.RefusedMaxWait.
	refusedMax time.Duration
	// away says the server was lately away: set by a connection-level
	// failure (delayAfter), cleared by a failure the server answered or a
	// watch that worked. While it is
	// set, what a restarting server does (end watches at once as it shuts
	// down, answer 410 as its new cache starts after our resourceVersion)
	// is not a misbehaving server, so it costs at most the RefusedMaxWait
	// cap, not the backoff that the refusals grew. Only Run's goroutine
	// touches it.
	away      bool
	synced    chan struct{}
	syncOnce  sync.Once
	typeLabel string
	// running guards against a second Run.
	running atomic.Bool

	// mu guards the fields below; the run goroutine writes them, readers
	// are anyone calling LastSyncResourceVersion.
	mu sync.RWMutex
	// lastRV is the resourceVersion of the last list, event or bookmark.
	lastRV string
	// lastRVUnavailable is set when a list at lastRV said Expired or too
	// large: the next list asks for "" instead.
	lastRVUnavailable bool
	// paginated is set when the first list, at "0", came back in pages:
	// the server has no watch cache, so later lists keep paging too.
	paginated bool

	// streaming is whether to try a streaming list; only the run
	// goroutine reads and writes it.
	streaming bool
}

// NewReflector returns a Reflector; it does nothing until Run.
func NewReflector(opts Options) (*Reflector, error) {
	if opts.ListerWatcher == nil {
		return nil, fmt.Errorf("reflector %q: no ListerWatcher", opts.Name)
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("reflector %q: no Store", opts.Name)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MinWatchTimeout <= 0 {
		opts.MinWatchTimeout = DefaultMinWatchTimeout
	}
	if opts.MaxWatchTimeout <= 0 {
		opts.MaxWatchTimeout = max(DefaultMaxWatchTimeout, opts.MinWatchTimeout)
	}
	if opts.MaxWatchTimeout < opts.MinWatchTimeout {
		return nil, fmt.Errorf("reflector %q: MaxWatchTimeout %v < MinWatchTimeout %v", opts.Name, opts.MaxWatchTimeout, opts.MinWatchTimeout)
	}
	bo := opts.Backoff
	bo.Clock = opts.Clock
	if bo.Rand == nil {
		bo.Rand = opts.Rand
	}
	r := &Reflector{
		name:     opts.Name,
		lw:       opts.ListerWatcher,
		store:    opts.Store,
		expGVK:   opts.ExpectedGVK,
		pageSize: opts.PageSize,
		minWatch: opts.MinWatchTimeout,
		maxWatch: opts.MaxWatchTimeout,
		clock:    opts.Clock,
		rand:     opts.Rand,
		backoff:  NewBackoff(bo),
		synced:   make(chan struct{}),

		streaming:  opts.StreamingList,
		refusedMax: opts.RefusedMaxWait,
	}
	r.typeLabel = "<unspecified>"
	if opts.ExpectedType != nil {
		r.expType = reflect.TypeOf(opts.ExpectedType)
		r.typeLabel = r.expType.String()
	}
	if opts.ExpectedGVK != nil {
		r.typeLabel = opts.ExpectedGVK.String()
	}
	return r, nil
}

// Name is the name given in Options.
func (r *Reflector) Name() string { return r.name }

// HasSynced reports whether the first list has been written to the store.
// It never becomes false again: later re-lists replace the content in one
// step, so the store is never empty for want of a list.
func (r *Reflector) HasSynced() bool {
	select {
	case <-r.synced:
		return true
	default:
		return false
	}
}

// Synced is closed once the first list has been written to the store.
func (r *Reflector) Synced() <-chan struct{} { return r.synced }

// LastSyncResourceVersion is the resourceVersion of the last list, event
// or bookmark the store was given; "" before the first list.
func (r *Reflector) LastSyncResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lastRV
}

// Run lists and watches until ctx ends; it returns only then, and leaves
// no goroutine behind. It logs through klog.FromContext(ctx). A Reflector
// runs once: a second Run returns at once.
func (r *Reflector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("reflector", r.name, "type", r.typeLabel)
	if !r.running.CompareAndSwap(false, true) {
		logger.Error(nil, "Reflector already ran; ignoring a second Run")
		return
	}
	ctx = klog.NewContext(ctx, logger)
	logger.V(3).Info("Starting reflector")
	defer logger.V(3).Info("Stopping reflector")

	needList := true
	for ctx.Err() == nil {
		var first *liveWatch
		if needList {
			var err error
			if first, err = r.fill(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				logger.Error(err, "List failed, backing off")
				r.wait(ctx, r.delayAfter(err))
				continue
			}
			needList = false
		}
		r.runWatches(ctx, first, &needList)
	}
}

// runWatches watches, and re-watches, until ctx ends or the
// resourceVersion must be given up; then it sets *needList. The first
// watch is first when not nil (the rest of a streaming list).
func (r *Reflector) runWatches(ctx context.Context, first *liveWatch, needList *bool) {
	logger := klog.FromContext(ctx)
	// progressed says whether some watch since the list worked: a 410 then
	// is the normal end of a long watch, not a server that refuses every
	// watch, and the re-list need not wait.
	progressed := false
	for ctx.Err() == nil {
		start := r.clock.Now()
		events, err := r.watch(ctx, first)
		first = nil
		if ctx.Err() != nil {
			return
		}
		short := events == 0 && r.clock.Since(start) < shortWatch
		if !short {
			progressed = true
			r.away = false
		}
		switch {
		case err == nil && !short:
			logger.V(4).Info("Watch closed, resuming", "resourceVersion", r.LastSyncResourceVersion(), "events", events)
		case err == nil:
			logger.V(4).Info("Very short watch, backing off", "resourceVersion", r.LastSyncResourceVersion())
			r.wait(ctx, r.capIfAway(r.backoff.Next()))
		case isExpired(err) || isTooLargeResourceVersion(err):
			logger.V(4).Info("Watch resourceVersion unusable, re-listing", "resourceVersion", r.LastSyncResourceVersion(), "err", err)
			if !progressed && !r.away {
				r.wait(ctx, r.backoff.Next())
			}
			*needList = true
			return
		default:
			logger.V(2).Info("Watch failed, backing off", "resourceVersion", r.LastSyncResourceVersion(), "err", err)
			r.wait(ctx, r.delayAfter(err))
		}
	}
}

// delayAfter is how long to wait after err: the next backoff step, or
// when the server refused the connection and RefusedMaxWait is set, at
// most a jittered RefusedMaxWait.
func (r *Reflector) delayAfter(err error) time.Duration {
	// A failure the server answered (429, 500, ...) says it is there.
	r.away = connectionLost(err)
	return r.capIfAway(r.backoff.Next())
}

// capIfAway is d, or at most a jittered RefusedMaxWait while the server
// was lately away and RefusedMaxWait is set.
func (r *Reflector) capIfAway(d time.Duration) time.Duration {
	if r.away && r.refusedMax > 0 {
		d = min(d, r.refusedMax/2+time.Duration(r.rand()*float64(r.refusedMax/2)))
	}
	return d
}

// connectionLost says whether err is the server not being there (refused),
// a connection that broke before an answer, or a server that says it is
// unavailable (503: shutting down or not yet serving, as during a
// restart), rather than an answer about the request.
func connectionLost(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		errors.Is(err, syscall.EPIPE) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServiceUnavailable(err)
}

// wait sleeps d on the Reflector's clock, or until ctx ends.
func (r *Reflector) wait(ctx context.Context, d time.Duration) {
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

func (r *Reflector) setLastRV(rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastRV = rv
}

// relistResourceVersion is where the next list starts: "0" (any, from a
// cache) the first time, "" (consistent) after an expired list, else the
// last resourceVersion, so the store never goes back in time.
func (r *Reflector) relistResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case r.lastRVUnavailable:
		return ""
	case r.lastRV == "":
		return "0"
	default:
		return r.lastRV
	}
}

// metaAccessor is meta.Accessor, for objects a watch sends.
func metaAccessor(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }

// resourceVersionOf is obj's metadata.resourceVersion, or "".
func resourceVersionOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
