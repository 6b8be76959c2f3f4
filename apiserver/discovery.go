package apiserver

import (
	"net"
	"net/http"
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kite-project/kite/registry"
)

// apiGroup is one group and its versions, as discovery shows them.
type apiGroup struct {
	name     string
	versions []*apiVersion // preferred first
}

type apiVersion struct {
	gv        schema.GroupVersion
	resources []metav1.APIResource
	discovery []apidiscoveryv2.APIResourceDiscovery
}

// buildGroups computes the discovery documents once: they change only
// with the set of stores.
func buildGroups(stores []*registry.Store) []*apiGroup {
	byName := map[string]*apiGroup{}
	var groups []*apiGroup
	for _, st := range stores {
		strat := st.Strategy()
		gv := strat.Kind.GroupVersion()
		g := byName[gv.Group]
		if g == nil {
			g = &apiGroup{name: gv.Group}
			byName[gv.Group] = g
			groups = append(groups, g)
		}
		var v *apiVersion
		for _, have := range g.versions {
			if have.gv == gv {
				v = have
			}
		}
		if v == nil {
			v = &apiVersion{gv: gv}
			g.versions = append(g.versions, v)
		}
		verbs := metav1.Verbs(strat.DiscoveryVerbs())
		scope := apidiscoveryv2.ScopeCluster
		if strat.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		v.resources = append(v.resources, metav1.APIResource{
			Name:         strat.Resource,
			SingularName: strat.SingularName,
			Namespaced:   strat.Namespaced,
			Kind:         strat.Kind.Kind,
			Verbs:        verbs,
			ShortNames:   strat.ShortNames,
			Categories:   strat.Categories,
		})
		d := apidiscoveryv2.APIResourceDiscovery{
			Resource:         strat.Resource,
			ResponseKind:     &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: strat.Kind.Kind},
			Scope:            scope,
			SingularResource: strat.SingularName,
			Verbs:            verbs,
			ShortNames:       strat.ShortNames,
			Categories:       strat.Categories,
		}
		for _, name := range sortedKeys(strat.Subresources) {
			sub := strat.Subresources[name]
			kind := strat.Kind
			if !sub.Kind.Empty() {
				kind = sub.Kind
			}
			verbs := metav1.Verbs(sub.Verbs())
			res := metav1.APIResource{
				Name:       strat.Resource + "/" + name,
				Namespaced: strat.Namespaced,
				Kind:       kind.Kind,
				Verbs:      verbs,
			}
			if kind.GroupVersion() != gv {
				// As upstream: a subresource of another group's kind
				// names it (deployments/scale: autoscaling/v1;
				// pods/eviction: policy/v1, which kubectl drain
				// looks for before it evicts).
				res.Group, res.Version = kind.Group, kind.Version
			}
			v.resources = append(v.resources, res)
			d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource:  name,
				ResponseKind: &metav1.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind},
				Verbs:        verbs,
			})
		}
		v.discovery = append(v.discovery, d)
	}
	for _, g := range groups {
		// Preferred first: the highest by Kubernetes version priority
		// (v2 > v1 > v1beta1 > v1alpha1), as upstream orders CRD versions.
		sort.SliceStable(g.versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(g.versions[i].gv.Version, g.versions[j].gv.Version) > 0
		})
		for _, v := range g.versions {
			sort.Slice(v.resources, func(i, j int) bool { return v.resources[i].Name < v.resources[j].Name })
			sort.Slice(v.discovery, func(i, j int) bool { return v.discovery[i].Resource < v.discovery[j].Resource })
		}
	}
	return groups
}

func sortedKeys(m map[string]*registry.Subresource) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// serveAPIVersions answers /api: the legacy group's versions, or the
// aggregated discovery document of the legacy group.
func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	out, err := s.negotiate(r, negotiation{discovery: true})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if out.discovery {
		s.writeAggregated(w, r, out, true)
		return
	}
	versions := &metav1.APIVersions{ServerAddressByClientCIDRs: serverAddresses(r)}
	for _, g := range s.set.Load().groups {
		if g.name == "" {
			for _, v := range g.versions {
				versions.Versions = append(versions.Versions, v.gv.Version)
			}
		}
	}
	s.writeObject(w, r, http.StatusOK, out, schema.GroupVersion{Version: "v1"}, versions)
}

