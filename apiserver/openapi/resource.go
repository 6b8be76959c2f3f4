package openapi

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Resource is one served resource, as the apiserver registers it.
type Resource struct {
	// GVK is the kind served, e.g. v1 Pod.
	GVK schema.GroupVersionKind
	// Plural is the resource name in URLs, e.g. "pods".
	Plural string
	// Namespaced resources live under /namespaces/{namespace}/.
	Namespaced bool
	// Verbs are the Kubernetes verbs served: get, list, watch, create,
	// update, patch, delete, deletecollection.
	Verbs []string
	// Object and List are zero values of the Go types, e.g. &corev1.Pod{}
	// and &corev1.PodList{}. List may be nil when list is not served.
	Object, List runtime.Object
	// Schema, when set, describes the objects instead of Object's Go type
	// (custom resources), as definition DefinitionName; their list is
	// defined beside it as DefinitionName+"List".
	Schema         *spec.Schema
	DefinitionName string
	// Subresources served on each object, e.g. status.
	Subresources []Subresource
}

// Subresource is a subresource of every object of a Resource.
type Subresource struct {
	// Name is the path segment, e.g. "status" or "binding".
	Name string
	// Verbs served: get, update, patch, create.
	Verbs []string
	// Object is the type read and written; the parent's Object when nil.
	Object runtime.Object
	// GVK of Object; the parent's GVK when empty.
	GVK schema.GroupVersionKind
}

func (r Resource) has(verb string) bool { return slices.Contains(r.Verbs, verb) }

func (r Resource) validate() error {
	switch {
	case r.GVK.Kind == "" || r.GVK.Version == "":
		return fmt.Errorf("openapi: resource %q has no kind or version", r.Plural)
	case r.Plural == "":
		return fmt.Errorf("openapi: resource of kind %s has no plural", r.GVK)
	case r.Schema != nil:
		if r.DefinitionName == "" {
			return fmt.Errorf("openapi: resource %s has a Schema but no DefinitionName", r.Plural)
		}
	case r.Object == nil:
		return fmt.Errorf("openapi: resource %s has no Object", r.Plural)
	case (r.has("list") || r.has("watch")) && r.List == nil:
		return fmt.Errorf("openapi: resource %s serves list or watch but has no List", r.Plural)
	}
	return nil
}

// prefix is the resource's group-version URL prefix: /api/v1 or
// /apis/<group>/<version>.
func prefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// v3Key is the group version's key in the /openapi/v3 discovery document:
// "api/v1" or "apis/<group>/<version>".
func v3Key(gv schema.GroupVersion) string { return prefix(gv)[1:] }
