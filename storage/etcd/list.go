package etcd

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/mvccpb"
	etcdrpc "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// maxPageSize caps how far GetList grows its etcd page size while a
// selector keeps filtering items out (upstream's maxLimit).
const maxPageSize = 10000

// GetList implements storage.Interface. Pages of a paged list are read at
// one revision (the first page's, or the one requested); when a selector
// filters items out, the etcd page size doubles (up to maxPageSize) until
// the limit is filled or the range ends.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	keyPrefix, err := s.prepareKey(key, opts.Recursive)
	if err != nil {
		return err
	}
	itemsPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	items, err := conversion.EnforcePtr(itemsPtr)
	if err != nil || items.Kind() != reflect.Slice {
		return fmt.Errorf("need ptr to slice: %v", err)
	}
	withRev, continueKey, err := storage.ValidateListOptions(keyPrefix, s.versioner, opts)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	paging := pred.Limit > 0
	limit := pred.Limit
	app := newAppender(s, listObj, items, pred)
	defer app.finish()
	errs := listErrors{aggregate: s.unsafeCorrupt}

	var (
		lastKey []byte
		hasMore bool
		count   int64
	)
	sizes := s.sizeEstimator()
	for {
		resp, err := s.readRange(ctx, keyPrefix, opts.Recursive, kubernetes.ListOptions{Revision: withRev, Limit: limit, Continue: continueKey})
		if err != nil {
			return s.listReadError(ctx, err, withRev, len(pred.Continue) > 0, continueKey, keyPrefix)
		}
		if sizes != nil && len(resp.Kvs) > 0 {
			sizes.Update(resp.Kvs)
		}
		if withRev == 0 {
			if err := s.validateMinimumResourceVersion(opts.ResourceVersion, uint64(resp.Revision)); err != nil {
				return err
			}
			// Every further page is read at the first page's revision.
			withRev = resp.Revision
		}
		more := int64(len(resp.Kvs)) < resp.Count
		if len(resp.Kvs) == 0 && more {
			return fmt.Errorf("list %q: no results were found, but etcd indicated there were more values remaining", keyPrefix)
		}
		count = resp.Count
		if len(resp.Kvs) > 0 {
			continueKey = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}

		app.grow(len(resp.Kvs))
		limitReached := false
		if n := len(resp.Kvs); !paging && n > 0 {
			last := resp.Kvs[n-1].Key
			if app.addParallel(ctx, resp.Kvs) {
				lastKey, resp.Kvs = last, nil
			}
		}
		for i, kv := range resp.Kvs {
			if paging && int64(app.count()) >= pred.Limit {
				limitReached = true
				break
			}
			lastKey = kv.Key
			if ctx.Err() != nil {
				return storage.NewTimeoutError(string(kv.Key), "request did not complete within requested timeout")
			}
			if err := app.add(ctx, kv); err != nil && errs.add(string(kv.Key), err) {
				return errs.err(s.groupResource)
			}
			// Let the value go early: decoding a long list takes a while.
			resp.Kvs[i] = nil
		}
		hasMore = more || limitReached
		if limitReached || !more || (paging && int64(app.count()) >= pred.Limit) {
			break
		}
		if limit < maxPageSize {
			limit = min(limit*2, maxPageSize)
		}
	}
	if err := errs.err(s.groupResource); err != nil {
		return err
	}
	continueValue, remaining, err := storage.PrepareContinueToken(string(lastKey), keyPrefix, withRev, count, hasMore, opts)
	if err != nil {
		return err
	}
	if items.IsNil() {
		// Items is never nil in a result, for consistency.
		items.Set(reflect.MakeSlice(items.Type(), 0, 0))
	}
	return s.versioner.UpdateList(listObj, uint64(withRev), continueValue, remaining)
}

