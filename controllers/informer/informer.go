// Package informer keeps controllers' caches of resources and tells them
// what changed: a listwatch Reflector over a client fills a listwatch
// Indexer, and each write calls the controllers' handlers with the old and
// new object, from the Reflector's goroutine. Handlers should do little
// (queue a key); the cache is what workers read.
//
// It is the part of client-go's SharedInformer and SharedInformerFactory
// that Kite's controllers use, without tools/cache: one Reflector and one
// Indexer per cache, synchronous handlers, no resync. Controllers in one
// process share a cache through a Factory (docs/controllers.md, "Shared
// caches"); a controller given none keeps caches of its own.
package informer

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/listwatch"
)

// Handlers are called after each change of the cache, in event order,
// from the cache's goroutine. Any may be nil. Objects are shared with the
// cache (and with every controller sharing it) and must not be modified.
type Handlers[T runtime.Object] struct {
	OnAdd    func(obj T)
	OnUpdate func(old, obj T)
	OnDelete func(obj T)
}

// Shape is what a cache lists and watches. A Factory keeps one cache per
// Shape and object type: informers asking for the same Shape and type
// share it, any difference (another selector, metadata instead of typed
// objects) makes another cache.
type Shape struct {
	// Resource is the resource with its group, e.g. "pods",
	// "replicasets.apps". Required with a Factory.
	Resource string
	// Namespace is the one namespace listed; "" is all.
	Namespace string
	// FieldSelector and LabelSelector are set on every list and watch.
	FieldSelector, LabelSelector string
}

// Options configure an Informer.
type Options[T runtime.Object] struct {
	// Name appears in logs, e.g. "pods".
	Name string
	// Shape is what ListerWatcher lists and watches; the selectors are
	// set from it on every request.
	Shape Shape
	// ListerWatcher lists and watches Shape.Resource in Shape.Namespace,
	// e.g. listwatch.FromTypedClient(clientset.CoreV1().Pods(""), nil).
	// Required. Of informers sharing a cache, the first one's is used: a
	// Factory serves one API server, with the identity of its first user.
	ListerWatcher listwatch.ListerWatcher
	// Indexers are the cache's secondary indexes. Informers sharing a
	// cache share its indexes: one name may be asked for twice only with
	// the same function (ByNamespace, ByNodeName).
	Indexers map[string]listwatch.IndexFunc[T]
	// Handlers hear about every change.
	Handlers Handlers[T]
}

// Factory hands out informers, one cache per Shape and object type for
// every controller that asks, as kube-controller-manager's controllers
// share one SharedInformerFactory. Every informer of a cache must be asked
// for before any of them is used (Run, Store): its indexes and handlers
// are fixed then. A Factory is safe for concurrent use.
type Factory struct {
	mu sync.Mutex
	// caches holds a *cache[T] per key, T being the key's type.
	caches map[cacheKey]any
}

type cacheKey struct {
	shape Shape
	typ   reflect.Type
}

// NewFactory returns a Factory with no cache yet.
func NewFactory() *Factory { return &Factory{caches: map[cacheKey]any{}} }

// For returns an informer of f's cache of opts.Shape, made on the first
// call: it adds opts.Indexers and opts.Handlers to the cache's. With a nil
// f the informer has a cache of its own, as from New.
func For[T runtime.Object](f *Factory, opts Options[T]) (*Informer[T], error) {
	if opts.ListerWatcher == nil {
		return nil, fmt.Errorf("informer %s: ListerWatcher is required", opts.Name)
	}
	if f == nil {
		return New(opts)
	}
	if opts.Shape.Resource == "" {
		return nil, fmt.Errorf("informer %s: Shape.Resource is required to share a cache", opts.Name)
	}
	key := cacheKey{shape: opts.Shape, typ: reflect.TypeFor[T]()}
	f.mu.Lock()
	c, ok := f.caches[key].(*cache[T])
	if !ok {
		var err error
		if c, err = newCache(opts); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		c.shared = true
		f.caches[key] = c
	}
	f.mu.Unlock()
	return c.register(opts)
}

// New returns an Informer with a cache of its own; it does nothing until
// Run.
func New[T runtime.Object](opts Options[T]) (*Informer[T], error) {
	c, err := newCache(opts)
	if err != nil {
		return nil, err
	}
	return c.register(opts)
}

// Informer is one controller's view of a cache of one resource kept in
// step with the API: its handlers, and the cache it may share.
type Informer[T runtime.Object] struct {
	c   *cache[T]
	reg *registration[T]
}

