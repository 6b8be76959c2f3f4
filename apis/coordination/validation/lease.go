package validation

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateLeaseName is the rule for lease names: a DNS-1123 subdomain.
var ValidateLeaseName = apivalidation.NameIsDNSSubdomain

var validStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// ValidateLease checks a lease on create: metadata (namespaced, name a
// DNS-1123 subdomain) and spec.
func ValidateLease(lease *coordinationv1.Lease) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&lease.ObjectMeta, true, ValidateLeaseName, field.NewPath("metadata"))
	return append(allErrs, ValidateLeaseSpec(&lease.Spec, field.NewPath("spec"))...)
}

// ValidateLeaseUpdate checks an update: metadata update rules and spec.
// Every spec field may change (that is what a lease is for).
func ValidateLeaseUpdate(lease, old *coordinationv1.Lease) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&lease.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidateLeaseSpec(&lease.Spec, field.NewPath("spec"))...)
}

// ValidateLeaseSpec: a positive duration, non-negative transitions, a
// known strategy, and a preferred holder only with a strategy.
func ValidateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseDurationSeconds"), d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseTransitions"), t, "must be greater than or equal to 0"))
	}
	if s := spec.Strategy; s != nil {
		allErrs = append(allErrs, validateStrategy(*s, fldPath.Child("strategy"))...)
	}
	if h := spec.PreferredHolder; h != nil && *h != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

// validateStrategy: a strategy without a domain must be one Kubernetes
// defines; one with a domain ("example.com/mine") must be a qualified name.
func validateStrategy(s coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !strings.Contains(string(s), "/") {
		if !slices.Contains(validStrategies, s) {
			allErrs = append(allErrs, field.NotSupported(fldPath, s, validStrategies))
		}
		return allErrs
	}
	for _, msg := range validation.IsQualifiedName(string(s)) {
		allErrs = append(allErrs, field.Invalid(fldPath, s, msg))
	}
	return allErrs
}
