// Package informer keeps a controller's cache of one resource and tells it
// what changed: a listwatch Reflector over a client fills a listwatch
// Indexer, and each write calls the controller's handlers with the old and
// new object, from the Reflector's goroutine. Handlers should do little
// (queue a key); the cache is what workers read.
//
// It is the part of client-go's SharedInformer that Kite's controllers
// use, without tools/cache: one Reflector, one Indexer, synchronous
// handlers, no resync.
package informer

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/listwatch"
)

// Handlers are called after each change of the cache, in event order,
// from the Informer's goroutine. Any may be nil. Objects are shared with
// the cache and must not be modified.
type Handlers[T runtime.Object] struct {
	OnAdd    func(obj T)
	OnUpdate func(old, obj T)
	OnDelete func(obj T)
}

// Options configure an Informer.
type Options[T runtime.Object] struct {
	// Name appears in logs, e.g. "pods".
	Name string
	// ListerWatcher is listed and watched, e.g.
	// listwatch.FromTypedClient(clientset.CoreV1().Pods(""), nil). Required.
	ListerWatcher listwatch.ListerWatcher
	// Indexers are the cache's secondary indexes.
	Indexers map[string]listwatch.IndexFunc[T]
	// Handlers hear about every change.
	Handlers Handlers[T]
}

// Informer is a cache of one resource kept in step with the API.
type Informer[T runtime.Object] struct {
	reflector *listwatch.Reflector
	store     *listwatch.Indexer[T]
}

// New returns an Informer; it does nothing until Run.
func New[T runtime.Object](opts Options[T]) (*Informer[T], error) {
	store := listwatch.NewIndexer(listwatch.IndexerOptions[T]{Indexers: opts.Indexers})
	var zero T
	r, err := listwatch.NewReflector(listwatch.Options{
		Name:          opts.Name,
		ListerWatcher: opts.ListerWatcher,
		Store:         &notifying[T]{store: store, h: opts.Handlers},
		ExpectedType:  zero,
		// An in-process or local API server that restarts should find
		// its controllers back within a second.
		RefusedMaxWait: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("informer %s: %w", opts.Name, err)
	}
	return &Informer[T]{reflector: r, store: store}, nil
}

// Run lists and watches until ctx ends.
func (i *Informer[T]) Run(ctx context.Context) { i.reflector.Run(ctx) }

// HasSynced reports whether the first list is in the cache.
func (i *Informer[T]) HasSynced() bool { return i.reflector.HasSynced() }

// LastSyncResourceVersion is the resourceVersion the cache is known to
// reflect: of the last list, event or bookmark written to it ("" before the
// first list). A controller compares it with the resourceVersions of its
// own writes to know whether the cache shows them yet.
func (i *Informer[T]) LastSyncResourceVersion() string { return i.reflector.LastSyncResourceVersion() }

// Synced is closed once the first list is in the cache.
func (i *Informer[T]) Synced() <-chan struct{} { return i.reflector.Synced() }

// Store is the cache. Its objects must not be modified.
func (i *Informer[T]) Store() *listwatch.Indexer[T] { return i.store }

// notifying writes into an Indexer and calls the handlers.
type notifying[T runtime.Object] struct {
	store *listwatch.Indexer[T]
	h     Handlers[T]
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
	old, existed := n.store.Get(key)
	if err := n.store.Add(obj); err != nil {
		return err
	}
	n.changed(old, existed, t)
	return nil
}

func (n *notifying[T]) changed(old T, existed bool, t T) {
	switch {
	case existed && n.h.OnUpdate != nil:
		n.h.OnUpdate(old, t)
	case !existed && n.h.OnAdd != nil:
		n.h.OnAdd(t)
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
	if existed && n.h.OnDelete != nil {
		n.h.OnDelete(old)
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
	if n.h.OnDelete != nil {
		for _, gone := range before {
			n.h.OnDelete(gone)
		}
	}
	return nil
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
