package watchcache

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// CachedObject is an object of the cache together with its encodings: for
// each encoder identity (JSON, protobuf, a watch frame, ...) the bytes are
// made at most once and shared by every watcher and list that sends the
// object.
//
// It implements runtime.CacheableObject, so apimachinery's serializers
// (json, protobuf, the versioning codec) write the cached bytes instead of
// encoding again: code that serves watch events or objects needs nothing
// but to hand the CachedObject to its encoder. GetObject returns a deep
// copy the caller owns.
//
// The wrapped object is shared and never mutated. CachedObject also
// implements metav1.Object: getters read the shared object, setters copy it
// first (copy on write) and drop the cached encodings, as upstream's
// cachingObject does.
type CachedObject struct {
	// orig is the object as the cache received it, never changed: lists
	// read it without a lock, whatever setters do.
	orig metaObject
	// encodings holds an immutable []*encoding, replaced (compare and
	// swap) on insert, so the common path (a hit) takes no lock.
	encodings atomic.Pointer[[]*encoding]
	// copied is nil until a setter changes the object: the cache keeps
	// one CachedObject per object, and next to no object is ever set, so
	// the lock and the copy live apart from it (32 bytes instead of 80).
	copied atomic.Pointer[copiedObject]
}

// copiedObject is a CachedObject's own copy of its object, made by the
// first setter that changes it; mu guards object's fields.
type copiedObject struct {
	mu     sync.RWMutex
	object metaObject
}

type metaObject interface {
	runtime.Object
	metav1.Object
}

type encoding struct {
	id   runtime.Identifier
	once sync.Once
	raw  []byte
	err  error
}

var (
	_ runtime.CacheableObject = (*CachedObject)(nil)
	_ metav1.Object           = (*CachedObject)(nil)
)

// NewCachedObject wraps obj, which the caller gives up: it must not be
// changed afterwards. obj must have object metadata; objects without it
// (which no cached resource has) panic.
func NewCachedObject(obj runtime.Object) *CachedObject {
	m, ok := obj.(metaObject)
	if !ok {
		panic(fmt.Sprintf("watchcache: %T has no object metadata", obj))
	}
	return &CachedObject{orig: m}
}

// CacheEncode implements runtime.CacheableObject: it writes the bytes
// cached for id, encoding them first if this is the first use of id.
func (o *CachedObject) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	// Encoders may set the kind on the object they are given while they
	// work: Encoded gives them a copy, never the shared object.
	raw, err := o.Encoded(id, encode)
	if err != nil {
		return err
	}
	if s, ok := w.(runtime.Splice); ok {
		s.Splice(raw)
		return nil
	}
	_, err = w.Write(raw)
	return err
}

// Encoded returns the bytes cached for id, encoding them first if this is
// the first use of id, for writers that frame the bytes themselves (a list
// writer must know every item's size before it writes the first). The
// slice is shared: callers must not change it.
func (o *CachedObject) Encoded(id runtime.Identifier, encode func(runtime.Object, io.Writer) error) ([]byte, error) {
	enc := o.encoding(id)
	enc.once.Do(func() {
		var buf bytes.Buffer
		enc.err = encode(o.GetObject(), &buf)
		enc.raw = buf.Bytes()
	})
	return enc.raw, enc.err
}

func (o *CachedObject) encoding(id runtime.Identifier) *encoding {
	for {
		list := o.encodings.Load()
		var old []*encoding
		if list != nil {
			old = *list
		}
		for _, e := range old {
			if e.id == id {
				return e
			}
		}
		e := &encoding{id: id}
		next := make([]*encoding, len(old), len(old)+1)
		copy(next, old)
		next = append(next, e)
		if o.encodings.CompareAndSwap(list, &next) {
			return e
		}
		// Another encoder inserted (or a setter dropped the list)
		// meanwhile: look again.
	}
}

// Encodings is the number of distinct encodings made so far (for tests
// and metrics).
func (o *CachedObject) Encodings() int {
	if list := o.encodings.Load(); list != nil {
		return len(*list)
	}
	return 0
}

