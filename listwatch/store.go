package listwatch

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// KeyFunc names an object in a store. Two objects with the same key are
// the same object at different versions.
type KeyFunc func(obj runtime.Object) (string, error)

// NamespaceNameKey is the default KeyFunc: "namespace/name", or "name" for
// cluster-scoped objects, as client-go's MetaNamespaceKeyFunc.
func NamespaceNameKey(obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("key for %T: %w", obj, err)
	}
	if m.GetName() == "" {
		return "", fmt.Errorf("key for %T: object has no name", obj)
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName(), nil
	}
	return m.GetName(), nil
}

// asT converts a Store argument to the typed store's element type.
func asT[T runtime.Object](obj runtime.Object) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("store of %T given %T", zero, obj)
	}
	return t, nil
}