// readRange reads one page of a recursive list, or the single key of a
// non-recursive one.
func (s *Store) readRange(ctx context.Context, key string, recursive bool, o kubernetes.ListOptions) (kubernetes.ListResponse, error) {
	if recursive {
		return s.client.Kubernetes.List(ctx, key, o)
	}
	resp, err := s.client.Kubernetes.Get(ctx, key, kubernetes.GetOptions{Revision: o.Revision})
	if err != nil {
		return kubernetes.ListResponse{}, err
	}
	out := kubernetes.ListResponse{Revision: resp.Revision}
	if resp.KV != nil {
		out.Kvs, out.Count = []*mvccpb.KeyValue{resp.KV}, 1
	}
	return out, nil
}

// listReadError maps an etcd error of a list read to what GetList returns:
// a future revision is TooLargeResourceVersion, a compacted one Expired.
func (s *Store) listReadError(ctx context.Context, err error, withRev int64, continuing bool, continueKey, keyPrefix string) error {
	if errors.Is(err, etcdrpc.ErrFutureRev) {
		current, curErr := s.GetCurrentResourceVersion(ctx)
		if curErr != nil {
			current = 0
		}
		return storage.NewTooLargeResourceVersionError(uint64(withRev), current, 0)
	}
	return interpretListError(err, continuing, continueKey, keyPrefix)
}

// appender decodes list items and appends those matching the predicate.
// For typed lists it decodes straight into the next slice element, which
// saves an allocation and a copy per item over decoding into a new object.
// For an ObjectList it decodes each item into a new object of the store's
// kind and keeps it as it is.
type appender struct {
	s       *Store
	items   reflect.Value // the list's Items slice
	pred    storage.SelectionPredicate
	filter  bool
	inPlace bool
	objects bool // items are runtime.Objects (ObjectList)
	newItem func() runtime.Object
	n       int // items appended
}

func newAppender(s *Store, listObj runtime.Object, items reflect.Value, pred storage.SelectionPredicate) *appender {
	a := &appender{s: s, items: items, pred: pred, filter: !pred.Empty(), n: items.Len()}
	if ul, ok := listObj.(*unstructured.UnstructuredList); ok {
		// Unstructured items keep the list's apiVersion.
		apiVersion := ul.GetAPIVersion()
		a.newItem = func() runtime.Object {
			if apiVersion == "" {
				return &unstructured.Unstructured{}
			}
			return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion}}
		}
		return a
	}
	elem := items.Type().Elem()
	if elem == runtimeObjectType {
		a.objects = true
		a.newItem = s.newFunc
		return a
	}
	if reflect.PointerTo(elem).Implements(runtimeObjectType) {
		a.inPlace = true
		return a
	}
	a.newItem = func() runtime.Object { return reflect.New(elem).Interface().(runtime.Object) }
	return a
}

var runtimeObjectType = reflect.TypeFor[runtime.Object]()

func (a *appender) count() int { return a.n }

// add transforms and decodes one value and appends it if it matches.
func (a *appender) add(ctx context.Context, kv *mvccpb.KeyValue) error {
	data, err := a.s.fromStorageKV(ctx, kv.Key, kv.Value)
	if err != nil {
		return err
	}
	if !a.inPlace {
		obj, err := a.s.decodeNew(kv.Key, data, a.newItem, kv.ModRevision)
		if err != nil {
			return err
		}
		if a.matches(obj) {
			v := reflect.ValueOf(obj)
			if !a.objects {
				v = v.Elem()
			}
			a.items.Set(reflect.Append(a.items, v))
			a.n++
		}
		return nil
	}
	a.reserve()
	slot := a.items.Index(a.n)
	into := slot.Addr().Interface().(runtime.Object)
	obj, _, err := a.s.codec.Decode(data, nil, into)
	if err != nil {
		slot.SetZero()
		return storage.NewCorruptObjError(string(kv.Key), fmt.Errorf("decode value at revision %d: %w", kv.ModRevision, err))
	}
	if obj != into {
		// The codec returned another object (e.g. after conversion).
		ov := reflect.ValueOf(obj)
		if ov.Type() != slot.Addr().Type() {
			slot.SetZero()
			return storage.NewCorruptObjError(string(kv.Key), fmt.Errorf("decoded a %T, the list holds %s", obj, slot.Type()))
		}
		slot.Set(ov.Elem())
	}
	setRV(a.s.versioner, into, uint64(kv.ModRevision))
	if a.matches(into) {
		a.n++
	} else {
		slot.SetZero()
	}
	return nil
}

