package apicoverage_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// knownDifferences are the differences between Kite's discovery and
// kube-apiserver 1.37.2's that are known, each with its reason, by the key
// a difference is reported under: "<group>/<resource>" (the core group is
// "core"), "group <name>" for a group's versions, or "group order". The
// test fails on an entry that no longer matches a difference, so none
// outlives its reason.
var knownDifferences = map[string]string{
	// The resource metrics API is Kite's own (issue 25), where upstream
	// serves it once metrics-server is installed.
	"group metrics.k8s.io": "served by Kite itself (apiserver/metricsapi), as metrics-server serves it on other clusters",
	"metrics.k8s.io/nodes": "served by Kite itself (apiserver/metricsapi)",
	"metrics.k8s.io/pods":  "served by Kite itself (apiserver/metricsapi)",
}

// TestDiscoveryMatchesKubeAPIServer holds Kite's discovery, aggregated
// (v2) and legacy, against kube-apiserver 1.37.2's recorded documents:
// every group with its versions and preferred version, every resource and
// subresource with its scope, kinds, singular name, verbs, short names and
// categories. A difference fails the test unless knownDifferences lists
// it with its reason; so does an entry of knownDifferences that matches no
// difference any more. Kite's legacy documents (/api, /apis, /api/v1,
// /apis/<group>/<version>) must say what its aggregated ones say.
func TestDiscoveryMatchesKubeAPIServer(t *testing.T) {
	dir := filepath.Join("testdata", "discovery-1.37.2")
	var upstreamCore, upstreamGroups apidiscoveryv2.APIGroupDiscoveryList
	readJSON(t, filepath.Join(dir, "aggregated-api.json"), &upstreamCore)
	readJSON(t, filepath.Join(dir, "aggregated-apis.json"), &upstreamGroups)
	var upstreamLegacy metav1.APIGroupList
	readJSON(t, filepath.Join(dir, "apis.json"), &upstreamLegacy)
	want := discoveryFacts(append(upstreamCore.Items, upstreamGroups.Items...))
	legacy := legacyGroupFacts(upstreamLegacy)
	legacy[groupKey("")] = want[groupKey("")] // /apis lists the named groups only
	if !maps.Equal(legacy, groupsOnly(want)) {
		t.Fatalf("the recorded documents disagree: /apis says %v, the aggregated /apis %v", legacy, groupsOnly(want))
	}

	hc, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	var core, groups apidiscoveryv2.APIGroupDiscoveryList
	getJSON(t, hc, "/api", aggregated, &core)
	getJSON(t, hc, "/apis", aggregated, &groups)
	got := discoveryFacts(append(core.Items, groups.Items...))

	t.Run("against upstream", func(t *testing.T) {
		// A group upstream does not serve (a known difference) is left
		// out of the order, which is upstream's for the others.
		order := got["group order"]
		got := maps.Clone(got)
		got["group order"] = strings.Join(slices.DeleteFunc(strings.Fields(order), func(g string) bool {
			_, known := knownDifferences[groupKey(g)]
			return known && want[groupKey(g)] == ""
		}), " ")
		diffs := compareFacts(want, got)
		used := map[string]bool{}
		for _, d := range diffs {
			if reason, ok := knownDifferences[d.key]; ok {
				used[d.key] = true
				t.Logf("known (%s): %s", reason, d.what)
				continue
			}
			if strings.HasPrefix(d.key, "group ") && groupMissingWithKnownResources(d.key, want, got) {
				t.Logf("known (all of its resources are): %s", d.what)
				continue
			}
			t.Errorf("%s", d.what)
		}
		for _, key := range slices.Sorted(maps.Keys(knownDifferences)) {
			if !used[key] {
				t.Errorf("knownDifferences lists %q (%s), but Kite and upstream agree on it now: remove the entry", key, knownDifferences[key])
			}
		}
	})

	t.Run("legacy documents say what the aggregated ones say", func(t *testing.T) {
		var versions metav1.APIVersions
		getJSON(t, hc, "/api", "application/json", &versions)
		if !slices.Equal(versions.Versions, []string{"v1"}) {
			t.Errorf("/api versions %v, want [v1]", versions.Versions)
		}
		var list metav1.APIGroupList
		getJSON(t, hc, "/apis", "application/json", &list)
		legacy := legacyGroupFacts(list)
		legacy[groupKey("")] = got[groupKey("")]
		for _, d := range compareFacts(groupsOnly(got), legacy) {
			t.Errorf("/apis: %s", d.what)
		}
		var lists []metav1.APIResourceList
		for _, g := range append(core.Items, groups.Items...) {
			for _, v := range g.Versions {
				path := "/apis/" + g.Name + "/" + v.Version
				if g.Name == "" {
					path = "/api/" + v.Version
				}
				var l metav1.APIResourceList
				getJSON(t, hc, path, "application/json", &l)
				lists = append(lists, l)
			}
		}
		for _, d := range compareFacts(resourcesOnly(got), legacyResourceFacts(lists)) {
			t.Errorf("/api/v1 and /apis/<group>/<version>: %s", d.what)
		}
	})
}

// facts are what discovery says, one string per key: "group <name>" is a
// group's versions, preferred first; "<group>/<resource>" the resource in
// each version it is served in; "group order" the order of the groups.
type facts map[string]string

func groupKey(name string) string { return "group " + groupName(name) }

func groupName(name string) string {
	if name == "" {
		return "core"
	}
	return name
}

