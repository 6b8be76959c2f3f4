package informer

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Indexes that more than one controller keeps on a shared cache: asked for
// under these names with these functions, they are kept once.
const (
	// NamespaceIndex is ByNamespace's name.
	NamespaceIndex = "namespace"
	// NodeNameIndex is ByNodeName's name.
	NodeNameIndex = "spec.nodeName"
)

// ByNamespace indexes an object by its namespace.
func ByNamespace[T interface {
	runtime.Object
	metav1.Object
}](obj T) ([]string, error) {
	return []string{obj.GetNamespace()}, nil
}

// ByNodeName indexes a pod by the node it is bound to ("" for none).
func ByNodeName(p *v1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
