package watchcache

import (
	"fmt"
	goruntime "runtime"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/listwatch"
)

// sink is how the Reflector writes into the cache (listwatch.Store and
// ResourceVersionUpdater); it is separate from Cache because
// storage.Interface has its own Delete.
type sink struct{ c *Cache }

var (
	_ listwatch.Store                  = sink{}
	_ listwatch.ResourceVersionUpdater = sink{}
)

func (s sink) Add(obj runtime.Object) error    { return s.c.upsert(obj) }
func (s sink) Update(obj runtime.Object) error { return s.c.upsert(obj) }
func (s sink) Delete(obj runtime.Object) error { return s.c.remove(obj) }
func (s sink) Replace(objs []runtime.Object, rv string) error {
	return s.c.replace(objs, rv)
}
func (s sink) UpdateResourceVersion(rv string) { s.c.progress(rv) }

// newElement computes once what filtering an object needs, after sharing
// the parts it has in common with the objects already cached.
func (c *Cache) newElement(obj runtime.Object) (*element, error) {
	m, err := c.intern(obj)
	if err != nil {
		return nil, err
	}
	p, err := c.prepare(m)
	if err != nil {
		return nil, err
	}
	return c.element(p), nil
}

// intern shares the parts obj has in common with the objects already
// cached, after making an unstructured object compact (jsonObject). Only
// the ingest goroutine calls it: it owns the table.
func (c *Cache) intern(obj runtime.Object) (metaObject, error) {
	var m metaObject
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		m = compactUnstructured(o)
		obj = m
	case metaObject:
		m = o
	default:
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	c.interns.Meta(m)
	if c.opts.Intern != nil {
		c.opts.Intern(c.interns, obj)
	}
	return m, nil
}

// prepared is what an element needs that depends on its object alone.
type prepared struct {
	m      metaObject
	key    string
	rv     uint64
	labels labels.Set
	fields fields.Set
}

// prepare computes an interned object's key, resourceVersion and
// attributes. It touches no state of the cache, so a first list's
// objects are prepared on several goroutines (KeyFunc and AttrFunc are
// pure functions, as upstream's cacher also assumes).
func (c *Cache) prepare(m metaObject) (prepared, error) {
	key, err := c.opts.KeyFunc(m)
	if err != nil {
		return prepared{}, fmt.Errorf("key of %T: %w", m, err)
	}
	shareName(m, key)
	rv, err := c.versioner.ObjectResourceVersion(m)
	if err != nil {
		return prepared{}, fmt.Errorf("resourceVersion of %s: %w", key, err)
	}
	l, f, err := c.opts.AttrFunc(m)
	if err != nil {
		return prepared{}, fmt.Errorf("attributes of %s: %w", key, err)
	}
	return prepared{m: m, key: key, rv: rv, labels: l, fields: f}, nil
}

// element builds the element of a prepared object. Only the ingest
// goroutine calls it: it owns the field layouts.
func (c *Cache) element(p prepared) *element {
	fs := c.layouts.compact(p.fields, p.m, func(i int) string { return c.indexFuncs[i](p.m) })
	return &element{key: p.key, rv: p.rv, labels: p.labels, fields: fs, obj: CachedObject{orig: p.m}}
}

