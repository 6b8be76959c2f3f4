package watchcache

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	m, ok := obj.(metaObject)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	c.interns.Meta(m)
	if c.opts.Intern != nil {
		c.opts.Intern(c.interns, obj)
	}
	key, err := c.opts.KeyFunc(obj)
	if err != nil {
		return nil, fmt.Errorf("key of %T: %w", obj, err)
	}
	shareName(m, key)
	rv, err := c.versioner.ObjectResourceVersion(obj)
	if err != nil {
		return nil, fmt.Errorf("resourceVersion of %s: %w", key, err)
	}
	l, f, err := c.opts.AttrFunc(obj)
	if err != nil {
		return nil, fmt.Errorf("attributes of %s: %w", key, err)
	}
	fs := c.layouts.compact(f, m, func(i int) string { return c.indexFuncs[i](obj) })
	return &element{key: key, rv: rv, labels: l, fields: fs, obj: CachedObject{orig: m}}, nil
}

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
	elems := make([]*element, 0, len(objs))
	for _, obj := range objs {
		e, err := c.newElement(obj)
		if err != nil {
			return err
		}
		elems = append(elems, e)
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
