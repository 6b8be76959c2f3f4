package apiserver

import (
	"cmp"
	"net"
	"net/http"
	"slices"
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
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

// connectSubresource is a subresource upstream serves by connecting
// (rest.Connecter: pods/exec, nodes/proxy) or by streaming (pods/log),
// which Options.Connect serves here outside the registry: discovery lists
// it as upstream's does, with the kind of its options and the verbs of
// the HTTP methods it takes (GET get, POST create, PUT update, PATCH
// patch, DELETE delete).
type connectSubresource struct {
	name, kind string
	verbs      []string
}

// proxyVerbs are the verbs of a proxy subresource: every method.
var proxyVerbs = []string{"create", "delete", "get", "patch", "update"}

// connectSubresources are upstream's connect subresources of the core
// group, by resource (pkg/registry/core/{pod,node,service}/rest).
var connectSubresources = map[string][]connectSubresource{
	"pods": {
		{"attach", "PodAttachOptions", []string{"create", "get"}},
		{"exec", "PodExecOptions", []string{"create", "get"}},
		{"log", "Pod", []string{"get"}},
		{"portforward", "PodPortForwardOptions", []string{"create", "get"}},
		{"proxy", "PodProxyOptions", proxyVerbs},
	},
	"nodes":    {{"proxy", "NodeProxyOptions", proxyVerbs}},
	"services": {{"proxy", "ServiceProxyOptions", proxyVerbs}},
}

// connectAllows reports whether a connect subresource of the core group
// takes verb, as discovery lists its verbs: upstream registers a connect
// subresource's handler for its methods only, and refuses the others with
// 405. A proxy subresource takes every method (HEAD and OPTIONS too), as
// upstream's; a subresource outside the table is not refused here.
func connectAllows(group, resource, sub, verb string) bool {
	if group != "" || sub == "proxy" {
		return true
	}
	for _, c := range connectSubresources[resource] {
		if c.name == sub {
			return slices.Contains(c.verbs, verb)
		}
	}
	return true
}

// discoverySubresource is one subresource as discovery lists it.
type discoverySubresource struct {
	name  string
	kind  schema.GroupVersionKind
	verbs []string
}

// subresourcesOf lists the subresources of strat that discovery shows, in
// name order: the registry's and those connect serves.
func subresourcesOf(strat *registry.Strategy, connect Connecter) []discoverySubresource {
	var out []discoverySubresource
	for name, sub := range strat.Subresources {
		kind := strat.Kind
		if !sub.Kind.Empty() {
			kind = sub.Kind
		}
		out = append(out, discoverySubresource{name: name, kind: kind, verbs: sub.Verbs()})
	}
	if connect != nil && strat.Kind.Group == "" {
		for _, c := range connectSubresources[strat.Resource] {
			if _, inRegistry := strat.Subresources[c.name]; !inRegistry && connect.Handles(strat.Resource, c.name) {
				out = append(out, discoverySubresource{name: c.name, kind: strat.Kind.GroupVersion().WithKind(c.kind), verbs: c.verbs})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// buildGroups computes the discovery documents once: they change only
// with the set of stores. connect, when set, serves subresources outside
// the registry that discovery lists too.
func buildGroups(stores []*registry.Store, connect Connecter) []*apiGroup {
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
		for _, sub := range subresourcesOf(strat, connect) {
			kind, verbs := sub.kind, metav1.Verbs(sub.verbs)
			res := metav1.APIResource{
				Name:       strat.Resource + "/" + sub.name,
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
				Subresource:  sub.name,
				ResponseKind: &metav1.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind},
				Verbs:        verbs,
			})
		}
		v.discovery = append(v.discovery, d)
	}
	for _, g := range groups {
		sortVersions(g.versions)
		for _, v := range g.versions {
			sort.Slice(v.resources, func(i, j int) bool { return v.resources[i].Name < v.resources[j].Name })
			sort.Slice(v.discovery, func(i, j int) bool { return v.discovery[i].Resource < v.discovery[j].Resource })
		}
	}
	sortGroups(groups)
	return groups
}

// The priorities of a group version Kite serves that upstream has none
// for (a custom resource's), as upstream's aggregated discovery gives a
// group version added without one.
const (
	defaultGroupPriority   = 1000
	defaultVersionPriority = 15
)

func priorityOf(gv schema.GroupVersion) (group, version int32) {
	if g, v, ok := builtin.APIServicePriority(gv); ok {
		return g, v
	}
	return defaultGroupPriority, defaultVersionPriority
}

// sortVersions puts a group's versions in upstream's order, preferred
// first: by their APIServices' version priority, highest first, then by
// Kubernetes version order (v2 > v1 > v1beta1 > v1alpha1).
func sortVersions(versions []*apiVersion) {
	sort.SliceStable(versions, func(i, j int) bool {
		_, pi := priorityOf(versions[i].gv)
		_, pj := priorityOf(versions[j].gv)
		if pi != pj {
			return pi > pj
		}
		return version.CompareKubeAwareVersionStrings(versions[i].gv.Version, versions[j].gv.Version) > 0
	})
}

// sortGroups puts the groups in upstream's order (kube-aggregator's
// discovery, legacy and aggregated): by the highest group priority
// minimum of their versions, highest first, then by name.
func sortGroups(groups []*apiGroup) {
	priority := func(g *apiGroup) int32 {
		var best int32
		for _, v := range g.versions {
			if p, _ := priorityOf(v.gv); p > best {
				best = p
			}
		}
		return best
	}
	sort.SliceStable(groups, func(i, j int) bool {
		pi, pj := priority(groups[i]), priority(groups[j])
		if pi != pj {
			return pi > pj
		}
		return groups[i].name < groups[j].name
	})
}

// groupRank is what kube-aggregator orders a group by among all groups,
// local and remote: the highest groupPriorityMinimum of its versions'
// APIServices, then, in legacy /apis, the name of the first of them at
// that priority (upstream's SortedByGroupAndVersion), in aggregated
// discovery the group's name.
type groupRank struct {
	priority   int32
	apiService string
}

type groupRanks map[string]groupRank

// add ranks group by one of its APIServices; the better rank stays.
func (rs groupRanks) add(group string, r groupRank) {
	if have, ok := rs[group]; ok && (have.priority > r.priority || have.priority == r.priority && have.apiService <= r.apiService) {
		return
	}
	rs[group] = r
}

// compare orders groups a and b: the higher priority first, then by
// APIService name (legacy) or group name.
func (rs groupRanks) compare(a, b string, legacy bool) int {
	ra, rb := rs[a], rs[b]
	if c := cmp.Compare(rb.priority, ra.priority); c != 0 {
		return c
	}
	if legacy {
		if c := cmp.Compare(ra.apiService, rb.apiService); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

// groupRanks ranks the local groups by their versions' (local
// APIServices') priorities and the remote ones by what the aggregation
// layer says of their APIServices.
func (s *Server) groupRanks() groupRanks {
	ranks := groupRanks{}
	for _, g := range s.set.Load().groups {
		for _, v := range g.versions {
			p, _ := priorityOf(v.gv)
			ranks.add(g.name, groupRank{priority: p, apiService: v.gv.Version + "." + g.name})
		}
	}
	if s.opts.Remote != nil {
		for _, g := range s.opts.Remote.Groups() {
			if p, name, ok := s.opts.Remote.GroupPriority(g.Name); ok {
				ranks.add(g.Name, groupRank{priority: p, apiService: name})
			}
		}
	}
	return ranks
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
	// Local and remote groups alike, by their APIServices (groupRanks).
	ranks := s.groupRanks()
	slices.SortStableFunc(list.Groups, func(a, b metav1.APIGroup) int { return ranks.compare(a.Name, b.Name, true) })
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
		if remote := s.opts.Remote.Discovery(); len(remote) > 0 {
			list.Items = mergeDiscovery(list.Items, remote)
			ranks := s.groupRanks()
			slices.SortStableFunc(list.Items, func(a, b apidiscoveryv2.APIGroupDiscovery) int { return ranks.compare(a.Name, b.Name, false) })
		}
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
