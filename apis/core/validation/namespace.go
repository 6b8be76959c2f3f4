package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNamespace checks a namespace on create: name a DNS-1123 label,
// no namespace of its own, and spec.finalizers either qualified names or
// one of the standard ones ("kubernetes", "orphan", "foregroundDeletion").
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&ns.ObjectMeta, false, ValidateNamespaceName, field.NewPath("metadata"))
	for i := range ns.Spec.Finalizers {
		// Upstream reports these at the list, not at the item.
		allErrs = append(allErrs, validateFinalizerName(string(ns.Spec.Finalizers[i]), field.NewPath("spec", "finalizers"))...)
	}
	return allErrs
}

// ValidateNamespaceUpdate checks an update: only the metadata update rules
// (spec and status change through finalize and status).
func ValidateNamespaceUpdate(ns, old *corev1.Namespace) field.ErrorList {
	return apivalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
}

// ValidateNamespaceStatusUpdate checks a write to namespaces/status: the
// phase is Active while the namespace is not being deleted, Terminating once
// it is.
func ValidateNamespaceStatusUpdate(ns, old *corev1.Namespace) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	// Upstream's path really is "status.Phase".
	phasePath := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			allErrs = append(allErrs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		allErrs = append(allErrs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return allErrs
}

// ValidateNamespaceFinalizeUpdate checks a write to namespaces/finalize,
// which may change spec.finalizers only.
func ValidateNamespaceFinalizeUpdate(ns, old *corev1.Namespace) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("spec", "finalizers")
	for i := range ns.Spec.Finalizers {
		allErrs = append(allErrs, validateFinalizerName(string(ns.Spec.Finalizers[i]), fldPath.Index(i))...)
	}
	return allErrs
}

var standardFinalizers = []string{string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents}

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateFinalizerName(name, fldPath)
	if !strings.Contains(name, "/") && !contains(standardFinalizers, name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return allErrs
}
