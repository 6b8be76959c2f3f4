package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// Conversion lets a resource keep its objects in another resource's
// storage, as upstream keeps events.k8s.io/v1 events with core/v1 events:
// objects are converted on their way in and out.
type Conversion struct {
	// ToStored converts an object of the resource into the stored kind;
	// FromStored converts back. Both return new objects.
	ToStored   func(obj runtime.Object) (runtime.Object, error)
	FromStored func(stored runtime.Object) (runtime.Object, error)
	// NewStored and NewStoredList return empty stored objects.
	NewStored     func() runtime.Object
	NewStoredList func() runtime.Object
	// Batch, when set, is used instead of ToStored and FromStored: it
	// converts with the request's context, and a list or a burst of
	// watch events in one call (a CRD's conversion webhook takes many
	// objects per ConversionReview). Its errors reach the client as
	// they are (an API status) or as 500s.
	Batch BatchConverter
}

// BatchConverter converts objects between a resource and the storage
// that holds them. Both return new objects; FromStored returns them in
// the order given.
type BatchConverter interface {
	ToStored(ctx context.Context, obj runtime.Object) (runtime.Object, error)
	FromStored(ctx context.Context, stored []runtime.Object) ([]runtime.Object, error)
}

// ConvertToStored converts obj, an object of the resource, into the
// stored kind (a new object).
func (c *Conversion) ConvertToStored(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	return c.toStored(ctx, obj)
}

// ConvertFromStored converts a stored object into the resource's (a new
// object).
func (c *Conversion) ConvertFromStored(ctx context.Context, stored runtime.Object) (runtime.Object, error) {
	return c.fromStoredOne(ctx, stored)
}

// toStored converts one object of the resource into the stored kind.
func (c *Conversion) toStored(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	if c.Batch != nil {
		return c.Batch.ToStored(ctx, obj)
	}
	return c.ToStored(obj)
}

