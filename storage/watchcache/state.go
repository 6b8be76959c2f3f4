package watchcache

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// element is one object of the snapshot with what filtering needs,
// computed once when the object arrives: its labels, its selectable fields
// and its values for each of the resource's indexers.
type element struct {
	key    string
	rv     uint64
	labels labels.Set
	fields fieldSet // also the values for each of state.indexNames
	// obj is part of the element, not a pointer to it: one allocation
	// instead of two. Callers hand out &e.obj, which keeps the element
	// alive as long as they hold it (the element is ~50 bytes more).
	obj CachedObject
}

// event is one change of the resource, shared read-only by the window, the
// dispatcher and every watcher it reaches.
type event struct {
	typ      watch.EventType // Added, Modified or Deleted
	key      string
	rv       uint64
	cur      *element // nil for Deleted
	prev     *element // nil for Added
	received time.Time

	// gone is what a watcher that loses the object receives as DELETED:
	// the previous state with the event's resourceVersion. It is built at
	// most once, on first need, and shared.
	goneOnce sync.Once
	gone     *CachedObject
	goneFrom runtime.Object // for Deleted: the object as etcd reported it
}

// goneObject returns the object of a DELETED notification for this event.
func (ev *event) goneObject(v storage.Versioner) *CachedObject {
	ev.goneOnce.Do(func() {
		obj := ev.goneFrom
		if obj == nil {
			obj = ev.prev.obj.get().DeepCopyObject()
			_ = v.UpdateObject(obj, ev.rv) // the object came from the versioner's own writes
		}
		ev.gone = NewCachedObject(obj)
	})
	return ev.gone
}

// state is the pure core of the cache: the snapshot of every object (a
// persistent tree), secondary indexes over it, the event window and the
// resourceVersion everything is current to. It has no goroutines, no
// locks and no clock; the Cache drives it under its lock.
type state struct {
	tree tree
	rv   uint64
	hist history

	indexNames []string
	// indexes maps index name -> value -> key -> element, for the latest
	// snapshot only.
	indexes map[string]map[string]map[string]*element

	// exact remembers a few snapshots rebuilt for past resourceVersions,
	// so that the pages of one paginated list share one rebuild. exactMu
	// guards it because readers rebuild under the cache's read lock.
	exactMu sync.Mutex
	exact   []exactSnapshot
}

type exactSnapshot struct {
	rv   uint64
	tree tree
}

const exactSnapshotsKept = 4

func newState(indexNames []string, h history) *state {
	s := &state{indexNames: indexNames, hist: h, indexes: map[string]map[string]map[string]*element{}}
	for _, name := range indexNames {
		s.indexes[name] = map[string]map[string]*element{}
	}
	return s
}

// replace installs a complete list at rv, emptying the window.
func (s *state) replace(sorted []*element, rv uint64) {
	s.tree = buildTree(sorted)
	s.rv = rv
	s.hist.reset(rv)
	s.exactMu.Lock()
	s.exact = nil
	s.exactMu.Unlock()
	for _, name := range s.indexNames {
		s.indexes[name] = map[string]map[string]*element{}
	}
	for _, e := range sorted {
		s.indexAdd(e)
	}
}

// apply records one change. The event's prev must be the element the
// snapshot holds (the caller fills it from get).
func (s *state) apply(ev *event) {
	if ev.prev != nil {
		s.indexRemove(ev.prev)
	}
	if ev.cur != nil {
		s.tree = s.tree.Put(ev.cur)
		s.indexAdd(ev.cur)
	} else {
		s.tree = s.tree.Delete(ev.key)
	}
	s.hist.add(ev, ev.received)
	s.rv = ev.rv
}

func (s *state) indexAdd(e *element) {
	for i, name := range s.indexNames {
		byValue := s.indexes[name]
		keys := byValue[e.index(i)]
		if keys == nil {
			keys = map[string]*element{}
			byValue[e.index(i)] = keys
		}
		keys[e.key] = e
	}
}

func (s *state) indexRemove(e *element) {
	for i, name := range s.indexNames {
		byValue := s.indexes[name]
		keys := byValue[e.index(i)]
		delete(keys, e.key)
		if len(keys) == 0 {
			delete(byValue, e.index(i))
		}
	}
}

// byIndex returns the elements of the latest snapshot whose index value
// matches, with a key under prefix and >= from, sorted by key.
func (s *state) byIndex(name, value, prefix, from string) ([]*element, bool) {
	byValue, ok := s.indexes[name]
	if !ok {
		return nil, false
	}
	keys := byValue[value]
	out := make([]*element, 0, len(keys))
	for k, e := range keys {
		if strings.HasPrefix(k, prefix) && k >= from {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, true
}

// errNotYet says a snapshot was asked for a resourceVersion the state has
// not reached.
var errNotYet = errors.New("watchcache: resource version not reached yet")

// snapshotAt returns the snapshot exactly as it was at rv: the latest one
// if rv is current, else the latest one with the newer events of the
// window undone. A rv older than the window is Expired (the caller falls
// back to etcd, as upstream does); a future one is errNotYet.
func (s *state) snapshotAt(rv uint64) (tree, error) {
	if rv > s.rv {
		return tree{}, errNotYet
	}
	if rv == s.rv {
		return s.tree, nil
	}
	s.exactMu.Lock()
	defer s.exactMu.Unlock()
	for _, x := range s.exact {
		if x.rv == rv {
			return x.tree, nil
		}
	}
	newer, ok := s.hist.since(rv)
	if !ok {
		return tree{}, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, s.hist.complete))
	}
	t := s.tree
	for i := len(newer) - 1; i >= 0; i-- {
		ev := newer[i]
		if ev.prev != nil {
			t = t.Put(ev.prev)
		} else {
			t = t.Delete(ev.key)
		}
	}
	if len(s.exact) == exactSnapshotsKept {
		copy(s.exact, s.exact[1:])
		s.exact = s.exact[:exactSnapshotsKept-1]
	}
	s.exact = append(s.exact, exactSnapshot{rv: rv, tree: t})
	return t, nil
}
