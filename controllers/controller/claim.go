package controller

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Claim is what an owner does with one object its namespace holds.
type Claim int

const (
	// Skip: not the owner's (another controller's, or an orphan it does
	// not take).
	Skip Claim = iota
	// Own: the owner's already, and its selector matches.
	Own
	// Adopt: an orphan the owner's selector matches; it becomes the
	// owner's once a fresh read shows the owner neither deleted nor
	// replaced.
	Adopt
	// Release: the owner's, but its selector no longer matches.
	Release
)

// Decide is upstream's ControllerRefManager.ClaimObject decision for obj,
// whose labels the owner's selector matches or not: an owner being deleted
// adopts and releases nothing, and nobody adopts an object being deleted
// or of another namespace.
func Decide(owner, obj metav1.Object, matches bool) Claim {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch {
		case ref.UID != owner.GetUID():
			return Skip
		case matches:
			return Own
		case owner.GetDeletionTimestamp() != nil:
			return Skip
		}
		return Release
	}
	if !matches || owner.GetDeletionTimestamp() != nil || obj.GetDeletionTimestamp() != nil ||
		(owner.GetNamespace() != "" && owner.GetNamespace() != obj.GetNamespace()) {
		return Skip
	}
	return Adopt
}

// Patcher is a typed client of one namespace's objects, e.g.
// clientset.CoreV1().Pods(ns).
type Patcher[T metav1.Object] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// Claimer carries out Decide for one owner: it adopts and releases by
// strategic merge patches of metadata that name the object's uid, so an
// object replaced under the same name is left alone.
type Claimer[T metav1.Object] struct {
	// Owner claims; Kind is its kind, for the controller reference.
	Owner metav1.Object
	Kind  schema.GroupVersionKind
	// Selector picks the owner's objects by label.
	Selector labels.Selector
	// Client patches the objects of the owner's namespace.
	Client Patcher[T]
	// Fresh reads the owner from the API, not the cache: an owner deleted
	// or replaced meanwhile adopts nothing (upstream's
	// RecheckDeletionTimestamp). It is called once, at the first adoption.
	Fresh func(ctx context.Context) (metav1.Object, error)
	// Finalizer, if set, is added on adoption and removed on release
	// (the Job's batch.kubernetes.io/job-tracking).
	Finalizer string
	// Patched, if set, hears of each object patched.
	Patched func(T)
}

// Claim returns the objects the owner controls out of objs: those it
// owns and its selector matches, and the orphans its selector matches,
// adopted (as the patch answered). Owned objects it no longer matches
// are released. An object gone or replaced while being patched counts as
// before the patch.
func (c *Claimer[T]) Claim(ctx context.Context, objs []T) ([]T, error) {
	var owned []T
	var checked, canAdopt bool
	for _, obj := range objs {
		switch Decide(c.Owner, obj, c.Selector.Matches(labels.Set(obj.GetLabels()))) {
		case Own:
			owned = append(owned, obj)
		case Release:
			if _, err := c.patch(ctx, obj, c.releaseBody(obj)); err != nil {
				return nil, fmt.Errorf("release %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
		case Adopt:
			if !checked {
				checked = true
				fresh, err := c.Fresh(ctx)
				canAdopt = err == nil && fresh.GetUID() == c.Owner.GetUID() && fresh.GetDeletionTimestamp() == nil
			}
			if !canAdopt {
				continue
			}
			out, err := c.patch(ctx, obj, c.adoptBody(obj))
			if err != nil {
				return nil, fmt.Errorf("adopt %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			owned = append(owned, out)
		}
	}
	return owned, nil
}

func (c *Claimer[T]) adoptBody(obj T) map[string]any {
	meta := map[string]any{"uid": obj.GetUID(), "ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(c.Owner, c.Kind)}}
	if c.Finalizer != "" {
		meta["finalizers"] = []string{c.Finalizer}
	}
	return meta
}

func (c *Claimer[T]) releaseBody(obj T) map[string]any {
	meta := map[string]any{"uid": obj.GetUID(), "ownerReferences": []map[string]any{{"$patch": "delete", "uid": c.Owner.GetUID()}}}
	if c.Finalizer != "" {
		meta["$deleteFromPrimitiveList/finalizers"] = []string{c.Finalizer}
	}
	return meta
}

// patch applies a patch of obj's metadata and returns the patched object;
// one gone or replaced (NotFound, or the uid in the patch refused) is no
// error and is returned as it was.
func (c *Claimer[T]) patch(ctx context.Context, obj T, meta map[string]any) (T, error) {
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return obj, err
	}
	out, err := c.Client.Patch(ctx, obj.GetName(), types.StrategicMergePatchType, body, metav1.PatchOptions{})
	switch {
	case err == nil:
		if c.Patched != nil {
			c.Patched(out)
		}
		return out, nil
	case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err):
		return obj, nil
	}
	return obj, err
}

// Key is an object's queue and cache key: namespace/name, or name.
func Key(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// Getter reads a cache by key, e.g. an informer's Store().
type Getter[T any] interface {
	Get(key string) (T, bool)
}

// Owner returns the owner a controller reference names, if ref is of
// kind and the cache holds it with the reference's uid (upstream's
// resolveControllerRef).
func Owner[T metav1.Object](cache Getter[T], namespace string, ref *metav1.OwnerReference, kind schema.GroupVersionKind) (T, bool) {
	var zero T
	if ref == nil || ref.Kind != kind.Kind || ref.APIVersion != kind.GroupVersion().String() {
		return zero, false
	}
	key := ref.Name
	if namespace != "" {
		key = namespace + "/" + ref.Name
	}
	owner, ok := cache.Get(key)
	if !ok || owner.GetUID() != ref.UID {
		return zero, false
	}
	return owner, true
}

// Selecting returns the owners whose selector, not empty, matches lbls:
// those that may adopt an orphan with these labels.
func Selecting[T any](owners []T, selector func(T) *metav1.LabelSelector, lbls map[string]string) []T {
	var out []T
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selector(o))
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(lbls)) {
			out = append(out, o)
		}
	}
	return out
}
