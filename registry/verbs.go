package registry

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The verbs of a stored resource, sorted as discovery lists them.
var storedVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Verbs returns the Kubernetes verbs the resource serves, sorted: what
// routing admits, discovery lists and the OpenAPI documents describe. A
// virtual resource or a CreateVia alias takes only create, a computed one
// get and list. The caller may keep but not modify the slice.
func (s *Strategy) Verbs() []string {
	switch {
	case s.Virtual != nil || s.CreateVia != "":
		return []string{"create"}
	case s.Computed != nil:
		return []string{"get", "list"}
	case s.NoDeleteCollection:
		return withoutDeleteCollection
	}
	return storedVerbs
}

// withoutDeleteCollection are the verbs of a NoDeleteCollection resource.
var withoutDeleteCollection = slices.DeleteFunc(slices.Clone(storedVerbs), func(v string) bool { return v == "deletecollection" })

// DiscoveryVerbs returns the verbs discovery lists: Verbs, but while the
// resource is terminating only delete, deletecollection, get, list and
// watch, as upstream's CRD discovery.
func (s *Strategy) DiscoveryVerbs() []string {
	if s.Terminating == nil || !s.Terminating() {
		return s.Verbs()
	}
	return slices.DeleteFunc(slices.Clone(s.Verbs()), func(v string) bool { return v == "create" || v == "update" || v == "patch" })
}

// Verbs returns the verbs of the subresource, sorted: create for a POST
// subresource (pods/binding), update for an update-only one
// (namespaces/finalize), else get, patch and update. The caller may keep
// but not modify the slice.
func (sub *Subresource) Verbs() []string {
	switch {
	case sub.Create != nil:
		return []string{"create"}
	case sub.UpdateOnly:
		return []string{"update"}
	}
	return []string{"get", "patch", "update"}
}

// Serves reports whether verb is one of verbs.
func Serves(verbs []string, verb string) bool { return slices.Contains(verbs, verb) }

// PatchTypes returns the patch media types the resource accepts, as
// upstream: JSON patch, merge patch, strategic merge patch (only where Go
// types carry the patch strategies, so not for custom resources) and
// server-side apply.
func (s *Strategy) PatchTypes() []string {
	if _, custom := s.New().(runtime.Unstructured); custom {
		return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	}
	return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}
}
