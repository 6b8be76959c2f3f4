package watchcache

import (
	"context"
	"fmt"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// Get implements storage.Interface. resourceVersion "" reads etcd (a
// quorum read), as upstream; "0" reads the cache at once; N reads it once
// it has reached N. Before the first list everything goes to etcd.
func (c *Cache) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if opts.ResourceVersion == "" || !c.Ready() {
		return c.store.Get(ctx, key, opts, out)
	}
	rv, err := c.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	key, err = storage.PrepareKey(c.opts.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	if err := c.waitFresh(ctx, rv); err != nil {
		return err
	}
	c.mu.RLock()
	e := c.st.tree.Get(key)
	cur := c.st.rv
	c.mu.RUnlock()
	outVal, err := conversion.EnforcePtr(out)
	if err != nil {
		return err
	}
	if e == nil {
		outVal.Set(reflect.Zero(outVal.Type()))
		if opts.IgnoreNotFound {
			return nil
		}
		return storage.NewKeyNotFoundError(key, int64(cur))
	}
	// A deep copy: callers of Get commonly change what they read.
	outVal.Set(reflect.ValueOf(e.obj.GetObject()).Elem())
	return nil
}

// GetList implements storage.Interface, routing each request as upstream
// does (SI-9): consistent reads ("") are served from memory once the cache
// has caught up with etcd's current revision, else from etcd; "0" at once
// with the limit ignored; NotOlderThan N once the cache has seen N; Exact N
// and continue tokens from a snapshot of the window, else from etcd.
// Listed items share their nested maps and slices with the cache: treat
// them as read-only.
func (c *Cache) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	res, err := c.list(ctx, key, opts)
	if err != nil {
		return err
	}
	if res == nil {
		return c.store.GetList(ctx, key, opts, listObj)
	}
	objs := make([]runtime.Object, len(res.Items))
	for i, o := range res.Items {
		objs[i] = o.shared()
	}
	if err := setItems(listObj, objs); err != nil {
		return err
	}
	return c.versioner.UpdateList(listObj, res.ResourceVersion, res.Continue, res.RemainingItemCount)
}

// CachedList is a list as the cache holds it: the items are the cache's
// CachedObjects, so an encoder that writes them one by one (as a streaming
// list encoder does) reuses each item's cached bytes across lists and
// watches instead of encoding the whole list again.
type CachedList struct {
	Items              []*CachedObject
	ResourceVersion    uint64
	Continue           string
	RemainingItemCount *int64
}

// ListCached is GetList for encoders: the same routing and results, with
// the items as CachedObjects. When etcd answers (see GetList), the items
// are wrapped fresh.
func (c *Cache) ListCached(ctx context.Context, key string, opts storage.ListOptions) (*CachedList, error) {
	res, err := c.list(ctx, key, opts)
	if err != nil || res != nil {
		return res, err
	}
	listObj := c.opts.NewListFunc()
	if err := c.store.GetList(ctx, key, opts, listObj); err != nil {
		return nil, err
	}
	return NewCachedList(listObj)
}

// NewCachedList wraps the items of a typed list, which the caller gives
// up, as CachedObjects.
func NewCachedList(listObj runtime.Object) (*CachedList, error) {
	lm, err := meta.ListAccessor(listObj)
	if err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(listObj)
	if err != nil {
		return nil, err
	}
	rv, err := strconv.ParseUint(lm.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("list resourceVersion %q: %w", lm.GetResourceVersion(), err)
	}
	out := &CachedList{ResourceVersion: rv, Continue: lm.GetContinue(), RemainingItemCount: lm.GetRemainingItemCount()}
	out.Items = make([]*CachedObject, len(objs))
	for i, o := range objs {
		out.Items[i] = NewCachedObject(o)
	}
	return out, nil
}

