package resourceset

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/webhook"
)

// Equivalents returns the served resources equivalent to resource (and
// its subresource), as upstream's EquivalentResourceMapper keyed by
// storage prefix: those stored under the same keys, the other versions
// of a CRD, events.k8s.io events and core events. Each converts objects
// through the storage form: the request's resource converts into what is
// stored (a CRD's storage version through its conversion webhook), the
// equivalent converts out of it; with no conversion either way (a CRD
// whose conversion is None) only apiVersion and kind change.
func (r *Set) Equivalents(resource schema.GroupVersionResource, subresource string) []webhook.Equivalent {
	r.mu.Lock()
	stacks := r.stacks
	r.mu.Unlock()
	var from *registry.Strategy
	for _, st := range stacks {
		if s := st.Store.Strategy(); s.Virtual == nil && s.GroupVersionResource() == resource {
			from = s
			break
		}
	}
	if from == nil {
		return nil
	}
	var out []webhook.Equivalent
	for _, st := range stacks {
		to := st.Store.Strategy()
		if to.Virtual != nil || to == from || to.KeyPrefix() != from.KeyPrefix() || to.GroupVersionResource() == resource {
			continue
		}
		fromKind, toKind := from.Kind, to.Kind
		if subresource != "" {
			fs, ts := from.Subresources[subresource], to.Subresources[subresource]
			if fs == nil || ts == nil {
				continue
			}
			if !fs.Kind.Empty() {
				fromKind = fs.Kind
			}
			if !ts.Kind.Empty() {
				toKind = ts.Kind
			}
		}
		out = append(out, webhook.Equivalent{
			Resource: to.GroupVersionResource(),
			Kind:     toKind,
			Convert: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
				return convertEquivalent(ctx, from, to, toKind, fromKind, obj)
			},
			ConvertBack: func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
				return convertEquivalent(ctx, to, from, fromKind, toKind, obj)
			},
		})
	}
	return out
}

// convertEquivalent converts obj, of kind objKind in from's resource,
// into kind in to's, through what both store.
func convertEquivalent(ctx context.Context, from, to *registry.Strategy, kind, objKind schema.GroupVersionKind, obj runtime.Object) (runtime.Object, error) {
	if kind == objKind {
		// A subresource whose kind is the same in both (a Scale).
		return obj.DeepCopyObject(), nil
	}
	stored := obj
	if from.Conversion != nil {
		var err error
		if stored, err = from.Conversion.ConvertToStored(ctx, obj); err != nil {
			return nil, err
		}
	}
	if to.Conversion != nil {
		return to.Conversion.ConvertFromStored(ctx, stored)
	}
	out := stored.DeepCopyObject()
	if u, ok := out.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(kind)
	}
	return out, nil
}
