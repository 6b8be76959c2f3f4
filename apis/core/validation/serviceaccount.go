package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateServiceAccount checks a service account: its metadata, with the
// name a DNS-1123 subdomain. Upstream checks nothing else.
func ValidateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	return apivalidation.ValidateObjectMeta(&sa.ObjectMeta, true, ValidateServiceAccountName, field.NewPath("metadata"))
}

// ValidateServiceAccountUpdate checks an update: metadata update rules and
// the new object valid.
func ValidateServiceAccountUpdate(sa, old *corev1.ServiceAccount) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&sa.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidateServiceAccount(sa)...)
}