// discoveryFacts reads aggregated discovery. A response kind without
// group and version is the resource's own group version, as upstream
// writes it.
func discoveryFacts(items []apidiscoveryv2.APIGroupDiscovery) facts {
	f := facts{}
	var order []string
	for _, g := range items {
		if g.Name != "" {
			order = append(order, g.Name)
		}
		var versions []string
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
			for _, r := range v.Resources {
				key := groupName(g.Name) + "/" + r.Resource
				f[key] += describeResource(v.Version, string(r.Scope), kindOf(g.Name, v.Version, r.ResponseKind), r.SingularResource, r.Verbs, r.ShortNames, r.Categories, subresourcesOf(g.Name, v.Version, r.Subresources))
			}
		}
		f[groupKey(g.Name)] = "versions " + strings.Join(versions, ",") + " (preferred first)"
	}
	f["group order"] = strings.Join(order, " ")
	return f
}

func kindOf(group, version string, k *metav1.GroupVersionKind) string {
	if k == nil {
		return "<none>"
	}
	if k.Group == "" && k.Version == "" {
		k = &metav1.GroupVersionKind{Group: group, Version: version, Kind: k.Kind}
	}
	return strings.TrimPrefix(k.Group+"/"+k.Version+"."+k.Kind, "/")
}

func subresourcesOf(group, version string, subs []apidiscoveryv2.APISubresourceDiscovery) []string {
	var out []string
	for _, s := range subs {
		out = append(out, fmt.Sprintf("%s(kind %s, verbs %s)", s.Subresource, kindOf(group, version, s.ResponseKind), sortedJoin(s.Verbs)))
	}
	slices.Sort(out)
	return out
}

func describeResource(version, scope, kind, singular string, verbs, short, categories, subresources []string) string {
	return fmt.Sprintf("[%s: scope %s, kind %s, singular %q, verbs %s, short names %s, categories %s, subresources %s]",
		version, scope, kind, singular, sortedJoin(verbs), strings.Join(short, ","), strings.Join(categories, ","), strings.Join(subresources, " "))
}

func sortedJoin(s []string) string { return strings.Join(slices.Sorted(slices.Values(s)), ",") }

// legacyGroupFacts reads /apis: each group's versions, preferred first.
func legacyGroupFacts(list metav1.APIGroupList) facts {
	f := facts{}
	for _, g := range list.Groups {
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		f[groupKey(g.Name)] = "versions " + strings.Join(versions, ",") + " (preferred first)"
	}
	return f
}

// legacyResourceFacts reads /api/v1 and /apis/<group>/<version>, where a
// subresource is a resource named "<resource>/<subresource>".
func legacyResourceFacts(lists []metav1.APIResourceList) facts {
	f := facts{}
	for _, l := range lists {
		gv := strings.SplitN(l.GroupVersion, "/", 2)
		group, version := "", gv[0]
		if len(gv) == 2 {
			group, version = gv[0], gv[1]
		}
		subs := map[string][]string{}
		for _, r := range l.APIResources {
			if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
				k := &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
				subs[parent] = append(subs[parent], fmt.Sprintf("%s(kind %s, verbs %s)", sub, kindOf(group, version, k), sortedJoin(r.Verbs)))
			}
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			scope := string(apidiscoveryv2.ScopeCluster)
			if r.Namespaced {
				scope = string(apidiscoveryv2.ScopeNamespace)
			}
			k := &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
			sub := subs[r.Name]
			slices.Sort(sub)
			f[groupName(group)+"/"+r.Name] += describeResource(version, scope, kindOf(group, version, k), r.SingularName, r.Verbs, r.ShortNames, r.Categories, sub)
		}
	}
	return f
}

func groupsOnly(f facts) facts {
	out := facts{}
	for k, v := range f {
		if strings.HasPrefix(k, "group ") && k != "group order" {
			out[k] = v
		}
	}
	return out
}

func resourcesOnly(f facts) facts {
	out := facts{}
	for k, v := range f {
		if !strings.HasPrefix(k, "group ") {
			out[k] = v
		}
	}
	return out
}

type difference struct{ key, what string }

// compareFacts lists, key by key, where got differs from want.
func compareFacts(want, got facts) []difference {
	var out []difference
	for _, k := range slices.Sorted(maps.Keys(want)) {
		switch g, ok := got[k]; {
		case !ok:
			out = append(out, difference{k, fmt.Sprintf("%s: missing; upstream serves %s", k, want[k])})
		case g != want[k]:
			out = append(out, difference{k, fmt.Sprintf("%s:\n\tgot  %s\n\twant %s", k, g, want[k])})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			out = append(out, difference{k, fmt.Sprintf("%s: served, but not by upstream: %s", k, got[k])})
		}
	}
	return out
}

// groupMissingWithKnownResources tells whether the group of key is one
// Kite does not serve at all while every resource upstream serves in it
// is a known difference: the group comes with them.
func groupMissingWithKnownResources(key string, want, got facts) bool {
	if _, served := got[key]; served {
		return false
	}
	prefix := strings.TrimPrefix(key, "group ") + "/"
	for k := range want {
		if strings.HasPrefix(k, prefix) {
			if _, ok := knownDifferences[k]; !ok {
				return false
			}
		}
	}
	return true
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func getJSON(t *testing.T, hc *http.Client, path, accept string, into any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimRight(shared.URL(), "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, data)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
