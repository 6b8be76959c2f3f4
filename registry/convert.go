package registry

import (
	"context"
	"fmt"
	"reflect"
	"sync"

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
func (c *convertingStorage) into(stored, out runtime.Object) error {
	if out == nil {
		return nil
	}
	obj, err := c.conv.FromStored(stored)
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

func (c *convertingStorage) toStored(obj runtime.Object) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	return c.conv.ToStored(obj)
}

func (c *convertingStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	stored, err := c.toStored(obj)
	if err != nil {
		return err
	}
	storedOut := c.conv.NewStored()
	if err := c.inner.Create(ctx, key, stored, storedOut, ttl); err != nil {
		return err
	}
	return c.into(storedOut, out)
}

func (c *convertingStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	cached, err := c.toStored(cachedExistingObject)
	if err != nil {
		return err
	}
	validate := func(ctx context.Context, stored runtime.Object) error {
		obj, err := c.conv.FromStored(stored)
		if err != nil {
			return err
		}
		return validateDeletion(ctx, obj)
	}
	storedOut := c.conv.NewStored()
	if err := c.inner.Delete(ctx, key, storedOut, preconditions, validate, cached, opts); err != nil {
		return err
	}
	return c.into(storedOut, out)
}

func (c *convertingStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	stored := c.conv.NewStored()
	if err := c.inner.Get(ctx, key, opts, stored); err != nil {
		return err
	}
	return c.into(stored, objPtr)
}

// predicate evaluates the caller's selectors on converted objects.
func (c *convertingStorage) predicate(p storage.SelectionPredicate) storage.SelectionPredicate {
	p.GetAttrs = func(stored runtime.Object) (labels.Set, fields.Set, error) {
		obj, err := c.conv.FromStored(stored)
		if err != nil {
			return nil, nil, err
		}
		return c.attrs(obj)
	}
	return p
}

func (c *convertingStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	opts.Predicate = c.predicate(opts.Predicate)
	storedList := c.conv.NewStoredList()
	if err := c.inner.GetList(ctx, key, opts, storedList); err != nil {
		return err
	}
	items, err := meta.ExtractList(storedList)
	if err != nil {
		return err
	}
	converted := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		obj, err := c.conv.FromStored(item)
		if err != nil {
			return err
		}
		converted = append(converted, obj)
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
	cached, err := c.toStored(cachedExistingObject)
	if err != nil {
		return err
	}
	storedDest := c.conv.NewStored()
	err = c.inner.GuaranteedUpdate(ctx, key, storedDest, ignoreNotFound, preconditions, func(stored runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		obj, err := c.conv.FromStored(stored)
		if err != nil {
			return nil, nil, err
		}
		updated, ttl, err := tryUpdate(obj, res)
		if err != nil {
			return nil, nil, err
		}
		out, err := c.conv.ToStored(updated)
		return out, ttl, err
	}, cached)
	if err != nil {
		return err
	}
	return c.into(storedDest, destination)
}

func (c *convertingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	opts.Predicate = c.predicate(opts.Predicate)
	w, err := c.inner.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	cw := &convertingWatch{inner: w, conv: c.conv, result: make(chan watch.Event), stop: make(chan struct{})}
	go cw.loop()
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

func (w *convertingWatch) loop() {
	defer close(w.result)
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if ev.Type != watch.Error && ev.Object != nil {
				obj, err := w.conv.FromStored(ev.Object)
				if err != nil {
					// A stored object that does not convert ends the
					// watch; the client re-lists.
					return
				}
				ev.Object = obj
			}
			select {
			case w.result <- ev:
			case <-w.stop:
				return
			}
		}
	}
}

func reflectValue(obj runtime.Object) reflect.Value { return reflect.ValueOf(obj).Elem() }
