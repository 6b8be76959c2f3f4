package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corevalidation "github.com/kite-project/kite/apis/core/validation"
)

// ValidateDaemonSet checks a DaemonSet on create.
func ValidateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&ds.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

// ValidateDaemonSetUpdate checks an update: the spec as on create and the
// selector immutable. (Upstream's checks of the internal
// templateGeneration cannot fail through apps/v1: the strategy sets it.)
func ValidateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
	return append(allErrs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

// ValidateDaemonSetStatusUpdate checks a write of a DaemonSet's status.
func ValidateDaemonSetStatusUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	s := &ds.Status
	allErrs = append(allErrs, nonNegative(s.CurrentNumberScheduled, p.Child("currentNumberScheduled"))...)
	allErrs = append(allErrs, nonNegative(s.NumberMisscheduled, p.Child("numberMisscheduled"))...)
	allErrs = append(allErrs, nonNegative(s.DesiredNumberScheduled, p.Child("desiredNumberScheduled"))...)
	allErrs = append(allErrs, nonNegative(s.NumberReady, p.Child("numberReady"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	allErrs = append(allErrs, nonNegative(s.UpdatedNumberScheduled, p.Child("updatedNumberScheduled"))...)
	allErrs = append(allErrs, nonNegative(s.NumberAvailable, p.Child("numberAvailable"))...)
	allErrs = append(allErrs, nonNegative(s.NumberUnavailable, p.Child("numberUnavailable"))...)
	if s.CollisionCount != nil {
		allErrs = append(allErrs, nonNegative(*s.CollisionCount, p.Child("collisionCount"))...)
	}
	if decremented(s.CollisionCount, old.Status.CollisionCount) {
		allErrs = append(allErrs, field.Invalid(p.Child("collisionCount"), valueOf(s.CollisionCount), "cannot be decremented"))
	}
	return allErrs
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))
	tPath := fldPath.Child("template")
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		allErrs = append(allErrs, field.Invalid(tPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	allErrs = append(allErrs, corevalidation.ValidatePodTemplateSpec(&spec.Template, tPath)...)
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(tPath.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	allErrs = append(allErrs, nonNegative(spec.MinReadySeconds, fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, nonNegative(*spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	}
	return allErrs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdateDaemonSet(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	}
	return field.ErrorList{field.NotSupported(fldPath, *s, []appsv1.DaemonSetUpdateStrategyType{
		appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType})}
}

// validateRollingUpdateDaemonSet: both int or percent, neither over 100%,
// exactly one of them non-zero.
func validateRollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	var unavailable, surge intstr.IntOrString
	if ru.MaxUnavailable != nil {
		unavailable = *ru.MaxUnavailable
	}
	if ru.MaxSurge != nil {
		surge = *ru.MaxSurge
	}
	uPath, sPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	allErrs := validatePositiveIntOrPercent(unavailable, uPath)
	allErrs = append(allErrs, validatePositiveIntOrPercent(surge, sPath)...)
	allErrs = append(allErrs, notMoreThan100Percent(unavailable, uPath)...)
	allErrs = append(allErrs, notMoreThan100Percent(surge, sPath)...)
	hasUnavailable, hasSurge := intOrPercentValue(unavailable) != 0, intOrPercentValue(surge) != 0
	switch {
	case hasUnavailable && hasSurge:
		allErrs = append(allErrs, field.Invalid(sPath, surge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		allErrs = append(allErrs, field.Required(uPath, "cannot be 0 when maxSurge is 0"))
	}
	return allErrs
}
