package listwatch

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// IndexFunc returns the values under which an object is indexed, e.g. its
// spec.nodeName. An object may have several values or none.
type IndexFunc[T runtime.Object] func(obj T) ([]string, error)

// IndexerOptions configures an Indexer.
type IndexerOptions[T runtime.Object] struct {
	// KeyFunc names objects; defaults to NamespaceNameKey.
	KeyFunc KeyFunc
	// Indexers are the named indexes kept up to date on every write.
	Indexers map[string]IndexFunc[T]
}

// Indexer is a thread-safe keyed store of objects of type T with named
// secondary indexes. It implements Store and ResourceVersionUpdater, so a
// Reflector can fill it. Objects handed out are shared with the store and
// must not be modified.
//
// A write whose key or index values cannot be computed fails and leaves the
// store unchanged (client-go panics there instead).
type Indexer[T runtime.Object] struct {
	keyFunc KeyFunc
	// names and funcs are the indexes, in the same order as the values
	// indexValues returns and as indices.
	names []string
	funcs []IndexFunc[T]

	// mu guards everything below.
	mu    sync.RWMutex
	items map[string]T
	// indices holds, per index, index value → set of keys.
	indices []map[string]map[string]struct{}
	// resourceVersion is the last list, event or bookmark RV written.
	resourceVersion string
}

var (
	_ Store                  = (*Indexer[runtime.Object])(nil)
	_ ResourceVersionUpdater = (*Indexer[runtime.Object])(nil)
)

// NewIndexer returns an empty Indexer.
func NewIndexer[T runtime.Object](opts IndexerOptions[T]) *Indexer[T] {
	if opts.KeyFunc == nil {
		opts.KeyFunc = NamespaceNameKey
	}
	x := &Indexer[T]{keyFunc: opts.KeyFunc, items: map[string]T{}}
	for name := range opts.Indexers {
		x.names = append(x.names, name)
	}
	sort.Strings(x.names)
	for _, name := range x.names {
		x.funcs = append(x.funcs, opts.Indexers[name])
	}
	x.indices = x.emptyIndices()
	return x
}

func (x *Indexer[T]) emptyIndices() []map[string]map[string]struct{} {
	indices := make([]map[string]map[string]struct{}, len(x.names))
	for i := range indices {
		indices[i] = map[string]map[string]struct{}{}
	}
	return indices
}

// indexNamed is the position of index name, or -1.
func (x *Indexer[T]) indexNamed(name string) int {
	for i, n := range x.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Add inserts or replaces obj.
func (x *Indexer[T]) Add(obj runtime.Object) error { return x.put(obj) }

// Update inserts or replaces obj; it is the same as Add.
func (x *Indexer[T]) Update(obj runtime.Object) error { return x.put(obj) }

func (x *Indexer[T]) put(obj runtime.Object) error {
	t, err := asT[T](obj)
	if err != nil {
		return err
	}
	key, err := x.keyFunc(obj)
	if err != nil {
		return err
	}
	// Small fixed buffers keep the common case (a few indexes) off the heap.
	var newBuf, oldBuf [4][]string
	values, err := x.indexValuesInto(x.slots(newBuf[:]), t)
	if err != nil {
		return fmt.Errorf("index %s: %w", key, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old, existed := x.items[key]
	x.items[key] = t
	x.noteRV(obj)
	if !existed {
		x.index(x.indices, key, values)
		return nil
	}
	// The old values were computed without error when old was put.
	oldValues, _ := x.indexValuesInto(x.slots(oldBuf[:]), old)
	if !sameValues(oldValues, values) {
		// Most updates (a pod's status) keep their index values: skip the
		// index churn then.
		x.unindex(key, oldValues)
		x.index(x.indices, key, values)
	}
	return nil
}

// slots is buf cut to one slot per index, or a new slice if buf is short.
func (x *Indexer[T]) slots(buf [][]string) [][]string {
	if len(x.funcs) <= len(buf) {
		return buf[:len(x.funcs)]
	}
	return make([][]string, len(x.funcs))
}

func sameValues(a, b [][]string) bool {
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// Delete removes the object with obj's key; deleting an absent key is not
// an error.
func (x *Indexer[T]) Delete(obj runtime.Object) error {
	key, err := x.keyFunc(obj)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.items[key]; ok {
		var buf [4][]string
		oldValues, _ := x.indexValuesInto(x.slots(buf[:]), old)
		x.unindex(key, oldValues)
		delete(x.items, key)
	}
	x.noteRV(obj)
	return nil
}

// Replace swaps the whole content for objs at once, as after a list.
func (x *Indexer[T]) Replace(objs []runtime.Object, resourceVersion string) error {
	items := make(map[string]T, len(objs))
	indices := x.emptyIndices()
	// One scratch slot per index serves every object: index copies out
	// the values it keeps.
	scratch := make([][]string, len(x.funcs))
	for _, obj := range objs {
		t, err := asT[T](obj)
		if err != nil {
			return err
		}
		key, err := x.keyFunc(obj)
		if err != nil {
			return err
		}
		values, err := x.indexValuesInto(scratch, t)
		if err != nil {
			return fmt.Errorf("index %s: %w", key, err)
		}
		if _, dup := items[key]; dup {
			// The later one wins, as in a map; drop the earlier one's index entries.
			old, _ := x.indexValues(items[key])
			unindexFrom(indices, key, old)
		}
		items[key] = t
		x.index(indices, key, values)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.items = items
	x.indices = indices
	x.resourceVersion = resourceVersion
	return nil
}

// UpdateResourceVersion records the RV of a bookmark.
func (x *Indexer[T]) UpdateResourceVersion(resourceVersion string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.resourceVersion = resourceVersion
}

// ResourceVersion is the RV of the last list, event or bookmark written.
func (x *Indexer[T]) ResourceVersion() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.resourceVersion
}

// Get returns the object stored under key.
func (x *Indexer[T]) Get(key string) (T, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	t, ok := x.items[key]
	return t, ok
}

// Len is the number of objects stored.
func (x *Indexer[T]) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.items)
}

// List returns every object, in no particular order.
func (x *Indexer[T]) List() []T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]T, 0, len(x.items))
	for _, t := range x.items {
		out = append(out, t)
	}
	return out
}

