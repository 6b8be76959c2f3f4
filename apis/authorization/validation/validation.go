// Package validation checks authorization.k8s.io/v1 access reviews as
// kube-apiserver does, following kubernetes/kubernetes
// pkg/apis/authorization/validation, with upstream's field paths and
// messages.
package validation

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const exactlyOne = `exactly one of nonResourceAttributes or resourceAttributes must be specified`

// ValidateSubjectAccessReviewSpec checks a SubjectAccessReview's (and a
// LocalSubjectAccessReview's) spec: one kind of attributes, a user or a
// group, and well-formed selectors.
func ValidateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec.resourceAttributes"))...)
}

func validateAttributes(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	if (ra == nil) == (nra == nil) {
		return field.ErrorList{field.Invalid(fldPath, nra, exactlyOne)}
	}
	return nil
}

// ValidateSubjectAccessReview checks a SubjectAccessReview: its spec and
// empty metadata.
func ValidateSubjectAccessReview(sar *authorizationv1.SubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, emptyMetadata(sar.ObjectMeta, false)...)
}

// emptyMetadata refuses metadata beyond managed fields (and the
// namespace, when keepNamespace), as upstream.
func emptyMetadata(meta metav1.ObjectMeta, keepNamespace bool) field.ErrorList {
	m := meta
	m.ManagedFields = nil
	msg := `must be empty`
	if keepNamespace {
		m.Namespace = ""
		msg = `must be empty except for namespace`
	}
	if equality.Semantic.DeepEqual(metav1.ObjectMeta{}, m) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, msg)}
}

// ValidateSelfSubjectAccessReview checks a SelfSubjectAccessReview: one
// kind of attributes, well-formed selectors, empty metadata.
func ValidateSelfSubjectAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	allErrs := validateAttributes(sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes, field.NewPath("spec"))
	allErrs = append(allErrs, validateResourceAttributes(sar.Spec.ResourceAttributes, field.NewPath("spec.resourceAttributes"))...)
	return append(allErrs, emptyMetadata(sar.ObjectMeta, false)...)
}

// ValidateLocalSubjectAccessReview checks a LocalSubjectAccessReview:
// as a SubjectAccessReview, in its own namespace, resources only.
func ValidateLocalSubjectAccessReview(sar *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	allErrs = append(allErrs, emptyMetadata(sar.ObjectMeta, true)...)
	if sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Namespace != sar.Namespace {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), sar.Spec.ResourceAttributes.Namespace, `must match metadata.namespace`))
	}
	if sar.Spec.NonResourceAttributes != nil {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), sar.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	return allErrs
}

func validateResourceAttributes(ra *authorizationv1.ResourceAttributes, fldPath *field.Path) field.ErrorList {
	if ra == nil {
		return nil
	}
	var allErrs field.ErrorList
	if s := ra.FieldSelector; s != nil {
		p := fldPath.Child("fieldSelector")
		allErrs = append(allErrs, rawOrRequirements(s.RawSelector, len(s.Requirements), p)...)
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range s.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateFieldSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	if s := ra.LabelSelector; s != nil {
		p := fldPath.Child("labelSelector")
		allErrs = append(allErrs, rawOrRequirements(s.RawSelector, len(s.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range s.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	return allErrs
}

func rawOrRequirements(raw string, requirements int, fldPath *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements > 0:
		return field.ErrorList{field.Invalid(fldPath.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(fldPath.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", fldPath))}
	}
	return nil
}