// Run keeps the cache in step until ctx ends. The first Run of a cache's
// informers starts it; it stops when the last Run running ends (that Run
// returns once it has), so a cache shared by controllers that all run with
// one ctx stops with them. The informer's handlers are not called after
// its Run has returned. A cache runs once: a Run after it stopped returns
// at once.
func (i *Informer[T]) Run(ctx context.Context) {
	defer i.reg.stopped.Store(true)
	c := i.c
	c.seal()
	c.mu.Lock()
	if c.done != nil && c.runs == 0 {
		c.mu.Unlock()
		klog.FromContext(ctx).Error(nil, "Informer's cache already ran and stopped; ignoring Run", "informer", c.name)
		return
	}
	c.runs++
	if c.done == nil {
		// The cache outlives this Run when others share it: its context
		// keeps ctx's values (the logger), not its end.
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		if c.shared {
			rctx = context.WithValue(rctx, sharedCacheKey{}, true)
		}
		done := make(chan struct{})
		c.cancel, c.done = cancel, done
		go func() {
			defer close(done)
			c.reflector.Run(rctx)
		}()
	}
	done := c.done
	c.mu.Unlock()

	<-ctx.Done()
	c.mu.Lock()
	c.runs--
	last := c.runs == 0
	c.mu.Unlock()
	if last {
		c.cancel()
		<-done
	}
}

// sharedCacheKey marks the context of a Factory's cache's requests.
type sharedCacheKey struct{}

// IsSharedCache reports whether ctx is that of a list or watch of a
// Factory's cache: a cache several controllers read. A client shared by
// controllers that each write with an identity of their own sends these
// with the identity of the controllers' process, as
// kube-controller-manager's shared informers use its own credentials and
// each controller its ServiceAccount's (--use-service-account-credentials):
// the controllers' roles need not allow the reads of the others.
func IsSharedCache(ctx context.Context) bool {
	shared, _ := ctx.Value(sharedCacheKey{}).(bool)
	return shared
}

// HasSynced reports whether the first list is in the cache (and every
// handler has been told of it).
func (i *Informer[T]) HasSynced() bool { return i.c.reflector.HasSynced() }

// LastSyncResourceVersion is the resourceVersion the cache is known to
// reflect: of the last list, event or bookmark written to it ("" before the
// first list). A controller compares it with the resourceVersions of its
// own writes to know whether the cache shows them yet.
func (i *Informer[T]) LastSyncResourceVersion() string {
	return i.c.reflector.LastSyncResourceVersion()
}

// Synced is closed once the first list is in the cache.
func (i *Informer[T]) Synced() <-chan struct{} { return i.c.reflector.Synced() }

// Store is the cache, with the indexes of every informer sharing it. Its
// objects must not be modified. The first call fixes the cache's indexes
// and handlers.
func (i *Informer[T]) Store() *listwatch.Indexer[T] { return i.c.seal() }

// cache is one Reflector and Indexer, and the handlers of every informer
// of it.
type cache[T runtime.Object] struct {
	name string
	// shared is set on a Factory's caches: their lists and watches carry
	// IsSharedCache in their context.
	shared    bool
	reflector *listwatch.Reflector
	notify    *notifying[T]

	// mu guards the fields below.
	mu sync.Mutex
	// indexers and regs are what the informers asked for; once sealed
	// (store set), they are fixed.
	indexers map[string]listwatch.IndexFunc[T]
	regs     []*registration[T]
	store    *listwatch.Indexer[T]
	// runs counts the Runs running; cancel and done stop and await the
	// Reflector's goroutine, started by the first Run.
	runs   int
	cancel context.CancelFunc
	done   chan struct{}
}

// registration is one informer's handlers.
type registration[T runtime.Object] struct {
	h Handlers[T]
	// stopped is set once the informer's Run has returned.
	stopped atomic.Bool
}

