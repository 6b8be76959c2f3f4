// Package objectcache keeps the API objects that the agent's pods refer
// to (configMaps, secrets) watched, as the kubelet's watch-based
// configMap and secret managers (pkg/kubelet/util/manager): each object a
// pod refers to gets a Reflector of its own (package listwatch; a list
// and watch of its namespace with fieldSelector metadata.name=<name>)
// while at least one pod refers to it, so that reading it when a
// container starts costs no request. An immutable object stops being
// watched once read: it cannot change.
//
// It differs from upstream on purpose in one point: Get waits for a new
// object's first list for Options.SyncTimeout (5 s by default, upstream
// 1 s), since it replaces a GET that waited as long as the request took.
package objectcache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/listwatch"
)

// DefaultSyncTimeout is how long Get waits for an object's first list.
const DefaultSyncTimeout = 5 * time.Second

// Options configures a Cache.
type Options[T runtime.Object] struct {
	// Resource names the objects in errors (a NotFound's message).
	// Required.
	Resource schema.GroupResource
	// ListerWatcher lists and watches the objects of a namespace; the
	// cache narrows it to one name. Required.
	ListerWatcher func(namespace string) listwatch.ListerWatcher
	// IsImmutable says whether an object can no longer change (a
	// configMap's or secret's immutable field); nil: none is.
	IsImmutable func(T) bool
	// SyncTimeout bounds Get's wait for a first list; zero is
	// DefaultSyncTimeout.
	SyncTimeout time.Duration
}

type key struct{ namespace, name string }

// item is one watched object: its store and the Reflector filling it.
type item[T runtime.Object] struct {
	store     *listwatch.Indexer[T]
	reflector *listwatch.Reflector
	// users are the pods that refer to it.
	users map[types.UID]bool
	// stop ends its Reflector; nil until it runs, and after it stopped
	// for good (immutable).
	stop      context.CancelFunc
	immutable bool
}

// Cache keeps the objects pods refer to. Its methods are safe for
// concurrent use; Reflectors run while Run does.
type Cache[T runtime.Object] struct {
	opts Options[T]

	mu sync.Mutex
	// ctx is Run's: nil before Run and after it returned.
	ctx   context.Context
	wg    sync.WaitGroup
	items map[key]*item[T]
	// pods are the objects each pod refers to.
	pods map[types.UID][]key
}

