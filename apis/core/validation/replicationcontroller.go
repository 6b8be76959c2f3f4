package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateReplicationController checks a ReplicationController on create
// (upstream's ValidateReplicationController, its paths and messages).
func ValidateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&rc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateReplicationControllerSpec(&rc.Spec, field.NewPath("spec"))...)
}

// ValidateReplicationControllerUpdate checks an update: the metadata
// update and the spec as on create.
func ValidateReplicationControllerUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateReplicationControllerSpec(&rc.Spec, field.NewPath("spec"))...)
}

func validateReplicationControllerSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))
	if labels.Set(spec.Selector).AsSelector().Empty() {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	}
	if spec.Replicas != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	return append(allErrs, validatePodTemplateSpecForRC(spec.Template, spec.Selector, fldPath.Child("template"))...)
}

// validatePodTemplateSpecForRC is upstream's: a template is required,
// matches the selector, restarts Always and has no deadline.
func validatePodTemplateSpecForRC(t *corev1.PodTemplateSpec, selector map[string]string, fldPath *field.Path) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	if sel := labels.Set(selector).AsSelector(); !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, ValidatePodTemplateSpec(t, fldPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("spec", "activeDeadlineSeconds"), t.Spec.ActiveDeadlineSeconds, "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return allErrs
}

// ValidatePodTemplate checks a PodTemplate (upstream's
// ValidatePodTemplate): its name as a pod's, its template.
func ValidatePodTemplate(t *corev1.PodTemplate) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&t.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, ValidatePodTemplateSpec(&t.Template, field.NewPath("template"))...)
}

// ValidatePodTemplateUpdate checks an update of a PodTemplate.
func ValidatePodTemplateUpdate(t, old *corev1.PodTemplate) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&t.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidatePodTemplateSpec(&t.Template, field.NewPath("template"))...)
}
