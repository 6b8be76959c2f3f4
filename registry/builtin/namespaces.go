package builtin

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// ImmortalNamespaces exist from the start and cannot be deleted.
var ImmortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, v1.NamespaceNodeLease}

// FinalizerKubernetes is the spec finalizer every namespace gets; the
// namespace controller removes it once the namespace is empty.
const FinalizerKubernetes = v1.FinalizerKubernetes

// Namespaces returns the strategy of core/v1 namespaces. Deleting a
// namespace moves it to Terminating; the namespace controller empties it
// and removes the spec finalizer through "finalize", which deletes the
// namespace when no finalizer is left (else the removal of the last one
// does, or the controller's second delete).
func Namespaces(now func() time.Time) *registry.Strategy {
	return &registry.Strategy{
		Kind:         v1.SchemeGroupVersion.WithKind("Namespace"),
		Resource:     "namespaces",
		SingularName: "namespace",
		ShortNames:   []string{"ns"},
		New:          func() runtime.Object { return &v1.Namespace{} },
		NewList:      func() runtime.Object { return &v1.NamespaceList{} },
		Default:      func(obj runtime.Object) { defaults.Namespace(obj.(*v1.Namespace)) },
		PrepareForCreate: func(obj runtime.Object) {
			ns := obj.(*v1.Namespace)
			defaults.NamespaceForCreate(ns)
			ns.Spec.Finalizers = []v1.FinalizerName{FinalizerKubernetes}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			ns, oldNs := obj.(*v1.Namespace), old.(*v1.Namespace)
			ns.Spec.Finalizers = oldNs.Spec.Finalizers
			ns.Status = oldNs.Status
			defaults.Namespace(ns)
		},
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateNamespace(obj.(*v1.Namespace)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateNamespaceUpdate(obj.(*v1.Namespace), old.(*v1.Namespace))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*v1.Namespace).Status.Phase)}
		},
		FieldLabels:              []string{"status.phase"},
		MarkForDeletion:          namespaceMarkForDeletion(now),
		ShouldDeleteDuringUpdate: func(obj runtime.Object) bool { return len(obj.(*v1.Namespace).Spec.Finalizers) == 0 },
		AllowUnconditionalUpdate: true,
		// Upstream's namespace storage is no CollectionDeleter.
		NoDeleteCollection: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) { obj.(*v1.Namespace).Spec = old.(*v1.Namespace).Spec },
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return validation.ValidateNamespaceStatusUpdate(obj.(*v1.Namespace), old.(*v1.Namespace))
				},
			},
			"finalize": {
				UpdateOnly: true,
				PrepareForUpdate: func(obj, old runtime.Object) {
					ns, oldNs := obj.(*v1.Namespace), old.(*v1.Namespace)
					finalizers := ns.Spec.Finalizers
					oldNs.DeepCopyInto(ns)
					ns.Spec.Finalizers = finalizers
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return validation.ValidateNamespaceFinalizeUpdate(obj.(*v1.Namespace), old.(*v1.Namespace))
				},
			},
		},
	}
}

// namespaceMarkForDeletion is upstream's namespace Delete: the first one
// sets deletionTimestamp and the phase Terminating and keeps the namespace
// for the namespace controller, which empties it and then removes the
// kubernetes finalizer from spec.finalizers. A later one leaves a
// namespace that spec finalizers still hold as it is.
func namespaceMarkForDeletion(now func() time.Time) func(obj runtime.Object, opts *metav1.DeleteOptions) (func(runtime.Object), error) {
	return func(obj runtime.Object, opts *metav1.DeleteOptions) (func(runtime.Object), error) {
		ns := obj.(*v1.Namespace)
		for _, name := range ImmortalNamespaces {
			if ns.Name == name {
				return nil, apierrors.NewForbidden(v1.Resource("namespaces"), ns.Name, fmt.Errorf("this namespace may not be deleted"))
			}
		}
		if ns.DeletionTimestamp == nil {
			return func(obj runtime.Object) {
				ns := obj.(*v1.Namespace)
				at := metav1.NewTime(now())
				ns.DeletionTimestamp = &at
				ns.Status.Phase = v1.NamespaceTerminating
			}, nil
		}
		if len(ns.Spec.Finalizers) > 0 {
			// Already terminating and still being emptied: the namespace
			// is answered as it is (200), unchanged, as upstream's
			// namespace Delete does.
			return func(runtime.Object) {}, nil
		}
		// Only metadata finalizers (or none) are left: the generic
		// deletion of an object that finalizers keep, as upstream's.
		return nil, nil
	}
}