// list answers a list from memory, or returns nil when etcd must.
func (c *Cache) list(ctx context.Context, key string, opts storage.ListOptions) (*CachedList, error) {
	if _, _, err := storage.ValidateListOptions(c.opts.ResourcePrefix, c.versioner, opts); err != nil {
		return nil, err
	}
	if !c.Ready() {
		return nil, nil
	}
	prepared, err := storage.PrepareKey(c.opts.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	rv, err := c.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	q := listQuery{key: prepared, recursive: opts.Recursive, pred: normalize(opts.Predicate)}
	switch opts.ResourceVersionMatch {
	case metav1.ResourceVersionMatchExact:
		q.limit = opts.Predicate.Limit
		return c.listExact(ctx, q, rv)
	case metav1.ResourceVersionMatchNotOlderThan:
		q.limit = opts.Predicate.Limit
		return c.listLatest(ctx, q, rv)
	case "":
	default:
		return nil, nil
	}
	switch {
	case opts.Predicate.Continue != "":
		from, crv, err := storage.DecodeContinue(opts.Predicate.Continue, prepared)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		q.from = from
		q.limit = opts.Predicate.Limit
		if crv > 0 {
			return c.listExact(ctx, q, uint64(crv))
		}
		return c.listConsistent(ctx, q)
	case opts.Predicate.Limit > 0 && opts.ResourceVersion != "" && opts.ResourceVersion != "0":
		// The legacy form of an exact read.
		q.limit = opts.Predicate.Limit
		return c.listExact(ctx, q, rv)
	case opts.ResourceVersion == "":
		q.limit = opts.Predicate.Limit
		return c.listConsistent(ctx, q)
	default:
		// RV "0" ignores the limit, as upstream (clients rely on getting
		// everything at once from the cache).
		if opts.ResourceVersion != "0" {
			q.limit = opts.Predicate.Limit
		}
		return c.listLatest(ctx, q, rv)
	}
}

// listQuery is what a list selects.
type listQuery struct {
	key       string // prepared: a prefix ending in "/" when recursive
	recursive bool
	from      string // first key to consider (from a continue token)
	pred      storage.SelectionPredicate
	limit     int64
}

// listConsistent serves a consistent read from memory once the cache has
// caught up with etcd's current revision; when it cannot (etcd unreachable
// for the revision, or the cache does not catch up in time) etcd serves it.
func (c *Cache) listConsistent(ctx context.Context, q listQuery) (*CachedList, error) {
	rv, err := c.store.GetCurrentResourceVersion(ctx)
	if err != nil {
		return nil, nil
	}
	if err := c.waitFresh(ctx, rv); err != nil {
		if storage.IsTooLargeResourceVersion(err) {
			return nil, nil
		}
		return nil, err
	}
	return c.listLatest(ctx, q, 0)
}

// listLatest lists the latest snapshot once the cache has reached minRV,
// from an index when the selector pins an indexed field.
func (c *Cache) listLatest(ctx context.Context, q listQuery, minRV uint64) (*CachedList, error) {
	if err := c.waitFresh(ctx, minRV); err != nil {
		return nil, err
	}
	c.mu.RLock()
	t, rv := c.st.tree, c.st.rv
	var indexed []*element
	used := false
	if q.recursive {
		for _, name := range c.indexNames {
			if v, ok := q.pred.Field.RequiresExactMatch(name); ok {
				indexed, used = c.st.byIndex(name, v, q.key, q.from)
				break
			}
		}
	}
	c.mu.RUnlock()
	if used {
		return c.collect(q, rv, func(yield func(*element) bool) {
			for _, e := range indexed {
				if !yield(e) {
					return
				}
			}
		}, -1)
	}
	return c.collectTree(q, t, rv)
}

// listExact lists the snapshot at exactly rv; a rv the window no longer
// covers, or that etcd has compacted, goes to etcd, which answers or says
// Expired.
func (c *Cache) listExact(ctx context.Context, q listQuery, rv uint64) (*CachedList, error) {
	if !q.recursive || int64(rv) < c.store.CompactRevision() {
		return nil, nil
	}
	if err := c.waitFresh(ctx, rv); err != nil {
		return nil, err
	}
	c.mu.RLock()
	t, err := c.st.snapshotAt(rv)
	c.mu.RUnlock()
	if err != nil {
		if apierrors.IsResourceExpired(err) {
			return nil, nil
		}
		return nil, err
	}
	return c.collectTree(q, t, rv)
}

func (c *Cache) collectTree(q listQuery, t tree, rv uint64) (*CachedList, error) {
	if !q.recursive {
		e := t.Get(q.key)
		return c.collect(q, rv, func(yield func(*element) bool) {
			if e != nil {
				yield(e)
			}
		}, -1)
	}
	total := -1
	if q.pred.Empty() {
		// O(log n), and it sizes the result in one allocation.
		total = t.CountPrefix(q.key, q.from)
	}
	return c.collect(q, rv, func(yield func(*element) bool) {
		t.AscendPrefix(q.key, q.from, yield)
	}, total)
}

// collect gathers the matching elements of a walk, with the list's
// resourceVersion and, when the limit cut it short, a continue token.
// total is the number of elements the walk covers, when known (for
// remainingItemCount).
func (c *Cache) collect(q listQuery, rv uint64, walk func(func(*element) bool), total int) (*CachedList, error) {
	res := &CachedList{ResourceVersion: rv}
	if total >= 0 {
		n := int64(total)
		if q.limit > 0 {
			n = min(n, q.limit)
		}
		res.Items = make([]*CachedObject, 0, n)
	}
	var last string
	more := false
	walk(func(e *element) bool {
		if q.limit > 0 && int64(len(res.Items)) == q.limit {
			// Upstream's rule: another item in range, matching or not,
			// means there may be more.
			more = true
			return false
		}
		if matchAttributes(&q.pred, e) {
			res.Items = append(res.Items, &e.obj)
			last = e.key
		}
		return true
	})
	if more {
		token, err := storage.EncodeContinue(last+"\x00", q.key, int64(rv))
		if err != nil {
			return nil, err
		}
		res.Continue = token
		if total >= 0 {
			n := int64(total) - q.limit
			res.RemainingItemCount = &n
		}
	}
	return res, nil
}

// setItems sets a typed list's items to shallow copies of objs.
func setItems(listObj runtime.Object, objs []runtime.Object) error {
	itemsPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	items, err := conversion.EnforcePtr(itemsPtr)
	if err != nil {
		return err
	}
	if items.Kind() != reflect.Slice {
		return fmt.Errorf("list items of %T are %v, not a slice", listObj, items.Kind())
	}
	slice := reflect.MakeSlice(items.Type(), len(objs), len(objs))
	elemType := items.Type().Elem()
	for i, obj := range objs {
		v := reflect.ValueOf(obj)
		switch {
		case elemType.Kind() == reflect.Struct:
			slice.Index(i).Set(v.Elem())
		case v.Type().AssignableTo(elemType):
			slice.Index(i).Set(v)
		default:
			return fmt.Errorf("cannot put %T into items of %T", obj, listObj)
		}
	}
	items.Set(slice)
	return nil
}

// normalize fills a predicate's missing selectors with "everything".
func normalize(p storage.SelectionPredicate) storage.SelectionPredicate {
	if p.Label == nil {
		p.Label = labels.Everything()
	}
	if p.Field == nil {
		p.Field = fields.Everything()
	}
	return p
}