// fromStored converts stored objects into the resource's, in order.
func (c *Conversion) fromStored(ctx context.Context, stored ...runtime.Object) ([]runtime.Object, error) {
	for i, obj := range stored {
		// A watch cache's event carries the object with its encodings,
		// which are the stored kind's: the conversion reads the object.
		if co, ok := obj.(runtime.CacheableObject); ok {
			stored[i] = co.GetObject()
		}
	}
	if c.Batch != nil {
		return c.Batch.FromStored(ctx, stored)
	}
	out := make([]runtime.Object, len(stored))
	for i, obj := range stored {
		var err error
		if out[i], err = c.FromStored(obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fromStoredOne converts one stored object.
func (c *Conversion) fromStoredOne(ctx context.Context, stored runtime.Object) (runtime.Object, error) {
	out, err := c.fromStored(ctx, stored)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ConvertingStorage serves a resource from storage that holds another
// kind, converting with conv. attrs computes the selectable fields of the
// resource's own objects; predicates are evaluated on converted objects.
func ConvertingStorage(inner storage.Interface, conv Conversion, attrs storage.AttrFunc) storage.Interface {
	return &convertingStorage{inner: inner, conv: conv, attrs: attrs}
}

type convertingStorage struct {
	inner storage.Interface
	conv  Conversion
	attrs storage.AttrFunc
}

var _ storage.Interface = (*convertingStorage)(nil)

func (c *convertingStorage) Versioner() storage.Versioner { return c.inner.Versioner() }

// into converts a stored object into out, an object of the resource.
func (c *convertingStorage) into(ctx context.Context, stored, out runtime.Object) error {
	if out == nil {
		return nil
	}
	obj, err := c.conv.fromStoredOne(ctx, stored)
	if err != nil {
		return err
	}
	return copyInto(obj, out)
}

func copyInto(src, dst runtime.Object) error {
	sv, dv := reflectValue(src), reflectValue(dst)
	if sv.Type() != dv.Type() {
		return fmt.Errorf("convert: %T is not %T", src, dst)
	}
	dv.Set(sv)
	return nil
}

func (c *convertingStorage) toStored(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	return c.conv.toStored(ctx, obj)
}

// cached converts the caller's cached copy of the object, a hint that
// saves the inner storage a read. A batch converter (a webhook) is not
// called for a hint: the inner storage reads the object itself.
func (c *convertingStorage) cached(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	if c.conv.Batch != nil {
		return nil, nil
	}
	return c.toStored(ctx, obj)
}

func (c *convertingStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	stored, err := c.toStored(ctx, obj)
	if err != nil {
		return err
	}
	storedOut := c.conv.NewStored()
	if err := c.inner.Create(ctx, key, stored, storedOut, ttl); err != nil {
		return err
	}
	return c.into(ctx, storedOut, out)
}

func (c *convertingStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	cached, err := c.cached(ctx, cachedExistingObject)
	if err != nil {
		return err
	}
	validate := func(ctx context.Context, stored runtime.Object) error {
		obj, err := c.conv.fromStoredOne(ctx, stored)
		if err != nil {
			return err
		}
		return validateDeletion(ctx, obj)
	}
	storedOut := c.conv.NewStored()
	if err := c.inner.Delete(ctx, key, storedOut, preconditions, validate, cached, opts); err != nil {
		return err
	}
	return c.into(ctx, storedOut, out)
}

func (c *convertingStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	stored := c.conv.NewStored()
	if err := c.inner.Get(ctx, key, opts, stored); err != nil {
		return err
	}
	return c.into(ctx, stored, objPtr)
}

// predicate evaluates the caller's selectors on converted objects. An
// empty predicate never asks for attributes, so nothing is converted for
// it.
func (c *convertingStorage) predicate(ctx context.Context, p storage.SelectionPredicate) storage.SelectionPredicate {
	p.GetAttrs = func(stored runtime.Object) (labels.Set, fields.Set, error) {
		obj, err := c.conv.fromStoredOne(ctx, stored)
		if err != nil {
			return nil, nil, err
		}
		return c.attrs(obj)
	}
	return p
}

func (c *convertingStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	opts.Predicate = c.predicate(ctx, opts.Predicate)
	storedList := c.conv.NewStoredList()
	if err := c.inner.GetList(ctx, key, opts, storedList); err != nil {
		return err
	}
	items, err := meta.ExtractList(storedList)
	if err != nil {
		return err
	}
	converted := []runtime.Object{}
	if len(items) > 0 {
		if converted, err = c.conv.fromStored(ctx, items...); err != nil {
			return err
		}
	}
	if err := meta.SetList(listObj, converted); err != nil {
		return err
	}
	from, err := meta.ListAccessor(storedList)
	if err != nil {
		return err
	}
	to, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	to.SetResourceVersion(from.GetResourceVersion())
	to.SetContinue(from.GetContinue())
	to.SetRemainingItemCount(from.GetRemainingItemCount())
	return nil
}

func (c *convertingStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	cached, err := c.cached(ctx, cachedExistingObject)
	if err != nil {
		return err
	}
	storedDest := c.conv.NewStored()
	err = c.inner.GuaranteedUpdate(ctx, key, storedDest, ignoreNotFound, preconditions, func(stored runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		obj, err := c.conv.fromStoredOne(ctx, stored)
		if err != nil {
			return nil, nil, err
		}
		updated, ttl, err := tryUpdate(obj, res)
		if err != nil {
			return nil, nil, err
		}
		out, err := c.conv.toStored(ctx, updated)
		return out, ttl, err
	}, cached)
	if err != nil {
		return err
	}
	return c.into(ctx, storedDest, destination)
}

func (c *convertingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	opts.Predicate = c.predicate(ctx, opts.Predicate)
	w, err := c.inner.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	cw := &convertingWatch{inner: w, conv: c.conv, result: make(chan watch.Event), stop: make(chan struct{})}
	go cw.loop(ctx)
	return cw, nil
}

func (c *convertingStorage) Stats(ctx context.Context) (storage.Stats, error) {
	return c.inner.Stats(ctx)
}
func (c *convertingStorage) ReadinessCheck() error { return c.inner.ReadinessCheck() }
func (c *convertingStorage) RequestWatchProgress(ctx context.Context) error {
	return c.inner.RequestWatchProgress(ctx)
}
func (c *convertingStorage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return c.inner.GetCurrentResourceVersion(ctx)
}
func (c *convertingStorage) EnableResourceSizeEstimation(f storage.KeysFunc) error {
	return c.inner.EnableResourceSizeEstimation(f)
}
func (c *convertingStorage) CompactRevision() int64 { return c.inner.CompactRevision() }

// convertingWatch converts each event's object. Its goroutine ends when
// the inner watch ends or Stop is called, whichever comes first, even if
// nobody reads the result any more.
type convertingWatch struct {
	inner  watch.Interface
	conv   Conversion
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func (w *convertingWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *convertingWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.inner.Stop()
}

// maxWatchBatch bounds the events converted in one call: a burst of
// events waiting in the inner watch is converted together (one
// ConversionReview for a CRD's webhook), never more than this many.
const maxWatchBatch = 100

func (w *convertingWatch) loop(ctx context.Context) {
	defer close(w.result)
	for {
		var batch []watch.Event
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			batch = append(batch, ev)
		}
		// What else has arrived already goes in the same conversion.
		open := true
	drain:
		for len(batch) < maxWatchBatch {
			select {
			case ev, ok := <-w.inner.ResultChan():
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, ev)
			default:
				break drain
			}
		}
		batch, err := w.convert(ctx, batch)
		if err != nil {
			// A stored object that does not convert ends the watch with
			// the error (a 500 for the client), which re-lists.
			batch = []watch.Event{{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}}
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				s := status.Status()
				batch[0].Object = &s
			}
			open = false
		}
		for _, ev := range batch {
			select {
			case w.result <- ev:
			case <-w.stop:
				return
			}
		}
		if !open {
			return
		}
	}
}

// convert converts the objects of a batch of events in one call.
func (w *convertingWatch) convert(ctx context.Context, batch []watch.Event) ([]watch.Event, error) {
	var objs []runtime.Object
	for _, ev := range batch {
		if ev.Type != watch.Error && ev.Object != nil {
			objs = append(objs, ev.Object)
		}
	}
	if len(objs) == 0 {
		return batch, nil
	}
	converted, err := w.conv.fromStored(ctx, objs...)
	if err != nil {
		return nil, err
	}
	for i, n := 0, 0; i < len(batch); i++ {
		if batch[i].Type != watch.Error && batch[i].Object != nil {
			batch[i].Object = converted[n]
			n++
		}
	}
	return batch, nil
}

func reflectValue(obj runtime.Object) reflect.Value { return reflect.ValueOf(obj).Elem() }
