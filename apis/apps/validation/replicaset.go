package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateReplicaSet checks a ReplicaSet on create.
func ValidateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&rs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

// ValidateReplicaSetUpdate checks an update of a ReplicaSet: the spec as
// on create, and the selector immutable (apps/v1).
func ValidateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateReplicaSetStatusUpdate checks an update of a ReplicaSet's
// status.
func ValidateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	s := &rs.Status
	allErrs = append(allErrs, nonNegative(s.Replicas, p.Child("replicas"))...)
	allErrs = append(allErrs, nonNegative(s.FullyLabeledReplicas, p.Child("fullyLabeledReplicas"))...)
	allErrs = append(allErrs, nonNegative(s.ReadyReplicas, p.Child("readyReplicas"))...)
	allErrs = append(allErrs, nonNegative(s.AvailableReplicas, p.Child("availableReplicas"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	if s.TerminatingReplicas != nil {
		allErrs = append(allErrs, nonNegative(*s.TerminatingReplicas, p.Child("terminatingReplicas"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.FullyLabeledReplicas > s.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, msg))
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
	return allErrs
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Replicas != nil {
		allErrs = append(allErrs, nonNegative(*spec.Replicas, fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, nonNegative(spec.MinReadySeconds, fldPath.Child("minReadySeconds"))...)
	return append(allErrs, validateSelectorAndTemplate(spec.Selector, &spec.Template, fldPath)...)
}

// ValidateControllerRevision checks a ControllerRevision: data required,
// revision not negative.
func ValidateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&cr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if cr.Data.Raw == nil && cr.Data.Object == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(allErrs, apivalidation.ValidateNonnegativeField(cr.Revision, field.NewPath("revision"))...)
}

// ValidateControllerRevisionUpdate also keeps data immutable.
func ValidateControllerRevisionUpdate(cr, old *appsv1.ControllerRevision) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&cr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateControllerRevision(cr)...)
	return append(allErrs, apivalidation.ValidateImmutableField(cr.Data, old.Data, field.NewPath("data"))...)
}
