package resourceset

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

// Set is the set of resources the server serves, which changes
// while it serves as CustomResourceDefinitions come and go. It owns their
// storage stacks; on each change it hands the API server a new snapshot of
// the stores (routes and discovery, replaced whole) and the OpenAPI
// service the changed group versions only.
type Set struct {
	build *Builder

	// mu guards the fields below. It is held while the API server's
	// snapshot is replaced (no I/O), so that snapshots are handed over in
	// the order of the changes; never while a stack is built or stopped.
	mu      sync.Mutex
	stacks  []*Stack // in serving order: built-ins first
	api     *apiserver.Server
	openapi OpenAPIUpdater
}

// OpenAPIUpdater is what the set needs of the OpenAPI service.
type OpenAPIUpdater interface {
	SetGroupVersions(changes map[schema.GroupVersion][]openapi.Resource) error
	V3(gv schema.GroupVersion) *spec3.OpenAPI
}

// SchemasOf returns the OpenAPI v3 component schemas of gv's document, or
// nil.
func SchemasOf(oa OpenAPIUpdater, gv schema.GroupVersion) map[string]*spec.Schema {
	if oa == nil {
		return nil
	}
	if doc := oa.V3(gv); doc != nil && doc.Components != nil {
		return doc.Components.Schemas
	}
	return nil
}

// Builder builds the stacks of resources that join the set.
func (r *Set) Builder() *Builder { return r.build }

// Add serves st from now on. A resource that is already served is
// refused and changes nothing.
func (r *Set) Add(st *Stack) error { return r.AddAll([]*Stack{st}, nil) }

// AddAll serves sts from now on, handing the API server and the OpenAPI
// service one change for all of them. A resource that is already served
// (or twice in sts) is refused and changes nothing. beforeRoutes runs
// between publishing the OpenAPI documents and routing requests: it gets
// the OpenAPI service (nil before the set serves) and may read the new
// group versions' documents, e.g. for the field manager's schema, so the
// first request finds it ready. It must not call the set.
func (r *Set) AddAll(sts []*Stack, beforeRoutes func(oa OpenAPIUpdater)) error {
	return r.Replace(nil, sts, beforeRoutes)
}

// Remove stops serving gvrs and stops their stacks once no new request
// can reach them, with one change handed on for all. What is not served
// is skipped.
func (r *Set) Remove(gvrs ...schema.GroupVersionResource) error {
	return r.Replace(gvrs, nil, nil)
}

// Replace stops serving gvrs and serves sts instead, as one change: a
// request finds either the old stacks or the new ones, never neither (a
// CRD whose schema changed is served anew without a moment of 404). The
// old stacks stop once no new request can reach them. What of gvrs is not
// served is skipped; a resource of sts that is still served after the
// removal (or twice in sts) is refused and changes nothing. beforeRoutes
// is as for AddAll.
func (r *Set) Replace(gvrs []schema.GroupVersionResource, sts []*Stack, beforeRoutes func(oa OpenAPIUpdater)) error {
	r.mu.Lock()
	var gone []*Stack
	var gvs []schema.GroupVersion
	next := slices.DeleteFunc(slices.Clone(r.stacks), func(st *Stack) bool {
		gvr := st.Store.Strategy().GroupVersionResource()
		if !slices.Contains(gvrs, gvr) {
			return false
		}
		gone = append(gone, st)
		gvs = append(gvs, gvr.GroupVersion())
		return true
	})
	for _, st := range sts {
		gvr := st.Store.Strategy().GroupVersionResource()
		for _, have := range next {
			if have.Store.Strategy().GroupVersionResource() == gvr {
				r.mu.Unlock()
				return fmt.Errorf("resource %s is already served", gvr)
			}
		}
		next = append(next, st)
		gvs = append(gvs, gvr.GroupVersion())
	}
	if len(gone) == 0 && len(sts) == 0 {
		r.mu.Unlock()
		return nil
	}
	if err := r.publish(next, gvs, beforeRoutes); err != nil {
		r.mu.Unlock()
		return err
	}
	r.stacks = next
	r.mu.Unlock()
	for _, st := range gone {
		st.Stop()
	}
	return nil
}

// publish hands the OpenAPI service and then the API server the set next,
// whose group versions gvs changed; between the two it runs beforeRoutes.
// Called with mu held.
func (r *Set) publish(next []*Stack, gvs []schema.GroupVersion, beforeRoutes func(OpenAPIUpdater)) error {
	if r.openapi != nil {
		changes := map[schema.GroupVersion][]openapi.Resource{}
		for _, gv := range gvs {
			changes[gv] = nil // described by none: removed
		}
		for _, st := range next {
			if gv := st.Store.Strategy().Kind.GroupVersion(); slices.Contains(gvs, gv) {
				changes[gv] = append(changes[gv], st.OpenAPI)
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

// Republish hands the API server the current set again: discovery is
// recomputed (a resource began terminating).
func (r *Set) Republish() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.api == nil {
		return nil
	}
	return r.api.SetStores(storesOf(r.stacks))
}

// Serve makes the set hand its changes to api and oa from now on.
func (r *Set) Serve(api *apiserver.Server, oa OpenAPIUpdater) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.api, r.openapi = api, oa
}

// OpenAPIResources describes every served resource to the OpenAPI
// documents.
func (r *Set) OpenAPIResources() []openapi.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]openapi.Resource, len(r.stacks))
	for i, st := range r.stacks {
		out[i] = st.OpenAPI
	}
	return out
}

func storesOf(stacks []*Stack) []*registry.Store {
	out := make([]*registry.Store, len(stacks))
	for i, st := range stacks {
		out[i] = st.Store
	}
	return out
}

// Stores returns the served stores, built-ins first.
func (r *Set) Stores() []*registry.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return storesOf(r.stacks)
}

// Store returns the served store of a group resource ("pods",
// "leases.coordination.k8s.io"), or nil.
func (r *Set) Store(groupResource string) *registry.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stacks {
		if st.Store.Strategy().GroupResource().String() == groupResource {
			return st.Store
		}
	}
	return nil
}

// EtcdStores returns the bottom of every stored resource's stack.
func (r *Set) EtcdStores() map[schema.GroupResource]storage.Interface {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[schema.GroupResource]storage.Interface{}
	for _, st := range r.stacks {
		if st.Etcd != nil {
			out[st.Store.Strategy().GroupResource()] = st.Etcd
		}
	}
	return out
}

// StopAll stops every stack, last built first (Close).
func (r *Set) StopAll() {
	r.mu.Lock()
	stacks := r.stacks
	r.stacks = nil
	r.mu.Unlock()
	for i := len(stacks) - 1; i >= 0; i-- {
		stacks[i].Stop()
	}
}