// GetObject implements runtime.CacheableObject: a deep copy of the object.
func (o *CachedObject) GetObject() runtime.Object {
	c := o.copied.Load()
	if c == nil {
		return o.orig.DeepCopyObject()
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.object.DeepCopyObject()
}

// shared returns the object as the cache received it, without copying;
// callers must not change it. An object the cache keeps as JSON is
// decoded: that is a copy of its own.
func (o *CachedObject) shared() runtime.Object {
	if j, ok := o.orig.(*jsonObject); ok {
		return j.unstructured()
	}
	return o.orig
}

// GetObjectKind implements runtime.Object.
func (o *CachedObject) GetObjectKind() schema.ObjectKind { return o.get().GetObjectKind() }

// DeepCopyObject implements runtime.Object: a new CachedObject over a copy,
// with no encodings. The copy is its own: setters change it in place.
func (o *CachedObject) DeepCopyObject() runtime.Object {
	obj := o.GetObject().(metaObject)
	d := &CachedObject{orig: obj}
	d.copied.Store(&copiedObject{object: obj})
	return d
}

// set applies a change unless it is a no-op, copying the shared object
// first and dropping encodings that no longer match.
func (o *CachedObject) set(noop func(metaObject) bool, change func(metaObject)) {
	c := o.copied.Load()
	if c == nil {
		if noop(o.orig) {
			return
		}
		c = &copiedObject{object: o.orig.DeepCopyObject().(metaObject)}
		if !o.copied.CompareAndSwap(nil, c) {
			c = o.copied.Load() // another setter copied first
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if noop(c.object) {
		return
	}
	o.encodings.Store(nil)
	change(c.object)
}

// get returns the object getters read: the original until a setter has
// copied it. The copy's fields may change under its lock; getters of
// single fields read them as upstream's cachingObject does.
func (o *CachedObject) get() metaObject {
	c := o.copied.Load()
	if c == nil {
		return o.orig
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.object
}

// The rest implements metav1.Object: getters delegate, setters copy on
// write.

func (o *CachedObject) GetNamespace() string { return o.get().GetNamespace() }
func (o *CachedObject) SetNamespace(v string) {
	o.set(func(m metaObject) bool { return m.GetNamespace() == v }, func(m metaObject) { m.SetNamespace(v) })
}
func (o *CachedObject) GetName() string { return o.get().GetName() }
func (o *CachedObject) SetName(v string) {
	o.set(func(m metaObject) bool { return m.GetName() == v }, func(m metaObject) { m.SetName(v) })
}
func (o *CachedObject) GetGenerateName() string { return o.get().GetGenerateName() }
func (o *CachedObject) SetGenerateName(v string) {
	o.set(func(m metaObject) bool { return m.GetGenerateName() == v }, func(m metaObject) { m.SetGenerateName(v) })
}
func (o *CachedObject) GetUID() types.UID { return o.get().GetUID() }
func (o *CachedObject) SetUID(v types.UID) {
	o.set(func(m metaObject) bool { return m.GetUID() == v }, func(m metaObject) { m.SetUID(v) })
}
func (o *CachedObject) GetResourceVersion() string { return o.get().GetResourceVersion() }
func (o *CachedObject) SetResourceVersion(v string) {
	o.set(func(m metaObject) bool { return m.GetResourceVersion() == v }, func(m metaObject) { m.SetResourceVersion(v) })
}
func (o *CachedObject) GetGeneration() int64 { return o.get().GetGeneration() }
func (o *CachedObject) SetGeneration(v int64) {
	o.set(func(m metaObject) bool { return m.GetGeneration() == v }, func(m metaObject) { m.SetGeneration(v) })
}
func (o *CachedObject) GetSelfLink() string { return o.get().GetSelfLink() }
func (o *CachedObject) SetSelfLink(v string) {
	o.set(func(m metaObject) bool { return m.GetSelfLink() == v }, func(m metaObject) { m.SetSelfLink(v) })
}
func (o *CachedObject) GetCreationTimestamp() metav1.Time { return o.get().GetCreationTimestamp() }
func (o *CachedObject) SetCreationTimestamp(v metav1.Time) {
	o.set(func(m metaObject) bool { return m.GetCreationTimestamp() == v }, func(m metaObject) { m.SetCreationTimestamp(v) })
}
func (o *CachedObject) GetDeletionTimestamp() *metav1.Time { return o.get().GetDeletionTimestamp() }
func (o *CachedObject) SetDeletionTimestamp(v *metav1.Time) {
	o.set(func(m metaObject) bool { return m.GetDeletionTimestamp() == v }, func(m metaObject) { m.SetDeletionTimestamp(v) })
}
func (o *CachedObject) GetDeletionGracePeriodSeconds() *int64 {
	return o.get().GetDeletionGracePeriodSeconds()
}
func (o *CachedObject) SetDeletionGracePeriodSeconds(v *int64) {
	o.set(func(m metaObject) bool { return m.GetDeletionGracePeriodSeconds() == v }, func(m metaObject) { m.SetDeletionGracePeriodSeconds(v) })
}
func (o *CachedObject) GetLabels() map[string]string { return o.get().GetLabels() }
func (o *CachedObject) SetLabels(v map[string]string) {
	o.set(func(metaObject) bool { return false }, func(m metaObject) { m.SetLabels(v) })
}
func (o *CachedObject) GetAnnotations() map[string]string { return o.get().GetAnnotations() }
func (o *CachedObject) SetAnnotations(v map[string]string) {
	o.set(func(metaObject) bool { return false }, func(m metaObject) { m.SetAnnotations(v) })
}
func (o *CachedObject) GetFinalizers() []string { return o.get().GetFinalizers() }
func (o *CachedObject) SetFinalizers(v []string) {
	o.set(func(metaObject) bool { return false }, func(m metaObject) { m.SetFinalizers(v) })
}
func (o *CachedObject) GetOwnerReferences() []metav1.OwnerReference {
	return o.get().GetOwnerReferences()
}
func (o *CachedObject) SetOwnerReferences(v []metav1.OwnerReference) {
	o.set(func(metaObject) bool { return false }, func(m metaObject) { m.SetOwnerReferences(v) })
}
func (o *CachedObject) GetManagedFields() []metav1.ManagedFieldsEntry {
	return o.get().GetManagedFields()
}
func (o *CachedObject) SetManagedFields(v []metav1.ManagedFieldsEntry) {
	o.set(func(metaObject) bool { return false }, func(m metaObject) { m.SetManagedFields(v) })
}