// SortedList returns every object in key order.
func (x *Indexer[T]) SortedList() []T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	keys := x.sortedKeysLocked()
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = x.items[k]
	}
	return out
}

// Keys returns every key, sorted.
func (x *Indexer[T]) Keys() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.sortedKeysLocked()
}

// sortedKeysLocked returns every key, sorted; x.mu is held.
func (x *Indexer[T]) sortedKeysLocked() []string {
	keys := make([]string, 0, len(x.items))
	for k := range x.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ByIndex returns the objects whose index name has value, in no
// particular order.
func (x *Indexer[T]) ByIndex(name, value string) ([]T, error) {
	i := x.indexNamed(name)
	if i < 0 {
		return nil, fmt.Errorf("index %q does not exist", name)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	set := x.indices[i][value]
	out := make([]T, 0, len(set))
	for k := range set {
		out = append(out, x.items[k])
	}
	return out, nil
}

// IndexValues returns the values present in index name, sorted.
func (x *Indexer[T]) IndexValues(name string) ([]string, error) {
	i := x.indexNamed(name)
	if i < 0 {
		return nil, fmt.Errorf("index %q does not exist", name)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	idx := x.indices[i]
	values := make([]string, 0, len(idx))
	for v := range idx {
		values = append(values, v)
	}
	sort.Strings(values)
	return values, nil
}

// indexValues computes every index's values for t, in the order of names.
func (x *Indexer[T]) indexValues(t T) ([][]string, error) {
	if len(x.funcs) == 0 {
		return nil, nil
	}
	return x.indexValuesInto(make([][]string, len(x.funcs)), t)
}

// indexValuesInto is indexValues into out, which has one slot per index.
func (x *Indexer[T]) indexValuesInto(out [][]string, t T) ([][]string, error) {
	for i, f := range x.funcs {
		vs, err := f(t)
		if err != nil {
			return nil, fmt.Errorf("indexer %q: %w", x.names[i], err)
		}
		out[i] = vs
	}
	return out, nil
}

// index adds key under values to indices. Callers hold mu or own indices.
func (x *Indexer[T]) index(indices []map[string]map[string]struct{}, key string, values [][]string) {
	for i, vs := range values {
		idx := indices[i]
		for _, v := range vs {
			set := idx[v]
			if set == nil {
				set = map[string]struct{}{}
				idx[v] = set
			}
			set[key] = struct{}{}
		}
	}
}

// unindex removes key under values. Callers hold mu.
func (x *Indexer[T]) unindex(key string, values [][]string) {
	unindexFrom(x.indices, key, values)
}

func unindexFrom(indices []map[string]map[string]struct{}, key string, values [][]string) {
	for i, vs := range values {
		idx := indices[i]
		for _, v := range vs {
			set := idx[v]
			delete(set, key)
			if len(set) == 0 {
				// Empty value sets go, so IndexValues lists only live values.
				delete(idx, v)
			}
		}
	}
}

// noteRV records obj's resourceVersion, if it has one. Callers hold mu.
func (x *Indexer[T]) noteRV(obj runtime.Object) {
	if rv := resourceVersionOf(obj); rv != "" {
		x.resourceVersion = rv
	}
}
