// Package validation is upstream's validation of apiregistration.k8s.io/v1
// APIServices (k8s.io/kube-aggregator/pkg/apis/apiregistration/validation),
// ported to the v1 types with its field paths and messages.
package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// AnyAPIServiceName accepts every name: an APIService's name must be
// "<spec.version>.<spec.group>", which ValidateAPIService checks.
func AnyAPIServiceName(string, bool) []string { return nil }

// ValidateAPIService is upstream's ValidateAPIService.
func ValidateAPIService(s *apiregistrationv1.APIService) field.ErrorList {
	var allErrs field.ErrorList
	required := s.Spec.Version + "." + s.Spec.Group
	msgs := path.IsValidPathSegmentName(s.Name)
	if len(msgs) == 0 && s.Name != required {
		msgs = []string{fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", required)}
	}
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), s.Name, msg))
	}
	spec := field.NewPath("spec")
	if s.Spec.Group == "" && s.Spec.Version != "v1" {
		allErrs = append(allErrs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if s.Spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.Spec.Group) {
			allErrs = append(allErrs, field.Invalid(spec.Child("group"), s.Spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(s.Spec.Version) {
		allErrs = append(allErrs, field.Invalid(spec.Child("version"), s.Spec.Version, msg))
	}
	if s.Spec.GroupPriorityMinimum <= 0 || s.Spec.GroupPriorityMinimum > 20000 {
		allErrs = append(allErrs, field.Invalid(spec.Child("groupPriorityMinimum"), s.Spec.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if s.Spec.VersionPriority <= 0 || s.Spec.VersionPriority > 1000 {
		allErrs = append(allErrs, field.Invalid(spec.Child("versionPriority"), s.Spec.VersionPriority, "must be positive and less than 1000"))
	}
	if s.Spec.Service == nil {
		if len(s.Spec.CABundle) != 0 {
			allErrs = append(allErrs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(s.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if s.Spec.InsecureSkipTLSVerify {
			allErrs = append(allErrs, field.Invalid(spec.Child("insecureSkipTLSVerify"), s.Spec.InsecureSkipTLSVerify, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return allErrs
	}
	if s.Spec.Service.Namespace == "" {
		allErrs = append(allErrs, field.Required(spec.Child("service", "namespace"), ""))
	}
	if s.Spec.Service.Name == "" {
		allErrs = append(allErrs, field.Required(spec.Child("service", "name"), ""))
	}
	if s.Spec.Service.Port != nil {
		if errs := validation.IsValidPortNum(int(*s.Spec.Service.Port)); errs != nil {
			allErrs = append(allErrs, field.Invalid(spec.Child("service", "port"), *s.Spec.Service.Port, "port is not valid: "+strings.Join(errs, ", ")))
		}
	}
	if s.Spec.InsecureSkipTLSVerify && len(s.Spec.CABundle) > 0 {
		allErrs = append(allErrs, field.Invalid(spec.Child("insecureSkipTLSVerify"), s.Spec.InsecureSkipTLSVerify, "may not be true if caBundle is present"))
	}
	return allErrs
}

// ValidateAPIServiceUpdate is upstream's: the new object is valid.
func ValidateAPIServiceUpdate(s, _ *apiregistrationv1.APIService) field.ErrorList {
	return ValidateAPIService(s)
}

// ValidateAPIServiceStatusUpdate is upstream's: conditions are True, False
// or Unknown.
func ValidateAPIServiceStatusUpdate(s, _ *apiregistrationv1.APIService) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range s.Status.Conditions {
		switch c.Status {
		case apiregistrationv1.ConditionTrue, apiregistrationv1.ConditionFalse, apiregistrationv1.ConditionUnknown:
		default:
			allErrs = append(allErrs, field.NotSupported(field.NewPath("status", "conditions").Index(i).Child("status"), c.Status,
				[]string{string(apiregistrationv1.ConditionTrue), string(apiregistrationv1.ConditionFalse), string(apiregistrationv1.ConditionUnknown)}))
		}
	}
	return allErrs
}