// New returns a Cache; nothing is watched until Run.
func New[T runtime.Object](opts Options[T]) (*Cache[T], error) {
	if opts.ListerWatcher == nil || opts.Resource.Resource == "" {
		return nil, fmt.Errorf("objectcache: a resource and a ListerWatcher are required")
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	return &Cache[T]{opts: opts, items: map[key]*item[T]{}, pods: map[types.UID][]key{}}, nil
}

// Run runs the Reflectors of the objects referred to until ctx ends, then
// stops them and waits for them.
func (c *Cache[T]) Run(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	for k, it := range c.items {
		c.startLocked(k, it)
	}
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	c.ctx = nil
	for _, it := range c.items {
		if it.stop != nil {
			it.stop()
			it.stop = nil
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// startLocked starts it's Reflector under Run's context.
func (c *Cache[T]) startLocked(k key, it *item[T]) {
	if c.ctx == nil || it.stop != nil || it.immutable {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	it.stop = cancel
	c.wg.Go(func() { it.reflector.Run(ctx) })
	klog.FromContext(ctx).V(4).Info("Watching an object pods refer to", "resource", c.opts.Resource.String(), "object", klog.KRef(k.namespace, k.name))
}

// Set records that pod uid of namespace refers to names (and to no other
// object of this cache), as upstream's RegisterPod: objects newly
// referred to are watched, objects no pod refers to any more are not.
func (c *Cache[T]) Set(uid types.UID, namespace string, names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.pods[uid]
	c.pods[uid] = nil
	for _, name := range names {
		k := key{namespace, name}
		c.pods[uid] = append(c.pods[uid], k)
		it := c.items[k]
		if it == nil {
			it = c.newItem(k)
			c.items[k] = it
		}
		it.users[uid] = true
		c.startLocked(k, it)
	}
	// Released after the new references are taken, so that an object
	// the pod still refers to keeps its Reflector and its store.
	c.releaseLocked(uid, old, c.pods[uid])
}

// Forget records that pod uid refers to nothing any more, as upstream's
// UnregisterPod.
func (c *Cache[T]) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(uid, c.pods[uid], nil)
	delete(c.pods, uid)
}

// releaseLocked drops pod uid's use of the objects in old that are not in
// kept, and stops watching those no pod uses any more.
func (c *Cache[T]) releaseLocked(uid types.UID, old, kept []key) {
	for _, k := range old {
		if slices.Contains(kept, k) {
			continue
		}
		it := c.items[k]
		if it == nil {
			continue
		}
		delete(it.users, uid)
		if len(it.users) == 0 {
			if it.stop != nil {
				it.stop()
			}
			delete(c.items, k)
		}
	}
}

// Watched is how many objects are referred to (each has a Reflector while
// Run runs, unless it is immutable).
func (c *Cache[T]) Watched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

func (c *Cache[T]) newItem(k key) *item[T] {
	store := listwatch.NewIndexer[T](listwatch.IndexerOptions[T]{})
	inner := listwatch.WithOptions(c.opts.ListerWatcher(k.namespace), func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", k.name).String()
	})
	lw := listwatch.ListWatchFuncs{
		// A list at resourceVersion "0" (a Reflector's first) may be
		// answered from a cache behind etcd: a configMap created just
		// before its pod would be NotFound, and the pod's start fail
		// once. Every list here is a consistent read instead, as fresh
		// as the GET this cache replaces; a single object's list is
		// cheap either way.
		ListFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.ResourceVersion == "0" {
				o.ResourceVersion, o.ResourceVersionMatch = "", ""
			}
			return inner.List(ctx, o)
		},
		WatchFunc: inner.Watch,
	}
	var zero T
	r, err := listwatch.NewReflector(listwatch.Options{
		Name:          fmt.Sprintf("%s %s/%s", c.opts.Resource.String(), k.namespace, k.name),
		ListerWatcher: lw,
		Store:         store,
		ExpectedType:  zero,
		// A watch per object, as upstream: long timeouts keep the
		// re-watches of many objects few.
		MinWatchTimeout: 30 * time.Minute,
		MaxWatchTimeout: 60 * time.Minute,
		RefusedMaxWait:  time.Second,
	})
	if err != nil {
		panic(err) // both required fields are set above
	}
	return &item[T]{store: store, reflector: r, users: map[types.UID]bool{}}
}

// Get is the object namespace/name, which a pod must refer to (Set): from
// the cache once its first list is in (waiting for that list at most
// Options.SyncTimeout or until ctx ends), a NotFound error when it does
// not exist.
func (c *Cache[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	var zero T
	k := key{namespace, name}
	c.mu.Lock()
	it := c.items[k]
	c.mu.Unlock()
	if it == nil {
		return zero, fmt.Errorf("%s %s/%s is not referred to by a pod of this agent", c.opts.Resource.String(), namespace, name)
	}
	if !it.reflector.HasSynced() {
		t := time.NewTimer(c.opts.SyncTimeout)
		defer t.Stop()
		select {
		case <-it.reflector.Synced():
		case <-t.C:
			return zero, fmt.Errorf("failed to sync %s cache: timed out waiting for %s/%s", c.opts.Resource.String(), namespace, name)
		case <-ctx.Done():
			return zero, fmt.Errorf("%s %s/%s: %w", c.opts.Resource.String(), namespace, name, ctx.Err())
		}
	}
	storeKey := name // a cluster-scoped object's key (listwatch.NamespaceNameKey)
	if namespace != "" {
		storeKey = namespace + "/" + name
	}
	obj, ok := it.store.Get(storeKey)
	if !ok {
		return zero, apierrors.NewNotFound(c.opts.Resource, name)
	}
	if c.opts.IsImmutable != nil && c.opts.IsImmutable(obj) {
		c.mu.Lock()
		if !it.immutable {
			it.immutable = true
			if it.stop != nil {
				it.stop()
				it.stop = nil
			}
			klog.FromContext(ctx).V(4).Info("Stopped watching an immutable object", "resource", c.opts.Resource.String(), "object", klog.KRef(namespace, name))
		}
		c.mu.Unlock()
	}
	return obj, nil
}
