package validation

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Name rules per resource, as upstream's Validate*Name variables: most
// objects are DNS-1123 subdomains, namespaces are DNS-1123 labels and
// services are DNS-1035 labels (they become DNS names and env var names).
var (
	ValidatePodName            = apivalidation.NameIsDNSSubdomain
	ValidateNodeName           = apivalidation.NameIsDNSSubdomain
	ValidateNamespaceName      = apivalidation.NameIsDNSLabel
	ValidateConfigMapName      = apivalidation.NameIsDNSSubdomain
	ValidateSecretName         = apivalidation.NameIsDNSSubdomain
	ValidateServiceAccountName = apivalidation.NameIsDNSSubdomain
	ValidateServiceName        = apivalidation.NameIsDNS1035Label
)

const (
	isNegativeErrorMsg   = "must be greater than or equal to 0"
	isNotIntegerErrorMsg = "must be an integer"
	fileModeErrorMsg     = "must be a number between 0 and 0777 (octal), both inclusive"
)

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// nameErrors turns a name function's messages into Invalid errors.
func nameErrors(fn apivalidation.ValidateNameFunc, name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range fn(name, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}
