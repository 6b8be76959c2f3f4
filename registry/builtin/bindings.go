package builtin

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/registry"
)

// Bindings returns the strategy of core/v1 bindings, upstream's
// LegacyBindingREST: POST /api/v1/namespaces/<ns>/bindings binds the pod
// the Binding's metadata.name names, exactly as POST
// pods/<name>/binding does (the same handler, bindPod); no other verb.
// Admission sees it as upstream's does: resource bindings, no
// subresource, kind Binding (registry's createVia).
func Bindings() *registry.Strategy {
	return &registry.Strategy{
		Kind:         v1.SchemeGroupVersion.WithKind("Binding"),
		Resource:     "bindings",
		SingularName: "binding",
		Namespaced:   true,
		New:          func() runtime.Object { return &v1.Binding{} },
		CreateVia:    "pods/binding",
	}
}
