// Package validation is upstream's validation of node.k8s.io/v1
// RuntimeClasses (k8s.io/kubernetes/pkg/apis/node/validation), ported to
// the v1 types with its field paths and messages.
package validation

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corevalidation "github.com/kite-project/kite/apis/core/validation"
)

// ValidateRuntimeClass is upstream's ValidateRuntimeClass (metadata is the
// Store's): a handler that is a DNS label, an overhead of valid
// quantities, a node selector of valid labels, unique valid tolerations.
func ValidateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var allErrs field.ErrorList
	if rc.Handler == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("handler"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(rc.Handler) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
		}
	}
	if rc.Overhead != nil {
		allErrs = append(allErrs, corevalidation.ValidateResourceRequirements(&corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		fldPath := field.NewPath("scheduling")
		allErrs = append(allErrs, metav1validation.ValidateLabels(s.NodeSelector, fldPath.Child("nodeSelector"))...)
		allErrs = append(allErrs, corevalidation.ValidateTolerations(s.Tolerations, fldPath.Child("tolerations"))...)
		seen := map[corev1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				allErrs = append(allErrs, field.Duplicate(fldPath.Child("tolerations").Index(i), t))
			}
			seen[key] = true
		}
	}
	return allErrs
}

// ValidateRuntimeClassUpdate is upstream's: the handler is immutable.
func ValidateRuntimeClassUpdate(rc, old *nodev1.RuntimeClass) field.ErrorList {
	allErrs := ValidateRuntimeClass(rc)
	return append(allErrs, apivalidation.ValidateImmutableField(rc.Handler, old.Handler, field.NewPath("handler"))...)
}