// serveAPIGroups answers /apis: the named groups, or their aggregated
// discovery document.
func (s *Server) serveAPIGroups(w http.ResponseWriter, r *http.Request) {
	out, err := s.negotiate(r, negotiation{discovery: true})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if out.discovery {
		s.writeAggregated(w, r, out, false)
		return
	}
	list := &metav1.APIGroupList{Groups: []metav1.APIGroup{}}
	for _, g := range s.set.Load().groups {
		if g.name != "" {
			list.Groups = append(list.Groups, g.apiGroup(r))
		}
	}
	list.Groups = mergeGroups(list.Groups, s.remoteGroups(), r)
	s.writeObject(w, r, http.StatusOK, out, schema.GroupVersion{Version: "v1"}, list)
}

func (g *apiGroup) apiGroup(r *http.Request) metav1.APIGroup {
	group := metav1.APIGroup{Name: g.name, ServerAddressByClientCIDRs: serverAddresses(r)}
	for _, v := range g.versions {
		group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: v.gv.String(), Version: v.gv.Version})
	}
	group.PreferredVersion = group.Versions[0]
	return group
}

// writeAggregated writes the APIGroupDiscoveryList of the legacy group
// (/api) or of the named groups (/apis).
func (s *Server) writeAggregated(w http.ResponseWriter, r *http.Request, out output, legacy bool) {
	list := &apidiscoveryv2.APIGroupDiscoveryList{}
	for _, g := range s.set.Load().groups {
		if (g.name == "") != legacy {
			continue
		}
		item := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		for _, v := range g.versions {
			item.Versions = append(item.Versions, apidiscoveryv2.APIVersionDiscovery{
				Version:   v.gv.Version,
				Resources: v.discovery,
				Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			})
		}
		list.Items = append(list.Items, item)
	}
	if !legacy && s.opts.Remote != nil {
		list.Items = mergeDiscovery(list.Items, s.opts.Remote.Discovery())
	}
	s.writeObject(w, r, http.StatusOK, out, apidiscoveryv2.SchemeGroupVersion, list)
}

// serveDiscovery answers /api/<v>, /apis/<g> and /apis/<g>/<v>.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, methodNotAllowed(r.Method, info))
		return
	}
	out, err := s.negotiate(r, negotiation{})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if info.GroupOnly && info.GroupVersion.Group != "" {
		// The local group with the remote versions of the same name, or a
		// remote group alone.
		var local []metav1.APIGroup
		for _, g := range s.set.Load().groups {
			if g.name == info.GroupVersion.Group {
				local = append(local, g.apiGroup(r))
			}
		}
		var remote []metav1.APIGroup
		for _, g := range s.remoteGroups() {
			if g.Name == info.GroupVersion.Group {
				remote = append(remote, g)
			}
		}
		if merged := mergeGroups(local, remote, r); len(merged) > 0 {
			s.writeObject(w, r, http.StatusOK, out, schema.GroupVersion{Version: "v1"}, &merged[0])
			return
		}
	}
	for _, g := range s.set.Load().groups {
		if g.name != info.GroupVersion.Group {
			continue
		}
		if info.GroupOnly {
			group := g.apiGroup(r)
			s.writeObject(w, r, http.StatusOK, out, schema.GroupVersion{Version: "v1"}, &group)
			return
		}
		for _, v := range g.versions {
			if v.gv == info.GroupVersion {
				list := &metav1.APIResourceList{GroupVersion: v.gv.String(), APIResources: v.resources}
				s.writeObject(w, r, http.StatusOK, out, schema.GroupVersion{Version: "v1"}, list)
				return
			}
		}
	}
	s.writeError(w, r, notFoundPath(r.URL.Path))
}

// serverAddresses is what upstream advertises: the address the client
// used, for every client network.
func serverAddresses(r *http.Request) []metav1.ServerAddressByClientCIDR {
	host := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil && r.TLS != nil {
		host = net.JoinHostPort(host, "443")
	}
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: host}}
}