func newCache[T runtime.Object](opts Options[T]) (*cache[T], error) {
	if opts.ListerWatcher == nil {
		return nil, fmt.Errorf("informer %s: ListerWatcher is required", opts.Name)
	}
	c := &cache[T]{name: opts.Name, notify: &notifying[T]{}, indexers: map[string]listwatch.IndexFunc[T]{}}
	var zero T
	r, err := listwatch.NewReflector(listwatch.Options{
		Name:          opts.Name,
		ListerWatcher: withSelectors(opts.ListerWatcher, opts.Shape),
		Store:         c.notify,
		ExpectedType:  zero,
		// An in-process or local API server that restarts should find
		// its controllers back within a second.
		RefusedMaxWait: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("informer %s: %w", opts.Name, err)
	}
	c.reflector = r
	return c, nil
}

// register adds an informer's indexes and handlers to the cache.
func (c *cache[T]) register(opts Options[T]) (*Informer[T], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil {
		return nil, fmt.Errorf("informer %s: its cache is in use already; ask for every informer of a Factory before running any", opts.Name)
	}
	for name, f := range opts.Indexers {
		if f == nil {
			return nil, fmt.Errorf("informer %s: index %q has no function", opts.Name, name)
		}
		// Functions cannot be compared in Go; their code can. Two
		// closures of one literal compare equal, so a function shared
		// under one name must not depend on what it captured.
		if have, ok := c.indexers[name]; ok && reflect.ValueOf(have).Pointer() != reflect.ValueOf(f).Pointer() {
			return nil, fmt.Errorf("informer %s: index %q is already on this cache with another function", opts.Name, name)
		}
	}
	maps.Copy(c.indexers, opts.Indexers)
	reg := &registration[T]{h: opts.Handlers}
	c.regs = append(c.regs, reg)
	return &Informer[T]{c: c, reg: reg}, nil
}

// seal makes the Indexer with every index asked for and fixes the
// handlers, once; it returns the Indexer.
func (c *cache[T]) seal() *listwatch.Indexer[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil {
		c.store = listwatch.NewIndexer(listwatch.IndexerOptions[T]{Indexers: c.indexers})
		// The Reflector's goroutine starts after this (Run seals first),
		// and reads these without the lock.
		c.notify.store = c.store
		c.notify.regs = slices.Clone(c.regs)
	}
	return c.store
}

// withSelectors sets shape's selectors on every list and watch of lw.
func withSelectors(lw listwatch.ListerWatcher, shape Shape) listwatch.ListerWatcher {
	if shape.FieldSelector == "" && shape.LabelSelector == "" {
		return lw
	}
	return listwatch.WithOptions(lw, func(o *metav1.ListOptions) {
		if shape.FieldSelector != "" {
			o.FieldSelector = shape.FieldSelector
		}
		if shape.LabelSelector != "" {
			o.LabelSelector = shape.LabelSelector
		}
	})
}

// notifying writes into an Indexer and calls every informer's handlers,
// one after the other, for each change.
type notifying[T runtime.Object] struct {
	store *listwatch.Indexer[T]
	regs  []*registration[T]
}

var (
	_ listwatch.Store                  = (*notifying[runtime.Object])(nil)
	_ listwatch.ResourceVersionUpdater = (*notifying[runtime.Object])(nil)
)

func (n *notifying[T]) Add(obj runtime.Object) error    { return n.put(obj) }
func (n *notifying[T]) Update(obj runtime.Object) error { return n.put(obj) }

func (n *notifying[T]) put(obj runtime.Object) error {
	t, ok := obj.(T)
	if !ok {
		return fmt.Errorf("informer of %T given %T", t, obj)
	}
	key, err := listwatch.NamespaceNameKey(obj)
	if err != nil {
		return err
	}
	dropManagedFields(obj)
	old, existed := n.store.Get(key)
	if err := n.store.Add(obj); err != nil {
		return err
	}
	n.changed(old, existed, t)
	return nil
}

func (n *notifying[T]) changed(old T, existed bool, t T) {
	for _, r := range n.regs {
		if r.stopped.Load() {
			continue
		}
		switch {
		case existed && r.h.OnUpdate != nil:
			r.h.OnUpdate(old, t)
		case !existed && r.h.OnAdd != nil:
			r.h.OnAdd(t)
		}
	}
}

func (n *notifying[T]) deleted(old T) {
	for _, r := range n.regs {
		if r.h.OnDelete != nil && !r.stopped.Load() {
			r.h.OnDelete(old)
		}
	}
}

func (n *notifying[T]) Delete(obj runtime.Object) error {
	key, err := listwatch.NamespaceNameKey(obj)
	if err != nil {
		return err
	}
	old, existed := n.store.Get(key)
	if err := n.store.Delete(obj); err != nil {
		return err
	}
	if existed {
		n.deleted(old)
	}
	return nil
}

// Replace swaps the cache's content and reports the difference: what a
// re-list found new or changed, and what it no longer found.
func (n *notifying[T]) Replace(objs []runtime.Object, resourceVersion string) error {
	before := map[string]T{}
	for _, t := range n.store.List() {
		if key, err := listwatch.NamespaceNameKey(t); err == nil {
			before[key] = t
		}
	}
	for _, obj := range objs {
		dropManagedFields(obj)
	}
	if err := n.store.Replace(objs, resourceVersion); err != nil {
		return err
	}
	for _, obj := range objs {
		t, ok := obj.(T)
		if !ok {
			continue
		}
		key, err := listwatch.NamespaceNameKey(obj)
		if err != nil {
			continue
		}
		old, existed := before[key]
		delete(before, key)
		n.changed(old, existed, t)
	}
	for _, gone := range before {
		n.deleted(gone)
	}
	return nil
}

// dropManagedFields empties obj's managedFields before it is cached, as
// kube-controller-manager's informers do: no controller reads them, and
// they are a third of a pod's decoded size. obj was just decoded for the
// cache, so nothing else holds it.
func dropManagedFields(obj runtime.Object) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
}

func (n *notifying[T]) UpdateResourceVersion(rv string) { n.store.UpdateResourceVersion(rv) }

// Syncer is anything with a Synced channel, e.g. an Informer.
type Syncer interface{ Synced() <-chan struct{} }

// WaitForSync waits until every one has synced; it returns ctx's error if
// ctx ends first.
func WaitForSync(ctx context.Context, ss ...Syncer) error {
	for _, s := range ss {
		select {
		case <-s.Synced():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
