package aggregator

import (
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Discovery is the aggregated discovery (apidiscovery.k8s.io/v2) of the
// remote group versions whose servers have answered, in the order of
// Groups; a version whose server did not answer its last check keeps
// what it said before, marked Stale, as upstream's discovery manager.
func (a *Aggregator) Discovery() []apidiscoveryv2.APIGroupDiscovery { return a.state.Load().discovery }

// GroupPriority implements the apiserver's Remote: what kube-aggregator
// orders group among all groups by, local and remote alike: the highest
// groupPriorityMinimum of its APIServices and the name of the first
// APIService at that priority (by name, /apis' tie-break).
func (a *Aggregator) GroupPriority(group string) (minimum int32, apiService string, ok bool) {
	p, ok := a.state.Load().priorities[group]
	return p.minimum, p.apiService, ok
}

// groupPriority is one group's GroupPriority.
type groupPriority struct {
	minimum    int32
	apiService string
}

// prioritiesOf are the GroupPriority of the groups of svcs, as upstream's
// SortedByGroupAndVersion ranks them: a pure function.
func prioritiesOf(svcs []*apiregistrationv1.APIService) map[string]groupPriority {
	out := map[string]groupPriority{}
	for _, svc := range svcs {
		p := groupPriority{minimum: svc.Spec.GroupPriorityMinimum, apiService: svc.Name}
		if have, ok := out[svc.Spec.Group]; ok && (have.minimum > p.minimum || have.minimum == p.minimum && have.apiService <= p.apiService) {
			continue
		}
		out[svc.Spec.Group] = p
	}
	return out
}

// discoveryOf computes the remote groups of /apis and their aggregated
// discovery from the remote APIServices and what their servers said. A
// pure function.
func discoveryOf(svcs []*apiregistrationv1.APIService, remotes map[schema.GroupVersion]*remote) ([]metav1.APIGroup, []apidiscoveryv2.APIGroupDiscovery) {
	type group struct {
		name     string
		priority int32
		versions []*apiregistrationv1.APIService
	}
	byName := map[string]*group{}
	var groups []*group
	for _, svc := range svcs {
		g := byName[svc.Spec.Group]
		if g == nil {
			g = &group{name: svc.Spec.Group}
			byName[g.name] = g
			groups = append(groups, g)
		}
		// A group's priority is the highest of its versions', as
		// upstream's.
		g.priority = max(g.priority, svc.Spec.GroupPriorityMinimum)
		g.versions = append(g.versions, svc)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].priority != groups[j].priority {
			return groups[i].priority > groups[j].priority
		}
		return groups[i].name < groups[j].name
	})
	var list []metav1.APIGroup
	var docs []apidiscoveryv2.APIGroupDiscovery
	for _, g := range groups {
		sort.SliceStable(g.versions, func(i, j int) bool {
			a, b := g.versions[i].Spec, g.versions[j].Spec
			if a.VersionPriority != b.VersionPriority {
				return a.VersionPriority > b.VersionPriority
			}
			return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
		})
		apiGroup := metav1.APIGroup{Name: g.name}
		doc := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		for _, svc := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: svc.Spec.Version}
			apiGroup.Versions = append(apiGroup.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
			r := remotes[gv]
			if r == nil || r.resources == nil {
				continue
			}
			freshness := apidiscoveryv2.DiscoveryFreshnessCurrent
			if r.stale {
				freshness = apidiscoveryv2.DiscoveryFreshnessStale
			}
			doc.Versions = append(doc.Versions, apidiscoveryv2.APIVersionDiscovery{
				Version: gv.Version, Resources: resourcesOf(gv, r.resources), Freshness: freshness,
			})
		}
		apiGroup.PreferredVersion = apiGroup.Versions[0]
		list = append(list, apiGroup)
		if len(doc.Versions) > 0 {
			docs = append(docs, doc)
		}
	}
	return list, docs
}

// resourcesOf turns a legacy APIResourceList into aggregated discovery's
// resources, with their subresources ("<resource>/<sub>") folded in, as
// upstream's discovery manager converts a server that does not serve the
// aggregated format.
func resourcesOf(gv schema.GroupVersion, list *metav1.APIResourceList) []apidiscoveryv2.APIResourceDiscovery {
	var out []apidiscoveryv2.APIResourceDiscovery
	index := map[string]int{}
	kindOf := func(r metav1.APIResource) *metav1.GroupVersionKind {
		g, v := gv.Group, gv.Version
		if r.Group != "" || r.Version != "" {
			g, v = r.Group, r.Version
		}
		return &metav1.GroupVersionKind{Group: g, Version: v, Kind: r.Kind}
	}
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(out)
		out = append(out, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: kindOf(r), Scope: scope, SingularResource: r.SingularName,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	for _, r := range list.APIResources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		i, found := index[parent]
		if !found {
			continue
		}
		out[i].Subresources = append(out[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kindOf(r), Verbs: r.Verbs,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}
