package builtin

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// Nodes returns the strategy of core/v1 nodes. Kubelets create nodes with
// their status, so create keeps it; updates of the node keep the old
// status and status updates keep the old spec.
func Nodes() *registry.Strategy {
	return &registry.Strategy{
		Kind:          v1.SchemeGroupVersion.WithKind("Node"),
		Resource:      "nodes",
		SingularName:  "node",
		ShortNames:    []string{"no"},
		StoragePrefix: "minions",
		New:           func() runtime.Object { return &v1.Node{} },
		NewList:       func() runtime.Object { return &v1.NodeList{} },
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*v1.Node).Status = old.(*v1.Node).Status
		},
		Default:           func(obj runtime.Object) { defaults.Node(obj.(*v1.Node)) },
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateNode(obj.(*v1.Node)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateNodeUpdate(obj.(*v1.Node), old.(*v1.Node))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": boolString(obj.(*v1.Node).Spec.Unschedulable)}
		},
		FieldLabels:              []string{"spec.unschedulable"},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {PrepareForUpdate: func(obj, old runtime.Object) {
				node, oldNode := obj.(*v1.Node), old.(*v1.Node)
				node.Spec = oldNode.Spec
			}},
		},
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
