package listwatch

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// UndeltaOptions configures an UndeltaStore.
type UndeltaOptions[T runtime.Object] struct {
	// Push receives the whole content after every successful write. It is
	// called with the store's write lock held, so snapshots arrive in the
	// order of the writes; it must not write to the store. The slice is the
	// receiver's to keep; the objects in it are shared and must not be
	// modified.
	Push func(snapshot []T)
	// KeyFunc names objects; defaults to NamespaceNameKey.
	KeyFunc KeyFunc
	// Indexers are optional named indexes, as for an Indexer.
	Indexers map[string]IndexFunc[T]
}

// UndeltaStore turns the incremental writes of a Reflector into whole
// snapshots: after every successful Add, Update, Delete or Replace it pushes
// every object it holds, sorted by key. A Replace always pushes, even an
// empty one, so the receiver learns that the first list is done. A failed
// write pushes nothing; a bookmark pushes nothing (the set did not change).
//
// Unlike client-go's, writes and their pushes are serialised, so two
// concurrent writers can neither reorder snapshots nor push a stale one.
type UndeltaStore[T runtime.Object] struct {
	push func([]T)

	// mu serialises each write with its push.
	mu    sync.Mutex
	items *Indexer[T]
}

var (
	_ Store                  = (*UndeltaStore[runtime.Object])(nil)
	_ ResourceVersionUpdater = (*UndeltaStore[runtime.Object])(nil)
)

// NewUndeltaStore returns an empty UndeltaStore that pushes to opts.Push.
func NewUndeltaStore[T runtime.Object](opts UndeltaOptions[T]) *UndeltaStore[T] {
	push := opts.Push
	if push == nil {
		push = func([]T) {}
	}
	return &UndeltaStore[T]{
		push:  push,
		items: NewIndexer(IndexerOptions[T]{KeyFunc: opts.KeyFunc, Indexers: opts.Indexers}),
	}
}

// Add inserts or replaces obj, then pushes.
func (u *UndeltaStore[T]) Add(obj runtime.Object) error {
	return u.write(func() error { return u.items.Add(obj) })
}

// Update inserts or replaces obj, then pushes.
func (u *UndeltaStore[T]) Update(obj runtime.Object) error {
	return u.write(func() error { return u.items.Update(obj) })
}

// Delete removes obj's key, then pushes.
func (u *UndeltaStore[T]) Delete(obj runtime.Object) error {
	return u.write(func() error { return u.items.Delete(obj) })
}

// Replace swaps the content for objs, then pushes.
func (u *UndeltaStore[T]) Replace(objs []runtime.Object, resourceVersion string) error {
	return u.write(func() error { return u.items.Replace(objs, resourceVersion) })
}

// UpdateResourceVersion records a bookmark's RV; it does not push.
func (u *UndeltaStore[T]) UpdateResourceVersion(resourceVersion string) {
	u.items.UpdateResourceVersion(resourceVersion)
}

// Indexer gives read access to the objects between pushes.
func (u *UndeltaStore[T]) Indexer() *Indexer[T] { return u.items }

func (u *UndeltaStore[T]) write(f func() error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := f(); err != nil {
		return err
	}
	u.push(u.items.SortedList())
	return nil
}
