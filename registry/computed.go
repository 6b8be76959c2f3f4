package registry

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/storage/watchcache"
)

// Computed is how a resource that is not stored is read: each read asks
// for the objects as they are now (upstream's componentstatus REST).
type Computed struct {
	// Get returns the named object, or a 404 API error.
	Get func(ctx context.Context, name string) (runtime.Object, error)
	// List returns every object, as a list of the Strategy's NewList.
	List func(ctx context.Context) (runtime.Object, error)
}

// Stored reports whether the resource keeps objects in storage: false for
// a virtual, computed or create-only alias resource, whose Store has no
// storage.
func (s *Strategy) Stored() bool {
	return s.Virtual == nil && s.Computed == nil && s.CreateVia == ""
}

// listComputed lists a computed resource: every object the Strategy
// computes that matches opts' selectors (upstream filters them too, though
// none has labels).
func (s *Store) listComputed(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	pred, err := s.predicate(opts)
	if err != nil {
		return nil, err
	}
	list, err := s.strategy.Computed.List(ctx)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.strategy.Resource, err)
	}
	var keep []runtime.Object
	for _, item := range items {
		ok, err := pred.Matches(item)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.strategy.Resource, err)
		}
		if ok {
			keep = append(keep, item)
		}
	}
	if err := meta.SetList(list, keep); err != nil {
		return nil, fmt.Errorf("list %s: %w", s.strategy.Resource, err)
	}
	return list, nil
}

// listComputedCached is listComputed for encoders, which need a
// resourceVersion: "0", as no storage versions these objects (the API
// server lists a computed resource with List, which sets none, as
// upstream's).
func (s *Store) listComputedCached(ctx context.Context, opts *metainternalversion.ListOptions) (*watchcache.CachedList, error) {
	list, err := s.listComputed(ctx, opts)
	if err != nil {
		return nil, err
	}
	if m, err := meta.ListAccessor(list); err == nil {
		m.SetResourceVersion("0")
	}
	out, err := watchcache.NewCachedList(list)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.strategy.Resource, err)
	}
	return out, nil
}

// createVia creates through the subresource CreateVia names, on the
// object the body names: the body's metadata.name is the parent's name.
// Admission sees the create of this resource, not of the subresource, as
// upstream's LegacyBindingREST: a POST to core bindings is resource
// "bindings" with no subresource (a webhook or policy matching
// "pods/binding" does not see it; one matching "bindings" does).
func (s *Store) createVia(ctx context.Context, namespace string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	parent, sub, _ := strings.Cut(s.strategy.CreateVia, "/")
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("object has no metadata: %v", err))
	}
	if err := s.checkNamespace(m, namespace); err != nil {
		return nil, err
	}
	if m.GetName() == "" {
		// Upstream's key function, asked for the parent's key.
		return nil, apierrors.NewBadRequest("Name parameter required.")
	}
	gr := parent
	if g := s.strategy.Kind.Group; g != "" {
		gr += "." + g
	}
	store := s.Peer(gr)
	if store == nil {
		return nil, fmt.Errorf("%s: %s is not served", s.strategy.Resource, gr)
	}
	if s.admission != nil {
		a := s.admissionAttributes(ctx, admission.Create, obj, nil, m.GetNamespace(), m.GetName(), "", opts, isDryRun(opts.DryRun))
		if err := s.admitMutating(ctx, a); err != nil {
			return nil, err
		}
		if err := s.admitValidating(ctx, a); err != nil {
			return nil, err
		}
	}
	return store.createSubresource(ctx, m.GetNamespace(), m.GetName(), sub, obj, opts, false)
}
