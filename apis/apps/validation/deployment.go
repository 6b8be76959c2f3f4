package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateDeployment checks a Deployment on create.
func ValidateDeployment(d *appsv1.Deployment) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&d.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

// ValidateDeploymentUpdate checks an update of a Deployment: the spec as
// on create, and the selector immutable (apps/v1).
func ValidateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateDeploymentStatusUpdate checks an update of a Deployment's
// status.
func ValidateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	s := &d.Status
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	allErrs = append(allErrs, nonNegative(s.Replicas, p.Child("replicas"))...)
	allErrs = append(allErrs, nonNegative(s.UpdatedReplicas, p.Child("updatedReplicas"))...)
	allErrs = append(allErrs, nonNegative(s.ReadyReplicas, p.Child("readyReplicas"))...)
	allErrs = append(allErrs, nonNegative(s.AvailableReplicas, p.Child("availableReplicas"))...)
	allErrs = append(allErrs, nonNegative(s.UnavailableReplicas, p.Child("unavailableReplicas"))...)
	if s.TerminatingReplicas != nil {
		allErrs = append(allErrs, nonNegative(*s.TerminatingReplicas, p.Child("terminatingReplicas"))...)
	}
	if s.CollisionCount != nil {
		allErrs = append(allErrs, nonNegative(*s.CollisionCount, p.Child("collisionCount"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.UpdatedReplicas > s.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("updatedReplicas"), s.UpdatedReplicas, msg))
	}
	if s.ReadyReplicas > s.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		allErrs = append(allErrs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	if decremented(s.CollisionCount, old.Status.CollisionCount) {
		allErrs = append(allErrs, field.Invalid(p.Child("collisionCount"), valueOf(s.CollisionCount), "cannot be decremented"))
	}
	return allErrs
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Replicas != nil {
		allErrs = append(allErrs, nonNegative(*spec.Replicas, fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, validateSelectorAndTemplate(spec.Selector, &spec.Template, fldPath)...)
	allErrs = append(allErrs, validateStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	allErrs = append(allErrs, nonNegative(spec.MinReadySeconds, fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, nonNegative(*spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		allErrs = append(allErrs, nonNegative(*spec.ProgressDeadlineSeconds, fldPath.Child("progressDeadlineSeconds"))...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("progressDeadlineSeconds"), spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

func validateStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return append(allErrs, field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		}
		p := fldPath.Child("rollingUpdate")
		var maxUnavailable, maxSurge intstr.IntOrString
		if s.RollingUpdate.MaxUnavailable != nil {
			maxUnavailable = *s.RollingUpdate.MaxUnavailable
		}
		if s.RollingUpdate.MaxSurge != nil {
			maxSurge = *s.RollingUpdate.MaxSurge
		}
		allErrs = append(allErrs, validatePositiveIntOrPercent(maxUnavailable, p.Child("maxUnavailable"))...)
		allErrs = append(allErrs, validatePositiveIntOrPercent(maxSurge, p.Child("maxSurge"))...)
		if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		if n, ok := percentValue(maxUnavailable); ok && n > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxUnavailable"), maxUnavailable, "must not be greater than 100%"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, s, []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}))
	}
	return allErrs
}

func decremented(v, old *int32) bool {
	if v == nil {
		return old != nil
	}
	return old != nil && *v < *old
}

func valueOf(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
