package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePodTemplateSpec checks a pod template as upstream's
// ValidatePodTemplateSpec (what Deployments, ReplicaSets and Jobs embed):
// labels and annotations (at fldPath.labels, not metadata.labels, as
// upstream reports them), the spec as a pod's, and no ephemeral
// containers.
func ValidatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metavalidation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	if v, ok := t.Annotations[corev1.PodDeletionCost]; ok && !isDeletionCost(v) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("annotations").Key(corev1.PodDeletionCost), v, "must be a 32bit integer"))
	}
	allErrs = append(allErrs, ValidatePodSpec(&t.Spec, fldPath.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}
