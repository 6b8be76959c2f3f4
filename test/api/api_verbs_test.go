package api_test

import (
	"net/http"
	"slices"
	"testing"

	"k8s.io/client-go/discovery"
)

// TestSubresourceVerbsMatchDiscovery asks every subresource discovery
// lists for each of get, update and patch: a verb discovery lists must
// route (anything but 405), one it does not list must be refused with
// 405, as upstream refuses a method a path has no handler for. GET
// namespaces/x/finalize was served once though discovery lists only
// update.
func TestSubresourceVerbsMatchDiscovery(t *testing.T) {
	dc := discovery.NewDiscoveryClientForConfigOrDie(config(t))
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	methods := map[string]string{"get": http.MethodGet, "update": http.MethodPut, "patch": http.MethodPatch}
	checked := 0
	for _, list := range lists {
		for _, r := range list.APIResources {
			parent, sub, ok := cut(r.Name)
			if !ok {
				continue
			}
			base := "/apis/" + list.GroupVersion
			if list.GroupVersion == "v1" {
				base = "/api/v1"
			}
			path := base + "/" + parent + "/x/" + sub
			if r.Namespaced {
				path = base + "/namespaces/default/" + parent + "/x/" + sub
			}
			for verb, method := range methods {
				code, _, _ := raw(t, method, path, "application/merge-patch+json", "application/json", []byte("{}"))
				listed := slices.Contains(r.Verbs, verb)
				if listed && code == http.StatusMethodNotAllowed {
					t.Errorf("%s %s: 405, though discovery lists %q for %s", method, path, verb, r.Name)
				}
				if !listed && code != http.StatusMethodNotAllowed {
					t.Errorf("%s %s: %d, want 405: discovery lists only %v for %s", method, path, code, r.Verbs, r.Name)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("discovery listed no subresources")
	}
}

func cut(name string) (parent, sub string, ok bool) {
	for i := range len(name) {
		if name[i] == '/' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}
