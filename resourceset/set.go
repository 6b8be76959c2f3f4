package kite

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/registry"
)

// resourceSet is the set of resources the server serves, which changes
// while it serves as CustomResourceDefinitions come and go. It owns their
// storage stacks; on each change it hands the API server a new snapshot of
// the stores (routes and discovery, replaced whole) and the OpenAPI
// service the changed group versions only.
type resourceSet struct {
	build *stackBuilder

	// mu guards the fields below. It is held while the API server's
	// snapshot is replaced (no I/O), so that snapshots are handed over in
	// the order of the changes; never while a stack is built or stopped.
	mu      sync.Mutex
	stacks  []*stack // in serving order: built-ins first
	api     *apiserver.Server
	openapi openAPIUpdater
}

// openAPIUpdater is what the set needs of the OpenAPI service.
type openAPIUpdater interface {
	SetGroupVersions(changes map[schema.GroupVersion][]openapi.Resource) error
	V3(gv schema.GroupVersion) *spec3.OpenAPI
}

// schemasOf returns the OpenAPI v3 component schemas of gv's document, or
// nil.
func schemasOf(oa openAPIUpdater, gv schema.GroupVersion) map[string]*spec.Schema {
	if oa == nil {
		return nil
	}
	if doc := oa.V3(gv); doc != nil && doc.Components != nil {
		return doc.Components.Schemas
	}
	return nil
}

func newResourceSet(b *stackBuilder) *resourceSet { return &resourceSet{build: b} }

// add serves st from now on. A resource that is already served is
// refused and changes nothing.
func (r *resourceSet) add(st *stack) error { return r.addAll([]*stack{st}, nil) }

// addAll serves sts from now on, handing the API server and the OpenAPI
// service one change for all of them. A resource that is already served
// (or twice in sts) is refused and changes nothing. beforeRoutes runs
// between publishing the OpenAPI documents and routing requests: it gets
// the OpenAPI service (nil before the set serves) and may read the new
// group versions' documents, e.g. for the field manager's schema, so the
// first request finds it ready. It must not call the set.
func (r *resourceSet) addAll(sts []*stack, beforeRoutes func(oa openAPIUpdater)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := slices.Clip(r.stacks)
	var gvs []schema.GroupVersion
	for _, st := range sts {
		gvr := st.store.Strategy().GroupVersionResource()
		for _, have := range next {
			if have.store.Strategy().GroupVersionResource() == gvr {
				return fmt.Errorf("resource %s is already served", gvr)
			}
		}
		next = append(next, st)
		gvs = append(gvs, gvr.GroupVersion())
	}
	if err := r.publish(next, gvs, beforeRoutes); err != nil {
		return err
	}
	r.stacks = next
	return nil
}

// remove stops serving gvrs and stops their stacks once no new request
// can reach them, with one change handed on for all. What is not served
// is skipped.
func (r *resourceSet) remove(gvrs ...schema.GroupVersionResource) error {
	r.mu.Lock()
	var gone []*stack
	var gvs []schema.GroupVersion
	next := slices.DeleteFunc(slices.Clone(r.stacks), func(st *stack) bool {
		gvr := st.store.Strategy().GroupVersionResource()
		if !slices.Contains(gvrs, gvr) {
			return false
		}
		gone = append(gone, st)
		gvs = append(gvs, gvr.GroupVersion())
		return true
	})
	if len(gone) == 0 {
		r.mu.Unlock()
		return nil
	}
	if err := r.publish(next, gvs, nil); err != nil {
		r.mu.Unlock()
		return err
	}
	r.stacks = next
	r.mu.Unlock()
	for _, st := range gone {
		st.stop()
	}
	return nil
}

// publish hands the OpenAPI service and then the API server the set next,
// whose group versions gvs changed; between the two it runs beforeRoutes.
// Called with mu held.
func (r *resourceSet) publish(next []*stack, gvs []schema.GroupVersion, beforeRoutes func(openAPIUpdater)) error {
	if r.openapi != nil {
		changes := map[schema.GroupVersion][]openapi.Resource{}
		for _, gv := range gvs {
			changes[gv] = nil // described by none: removed
		}
		for _, st := range next {
			if gv := st.store.Strategy().Kind.GroupVersion(); slices.Contains(gvs, gv) {
				changes[gv] = append(changes[gv], st.openapi)
			}
		}
		if err := r.openapi.SetGroupVersions(changes); err != nil {
			return fmt.Errorf("openapi of %v: %w", gvs, err)
		}
	}
	if beforeRoutes != nil {
		beforeRoutes(r.openapi)
	}
	if r.api != nil {
		if err := r.api.SetStores(storesOf(next)); err != nil {
			return err
		}
	}
	return nil
}

// republish hands the API server the current set again: discovery is
// recomputed (a resource began terminating).
func (r *resourceSet) republish() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.api == nil {
		return nil
	}
	return r.api.SetStores(storesOf(r.stacks))
}

// serve makes the set hand its changes to api and oa from now on.
func (r *resourceSet) serve(api *apiserver.Server, oa openAPIUpdater) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.api, r.openapi = api, oa
}

// openAPIResources describes every served resource to the OpenAPI
// documents.
func (r *resourceSet) openAPIResources() []openapi.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]openapi.Resource, len(r.stacks))
	for i, st := range r.stacks {
		out[i] = st.openapi
	}
	return out
}

func storesOf(stacks []*stack) []*registry.Store {
	out := make([]*registry.Store, len(stacks))
	for i, st := range stacks {
		out[i] = st.store
	}
	return out
}

// stores returns the served stores, built-ins first.
func (r *resourceSet) stores() []*registry.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return storesOf(r.stacks)
}

// store returns the served store of a group resource ("pods",
// "leases.coordination.k8s.io"), or nil.
func (r *resourceSet) store(groupResource string) *registry.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stacks {
		if st.store.Strategy().GroupResource().String() == groupResource {
			return st.store
		}
	}
	return nil
}

// etcdStores returns the bottom of every stored resource's stack.
func (r *resourceSet) etcdStores() map[schema.GroupResource]storage.Interface {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[schema.GroupResource]storage.Interface{}
	for _, st := range r.stacks {
		if st.etcd != nil {
			out[st.store.Strategy().GroupResource()] = st.etcd
		}
	}
	return out
}

// stopAll stops every stack, last built first (Close).
func (r *resourceSet) stopAll() {
	r.mu.Lock()
	stacks := r.stacks
	r.stacks = nil
	r.mu.Unlock()
	for i := len(stacks) - 1; i >= 0; i-- {
		stacks[i].stop()
	}
}
