package apiserver

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kite-project/kite/registry"
)

// resources is what the server serves at one moment: the routes and the
// discovery documents of one set of stores, built together. It is never
// modified; SetStores replaces it whole, so each request sees one set from
// its start to its end, never half a change.
type resources struct {
	routes map[schema.GroupVersion]map[string]*registry.Store
	groups []*apiGroup
}

func newResources(stores []*registry.Store, connect Connecter) (*resources, error) {
	if len(stores) == 0 {
		return nil, errors.New("apiserver: no stores to serve")
	}
	set := &resources{routes: map[schema.GroupVersion]map[string]*registry.Store{}}
	for _, st := range stores {
		gv := st.Strategy().Kind.GroupVersion()
		if set.routes[gv] == nil {
			set.routes[gv] = map[string]*registry.Store{}
		}
		if _, dup := set.routes[gv][st.Strategy().Resource]; dup {
			return nil, fmt.Errorf("apiserver: two stores for %s", st.Strategy().GroupVersionResource())
		}
		set.routes[gv][st.Strategy().Resource] = st
	}
	set.groups = buildGroups(stores, connect)
	return set, nil
}

// SetStores replaces the resources the server serves (routes and
// discovery at once); requests already routed finish with the stores they
// found. It is safe to call while serving; bad input (no stores, two
// stores for one resource) changes nothing.
func (s *Server) SetStores(stores []*registry.Store) error {
	set, err := newResources(stores, s.opts.Connect)
	if err != nil {
		return err
	}
	s.set.Store(set)
	return nil
}
