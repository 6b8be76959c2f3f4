// Package validation checks policy/v1 objects (PodDisruptionBudgets,
// Evictions) as upstream's pkg/apis/policy/validation does, with its field
// paths and messages.
package validation

import (
	"strconv"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedUnhealthyPodEvictionPolicies are upstream's, in its sorted
// order (the NotSupported message lists them).
var supportedUnhealthyPodEvictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

// ValidatePodDisruptionBudget checks a PodDisruptionBudget's spec on
// create. allowInvalidLabelValue is upstream's
// AllowInvalidLabelValueInSelector: true on an update of an object whose
// selector already had such a value.
func ValidatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget, allowInvalidLabelValue bool) field.ErrorList {
	return validateSpec(&pdb.Spec, allowInvalidLabelValue, field.NewPath("spec"))
}

// HasInvalidLabelValueInSelector is upstream's
// hasInvalidLabelValueInLabelSelector: an update keeps accepting a
// selector value an older release let in.
func HasInvalidLabelValueInSelector(pdb *policyv1.PodDisruptionBudget) bool {
	if pdb.Spec.Selector == nil {
		return false
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: false}
	return len(metav1validation.ValidateLabelSelector(pdb.Spec.Selector, opts, nil)) > 0
}

func validateSpec(spec *policyv1.PodDisruptionBudgetSpec, allowInvalidLabelValue bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		allErrs = append(allErrs, validatePositiveIntOrPercent(*spec.MinAvailable, fldPath.Child("minAvailable"))...)
		allErrs = append(allErrs, isNotMoreThan100Percent(*spec.MinAvailable, fldPath.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		allErrs = append(allErrs, validatePositiveIntOrPercent(*spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
		allErrs = append(allErrs, isNotMoreThan100Percent(*spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, opts, fldPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.AlwaysAllow && *p != policyv1.IfHealthyBudget {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, supportedUnhealthyPodEvictionPolicies))
	}
	return allErrs
}

// ValidatePodDisruptionBudgetStatusUpdate checks the status an update of
// pods/status writes (policy/v1: no counter may be negative).
func ValidatePodDisruptionBudgetStatusUpdate(status, _ *policyv1.PodDisruptionBudgetStatus, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(status.DisruptionsAllowed), fldPath.Child("disruptionsAllowed"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(status.CurrentHealthy), fldPath.Child("currentHealthy"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(status.DesiredHealthy), fldPath.Child("desiredHealthy"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(status.ExpectedPods), fldPath.Child("expectedPods"))...)
	return allErrs
}

// validatePositiveIntOrPercent is upstream's apps ValidatePositiveIntOrPercent.
func validatePositiveIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(v.IntValue()), fldPath)...)
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%')"))
	}
	return allErrs
}

// isNotMoreThan100Percent is upstream's apps IsNotMoreThan100Percent.
func isNotMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return nil
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}