// prepareAll prepares ms, on up to GOMAXPROCS goroutines for a large list
// (a first list of 100k pods spends ~0.2 s in attribute functions), and
// returns the first error in list order.
func (c *Cache) prepareAll(ms []metaObject) ([]prepared, error) {
	out := make([]prepared, len(ms))
	errs := make([]error, len(ms))
	workers := min(goruntime.GOMAXPROCS(0), len(ms)/parallelPrepareMin+1, 8)
	chunk := (len(ms) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(ms); lo += chunk {
		hi := min(lo+chunk, len(ms))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i], errs[i] = c.prepare(ms[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parallelPrepareMin is how many objects each extra goroutine of
// prepareAll is for: below it, starting one costs more than it saves.
const parallelPrepareMin = 1024

// shareName makes m's name the end of its key, which ends in "/" and the
// name for every resource (storage.NamespaceKeyFunc, NoNamespaceKeyFunc):
// the cache then holds one copy of it instead of two. m is the cache's
// own, not yet shared.
func shareName(m metav1.Object, key string) {
	name := m.GetName()
	if n := len(key) - len(name); n > 0 && key[n-1] == '/' && key[n:] == name {
		m.SetName(key[n:])
	}
}

func (c *Cache) upsert(obj runtime.Object) error {
	e, err := c.newElement(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if e.rv <= c.st.rv {
		// Already applied (an etcd watch resumed from an older revision).
		c.mu.Unlock()
		return nil
	}
	ev := &event{typ: watch.Added, key: e.key, rv: e.rv, cur: e, received: time.Now()}
	if prev := c.st.tree.Get(e.key); prev != nil {
		ev.typ, ev.prev = watch.Modified, prev
	}
	c.applyAndUnlock(ev, obj)
	return nil
}

func (c *Cache) remove(obj runtime.Object) error {
	key, err := c.opts.KeyFunc(obj)
	if err != nil {
		return fmt.Errorf("key of deleted %T: %w", obj, err)
	}
	rv, err := c.versioner.ObjectResourceVersion(obj)
	if err != nil {
		return fmt.Errorf("resourceVersion of deleted %s: %w", key, err)
	}
	c.mu.Lock()
	if rv <= c.st.rv {
		c.mu.Unlock()
		return nil
	}
	prev := c.st.tree.Get(key)
	if prev == nil {
		// Nothing to delete; the revision still moves the cache on.
		c.st.rv = rv
		c.notifyLocked()
		c.pending.push(pendingItem{rv: rv})
		c.mu.Unlock()
		return nil
	}
	ev := &event{typ: watch.Deleted, key: key, rv: rv, prev: prev, goneFrom: obj, received: time.Now()}
	c.applyAndUnlock(ev, obj)
	return nil
}

func (c *Cache) progress(rvs string) {
	rv, err := c.versioner.ParseResourceVersion(rvs)
	if err != nil || rv == 0 {
		return
	}
	c.progressAnswered.Store(true)
	c.mu.Lock()
	if rv <= c.st.rv || !c.ready {
		c.mu.Unlock()
		return
	}
	c.st.rv = rv
	c.notifyLocked()
	c.pending.push(pendingItem{rv: rv})
	c.mu.Unlock()
}

// replace loads a (re-)list. On a re-list the watchers whose selection
// changed in ways the cache never saw as events are ended with 410, so
// their clients re-list; the others go on without a gap.
func (c *Cache) replace(objs []runtime.Object, rvs string) error {
	rv, err := c.versioner.ParseResourceVersion(rvs)
	if err != nil {
		return fmt.Errorf("list resourceVersion %q: %w", rvs, err)
	}
	ms := make([]metaObject, len(objs))
	for i, obj := range objs {
		if ms[i], err = c.intern(obj); err != nil {
			return err
		}
	}
	preps, err := c.prepareAll(ms)
	if err != nil {
		return err
	}
	elems := make([]*element, len(preps))
	for i, p := range preps {
		elems[i] = c.element(p)
	}
	sort.SliceStable(elems, func(i, j int) bool { return elems[i].key < elems[j].key })
	// Keep the last of duplicate keys.
	out := elems[:0]
	for i, e := range elems {
		if i+1 < len(elems) && elems[i+1].key == e.key {
			continue
		}
		out = append(out, e)
	}
	elems = out

	now := time.Now()
	c.mu.Lock()
	var diffs []*event
	if c.ready {
		diffs = diff(c.st.tree, elems, rv, now)
	}
	c.st.replace(elems, rv)
	wasReady := c.ready
	c.ready = true
	c.notifyLocked()
	if len(diffs) > 0 {
		c.pending.push(pendingItem{relist: diffs, rv: rv})
	} else {
		c.pending.push(pendingItem{rv: rv})
	}
	c.mu.Unlock()
	if !wasReady {
		close(c.readyCh)
	}
	return nil
}

// diff returns the changes between a snapshot and a sorted list as
// events at rv.
func diff(old tree, sorted []*element, rv uint64, now time.Time) []*event {
	var out []*event
	i := 0
	old.Ascend("", func(o *element) bool {
		for i < len(sorted) && sorted[i].key < o.key {
			out = append(out, &event{typ: watch.Added, key: sorted[i].key, rv: rv, cur: sorted[i], received: now})
			i++
		}
		if i < len(sorted) && sorted[i].key == o.key {
			if sorted[i].rv != o.rv {
				out = append(out, &event{typ: watch.Modified, key: o.key, rv: rv, cur: sorted[i], prev: o, received: now})
			}
			i++
			return true
		}
		out = append(out, &event{typ: watch.Deleted, key: o.key, rv: rv, prev: o, received: now})
		return true
	})
	for ; i < len(sorted); i++ {
		out = append(out, &event{typ: watch.Added, key: sorted[i].key, rv: rv, cur: sorted[i], received: now})
	}
	return out
}

// applyAndUnlock applies ev, hands it to the dispatcher and releases c.mu,
// which the caller holds; obj is the object the change came with.
func (c *Cache) applyAndUnlock(ev *event, obj runtime.Object) {
	c.st.apply(ev)
	c.notifyLocked()
	// Handing over under the lock keeps the dispatcher's order the order
	// of application.
	c.pending.push(pendingItem{ev: ev})
	c.mu.Unlock()
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(obj)
	}
}
