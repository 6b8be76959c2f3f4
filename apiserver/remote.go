package apiserver

import (
	"net/http"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Remote is the aggregation layer as the request path sees it
// (apiserver/aggregator implements it).
type Remote interface {
	// Proxy is the handler of a group version served by an extension
	// API server, nil when the server serves gv itself (or nobody does).
	Proxy(gv schema.GroupVersion) http.Handler
	// Groups are the remote groups for /apis and /apis/<group>, their
	// versions preferred first.
	Groups() []metav1.APIGroup
	// Discovery is the aggregated discovery of the remote groups.
	Discovery() []apidiscoveryv2.APIGroupDiscovery
	// GroupPriority is what a remote group is ordered by among all
	// groups, as kube-aggregator orders them: the highest
	// groupPriorityMinimum of the group's APIServices, and the name of
	// the first of those at that priority (legacy /apis breaks ties by
	// APIService name, aggregated discovery by group name); ok is false
	// for a group it does not serve.
	GroupPriority(group string) (minimum int32, apiService string, ok bool)
}

// remoteHandler is the proxy of the /apis/<group>/<version>/... path when
// an extension API server serves that group version; every request under
// it (discovery included) goes there, as kube-aggregator routes.
func (s *Server) remoteHandler(path string) http.Handler {
	if s.opts.Remote == nil {
		return nil
	}
	parts := splitPath(path)
	if len(parts) < 3 || parts[0] != "apis" {
		return nil
	}
	return s.opts.Remote.Proxy(schema.GroupVersion{Group: parts[1], Version: parts[2]})
}

// remoteGroups are the remote groups, for /apis; a group that the server
// also serves locally is merged into the local one by mergeGroups.
func (s *Server) remoteGroups() []metav1.APIGroup {
	if s.opts.Remote == nil {
		return nil
	}
	return s.opts.Remote.Groups()
}

// mergeGroups adds the remote groups to the local list: the versions of a
// group served both ways after the local ones, the others after the
// local groups.
func mergeGroups(local []metav1.APIGroup, remote []metav1.APIGroup, r *http.Request) []metav1.APIGroup {
	at := map[string]int{}
	for i, g := range local {
		at[g.Name] = i
	}
	for _, g := range remote {
		i, ok := at[g.Name]
		if !ok {
			g.ServerAddressByClientCIDRs = serverAddresses(r)
			at[g.Name] = len(local)
			local = append(local, g)
			continue
		}
		for _, v := range g.Versions {
			if !hasVersion(local[i].Versions, v.GroupVersion) {
				local[i].Versions = append(local[i].Versions, v)
			}
		}
	}
	return local
}

func hasVersion(vs []metav1.GroupVersionForDiscovery, gv string) bool {
	for _, v := range vs {
		if v.GroupVersion == gv {
			return true
		}
	}
	return false
}

// mergeDiscovery is mergeGroups for aggregated discovery.
func mergeDiscovery(local []apidiscoveryv2.APIGroupDiscovery, remote []apidiscoveryv2.APIGroupDiscovery) []apidiscoveryv2.APIGroupDiscovery {
	at := map[string]int{}
	for i, g := range local {
		at[g.Name] = i
	}
	for _, g := range remote {
		i, ok := at[g.Name]
		if !ok {
			at[g.Name] = len(local)
			local = append(local, g)
			continue
		}
		for _, v := range g.Versions {
			found := false
			for _, have := range local[i].Versions {
				found = found || have.Version == v.Version
			}
			if !found {
				local[i].Versions = append(local[i].Versions, v)
			}
		}
	}
	return local
}
