// Package validation checks rbac.authorization.k8s.io/v1 objects as
// kube-apiserver does, following kubernetes/kubernetes
// pkg/apis/rbac/validation, with upstream's field paths and messages.
package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRBACName is the rule for the names of roles and bindings: a
// path segment (anything but "", ".", ".." and names with "/" or "%"),
// so that "system:controller:x" is a valid name.
func ValidateRBACName(name string, _ bool) []string { return content.IsPathSegmentName(name) }

// ValidateRole checks a Role.
func ValidateRole(role *rbacv1.Role) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&role.ObjectMeta, true, ValidateRBACName, field.NewPath("metadata"))
	for i, rule := range role.Rules {
		allErrs = append(allErrs, ValidatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return allErrs
}

// ValidateRoleUpdate checks a Role update.
func ValidateRoleUpdate(role, old *rbacv1.Role) field.ErrorList {
	allErrs := ValidateRole(role)
	return append(allErrs, apivalidation.ValidateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

// ClusterRoleValidationOptions are upstream's: an update may keep an
// aggregation selector whose label values were valid under older rules.
type ClusterRoleValidationOptions struct {
	AllowInvalidLabelValueInSelector bool
}

// ValidateClusterRole checks a ClusterRole: its rules and its
// aggregation rule's selectors.
func ValidateClusterRole(role *rbacv1.ClusterRole, opts ClusterRoleValidationOptions) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&role.ObjectMeta, false, ValidateRBACName, field.NewPath("metadata"))
	for i, rule := range role.Rules {
		allErrs = append(allErrs, ValidatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.AllowInvalidLabelValueInSelector}
	if role.AggregationRule != nil {
		if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
			allErrs = append(allErrs, field.Required(field.NewPath("aggregationRule", "clusterRoleSelectors"), "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i, selector := range role.AggregationRule.ClusterRoleSelectors {
			fieldPath := field.NewPath("aggregationRule", "clusterRoleSelectors").Index(i)
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&selector, selectorOpts, fieldPath)...)
			if s, err := metav1.LabelSelectorAsSelector(&selector); err != nil {
				allErrs = append(allErrs, field.Invalid(fieldPath, s, "invalid label selector."))
			}
		}
	}
	return allErrs
}

// ValidateClusterRoleUpdate checks a ClusterRole update; a selector label
// value the old object already had invalid stays allowed, as upstream.
func ValidateClusterRoleUpdate(role, old *rbacv1.ClusterRole) field.ErrorList {
	opts := ClusterRoleValidationOptions{AllowInvalidLabelValueInSelector: hasInvalidLabelValueInSelector(old)}
	allErrs := ValidateClusterRole(role, opts)
	return append(allErrs, apivalidation.ValidateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

func hasInvalidLabelValueInSelector(role *rbacv1.ClusterRole) bool {
	if role.AggregationRule == nil {
		return false
	}
	strict := metav1validation.LabelSelectorValidationOptions{}
	for _, s := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&s, strict, nil)) > 0 {
			return true
		}
	}
	return false
}

// ValidatePolicyRule checks one rule: verbs, and either non-resource URLs
// (cluster roles only) or API groups and resources.
func ValidatePolicyRule(rule rbacv1.PolicyRule, isNamespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if isNamespaced {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}
	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

// ValidateRoleBinding checks a RoleBinding: a Role or ClusterRole of the
// RBAC group, and its subjects.
func ValidateRoleBinding(rb *rbacv1.RoleBinding) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&rb.ObjectMeta, true, ValidateRBACName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateRoleRef(rb.RoleRef, []string{"Role", "ClusterRole"})...)
	for i, s := range rb.Subjects {
		allErrs = append(allErrs, ValidateRoleBindingSubject(s, true, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// ValidateRoleBindingUpdate checks a RoleBinding update: roleRef is
// immutable.
func ValidateRoleBindingUpdate(rb, old *rbacv1.RoleBinding) field.ErrorList {
	allErrs := ValidateRoleBinding(rb)
	allErrs = append(allErrs, apivalidation.ValidateObjectMetaUpdate(&rb.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(rb.RoleRef, old.RoleRef, field.NewPath("roleRef"))...)
}

// ValidateClusterRoleBinding checks a ClusterRoleBinding: a ClusterRole
// of the RBAC group, and its subjects (ServiceAccounts with a namespace).
func ValidateClusterRoleBinding(rb *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&rb.ObjectMeta, false, ValidateRBACName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateRoleRef(rb.RoleRef, []string{"ClusterRole"})...)
	for i, s := range rb.Subjects {
		allErrs = append(allErrs, ValidateRoleBindingSubject(s, false, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// ValidateClusterRoleBindingUpdate checks a ClusterRoleBinding update:
// roleRef is immutable.
func ValidateClusterRoleBindingUpdate(rb, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := ValidateClusterRoleBinding(rb)
	allErrs = append(allErrs, apivalidation.ValidateObjectMetaUpdate(&rb.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(rb.RoleRef, old.RoleRef, field.NewPath("roleRef"))...)
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("roleRef", "apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("roleRef", "kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("roleRef", "name"), ""))
	} else {
		for _, msg := range ValidateRBACName(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("roleRef", "name"), ref.Name, msg))
		}
	}
	return allErrs
}

// ValidateRoleBindingSubject checks one subject: a ServiceAccount (a
// valid name, the core group, a namespace in cluster bindings), a User
// or a Group (the RBAC group).
func ValidateRoleBindingSubject(subject rbacv1.Subject, isNamespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if subject.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch subject.Kind {
	case rbacv1.ServiceAccountKind:
		if subject.Name != "" {
			for _, msg := range apivalidation.ValidateServiceAccountName(subject.Name, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), subject.Name, msg))
			}
		}
		if subject.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), subject.APIGroup, []string{""}))
		}
		if !isNamespaced && subject.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if subject.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), subject.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), subject.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}
