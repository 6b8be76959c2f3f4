// Package validation is upstream's validation of storagemigration.k8s.io/v1
// StorageVersionMigrations (k8s.io/kubernetes/pkg/apis/storagemigration/validation),
// ported to the v1 types with its field paths and messages.
package validation

import (
	"strings"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateStorageVersionMigration is upstream's (metadata is the Store's).
func ValidateStorageVersionMigration(svm *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	var allErrs field.ErrorList
	r := svm.Spec.Resource
	if r.Resource == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("spec", "resource", "resource"), "resource is required to be set"))
	} else if errs := validation.IsDNS1035Label(r.Resource); len(errs) > 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "resource", "resource"), r.Resource, strings.Join(errs, ",")))
	}
	if r.Group != "" {
		if errs := validation.IsDNS1123Subdomain(r.Group); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "resource", "group"), r.Group, strings.Join(errs, ",")))
		}
	}
	return allErrs
}

// ValidateStorageVersionMigrationUpdate is upstream's: the spec is
// immutable.
func ValidateStorageVersionMigrationUpdate(svm, old *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	return apivalidation.ValidateImmutableField(svm.Spec, old.Spec, field.NewPath("spec"))
}

// ValidateStorageVersionMigrationStatusUpdate is upstream's: the
// resourceVersion is set once, Succeeded and Failed exclude each other and
// stay true.
func ValidateStorageVersionMigrationStatusUpdate(svm, old *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("status")
	if old.Status.ResourceVersion != "" && svm.Status.ResourceVersion != old.Status.ResourceVersion {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("resourceVersion"), svm.Status.ResourceVersion, "field is immutable"))
	}
	conds := fldPath.Child("conditions")
	succeeded := meta.IsStatusConditionTrue(svm.Status.Conditions, string(storagemigrationv1.MigrationSucceeded))
	failed := meta.IsStatusConditionTrue(svm.Status.Conditions, string(storagemigrationv1.MigrationFailed))
	if succeeded && failed {
		allErrs = append(allErrs, field.Invalid(conds, svm.Status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if meta.IsStatusConditionTrue(old.Status.Conditions, string(storagemigrationv1.MigrationSucceeded)) && !succeeded {
		allErrs = append(allErrs, field.Invalid(conds, svm.Status.Conditions, "Success condition cannot be set to false once it is true"))
	}
	if meta.IsStatusConditionTrue(old.Status.Conditions, string(storagemigrationv1.MigrationFailed)) && !failed {
		allErrs = append(allErrs, field.Invalid(conds, svm.Status.Conditions, "Failed condition cannot be set to false once it is true"))
	}
	return allErrs
}