func (a *appender) matches(obj runtime.Object) bool {
	if !a.filter {
		return true
	}
	ok, err := a.pred.Matches(obj)
	return err == nil && ok
}

// parallelDecodeMin is the smallest page whose items are decoded by
// several goroutines: decoding dominates large lists (a cache's first
// list of 100k pods spends ~1 s in it on one core).
const parallelDecodeMin = 1024

// addParallel decodes and appends every one of kvs using up to GOMAXPROCS
// goroutines, each filling its own run of slots, and reports whether it
// did. It does only what needs no order: typed lists and ObjectLists
// without a filter. If
// any item fails, it appends nothing and returns false, so that the caller
// decodes the page one by one and reports the failure as it always does.
// kvs' entries are set to nil as they are decoded, to let their values go
// early; on false they are left as they were.
func (a *appender) addParallel(ctx context.Context, kvs []*mvccpb.KeyValue) bool {
	workers := min(goruntime.GOMAXPROCS(0), len(kvs)/parallelDecodeMin*2, 8)
	if !(a.inPlace || a.objects) || a.filter || workers < 2 || ctx.Err() != nil {
		return false
	}
	start := a.n
	a.items.SetLen(start + len(kvs)) // grow made room for the page
	var failed atomic.Bool
	var wg sync.WaitGroup
	chunk := (len(kvs) + workers - 1) / workers
	for lo := 0; lo < len(kvs); lo += chunk {
		hi := min(lo+chunk, len(kvs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi && !failed.Load(); i++ {
				if !a.decodeInto(ctx, kvs[i], a.items.Index(start+i)) {
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		for i := range kvs {
			a.items.Index(start + i).SetZero()
		}
		a.items.SetLen(start)
		return false
	}
	a.n += len(kvs)
	clear(kvs)
	return true
}

// decodeInto decodes kv into slot, reporting whether it could.
func (a *appender) decodeInto(ctx context.Context, kv *mvccpb.KeyValue, slot reflect.Value) bool {
	data, err := a.s.fromStorageKV(ctx, kv.Key, kv.Value)
	if err != nil {
		return false
	}
	if a.objects {
		obj, err := a.s.decodeNew(kv.Key, data, a.newItem, kv.ModRevision)
		if err != nil {
			return false
		}
		slot.Set(reflect.ValueOf(obj))
		return true
	}
	into := slot.Addr().Interface().(runtime.Object)
	obj, _, err := a.s.codec.Decode(data, nil, into)
	if err != nil || obj != into {
		return false
	}
	setRV(a.s.versioner, into, uint64(kv.ModRevision))
	return true
}

// reserve makes room for one more element past a.n, growing capacity
// geometrically, with an initial guess capped like upstream's growSlice.
func (a *appender) reserve() {
	if a.n < a.items.Len() {
		return
	}
	if a.n < a.items.Cap() {
		a.items.SetLen(a.n + 1)
		return
	}
	newCap := max(2*a.items.Cap(), 16)
	grown := reflect.MakeSlice(a.items.Type(), a.n+1, newCap)
	reflect.Copy(grown, a.items)
	a.items.Set(grown)
}

// grow makes room for k more items up front: all of them when nothing is
// filtered, else a guess capped at 2048 (as upstream's growSlice).
func (a *appender) grow(k int) {
	want := a.n + k
	if a.filter {
		want = min(want, max(a.items.Cap(), 2048))
	}
	if want <= a.items.Cap() {
		return
	}
	grown := reflect.MakeSlice(a.items.Type(), a.items.Len(), want)
	reflect.Copy(grown, a.items)
	a.items.Set(grown)
}

// finish trims the slice to the appended items.
func (a *appender) finish() {
	if a.inPlace && a.items.Len() > a.n {
		a.items.SetLen(a.n)
	}
}
