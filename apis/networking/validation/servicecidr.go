package validation

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ValidateIPAddressName is upstream's: the name is an IP address in its
// canonical form.
func ValidateIPAddressName(name string, _ bool) []string {
	var errs []string
	for _, err := range validation.IsValidIP(&field.Path{}, name) {
		errs = append(errs, err.Detail)
	}
	return errs
}

// ValidateIPAddress checks an IPAddress on create: its name and a
// complete parentRef.
func ValidateIPAddress(ip *networkingv1.IPAddress) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&ip.ObjectMeta, false, ValidateIPAddressName, field.NewPath("metadata"))
	return append(allErrs, validateParentReference(ip.Spec.ParentRef, field.NewPath("spec"))...)
}

func validateParentReference(ref *networkingv1.ParentReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref == nil {
		return append(allErrs, field.Required(fldPath.Child("parentRef"), ""))
	}
	fldPath = fldPath.Child("parentRef")
	// The core group of Services is "", so group cannot be required.
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("group"), ref.Group, msg))
		}
	}
	segment := func(name, value string, required bool) {
		switch {
		case value == "" && required:
			allErrs = append(allErrs, field.Required(fldPath.Child(name), ""))
		case value != "":
			for _, msg := range content.IsPathSegmentName(value) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child(name), value, msg))
			}
		}
	}
	segment("resource", ref.Resource, true)
	segment("name", ref.Name, true)
	segment("namespace", ref.Namespace, false)
	return allErrs
}

// ValidateIPAddressUpdate: the parentRef is immutable.
func ValidateIPAddressUpdate(ip, old *networkingv1.IPAddress) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&ip.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, apimachineryvalidation.ValidateImmutableField(ip.Spec.ParentRef, old.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}

// ValidateServiceCIDRName is upstream's: a DNS-1123 subdomain.
var ValidateServiceCIDRName = apimachineryvalidation.NameIsDNSSubdomain

// ValidateServiceCIDR checks a ServiceCIDR on create: one or two CIDRs,
// one of each IP family.
func ValidateServiceCIDR(c *networkingv1.ServiceCIDR) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, ValidateServiceCIDRName, field.NewPath("metadata"))
	return append(allErrs, validateServiceCIDRSpec(&c.Spec, field.NewPath("spec", "cidrs"))...)
}

func validateServiceCIDRSpec(spec *networkingv1.ServiceCIDRSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case len(spec.CIDRs) == 0:
		return append(allErrs, field.Required(fldPath, "at least one CIDR required"))
	case len(spec.CIDRs) > 2:
		return append(allErrs, field.Invalid(fldPath, spec, "may only hold up to 2 values"))
	}
	for i, cidr := range spec.CIDRs {
		allErrs = append(allErrs, validation.IsValidCIDR(fldPath.Index(i), cidr)...)
	}
	if len(spec.CIDRs) == 2 {
		a, b := netutils.IPFamilyOfCIDRString(spec.CIDRs[0]), netutils.IPFamilyOfCIDRString(spec.CIDRs[1])
		if a == b && a != netutils.IPFamilyUnknown {
			allErrs = append(allErrs, field.Invalid(fldPath, spec.CIDRs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return allErrs
}

// ValidateServiceCIDRUpdate: the CIDRs are immutable, but a single-stack
// ServiceCIDR may gain a second CIDR (upstream issue 131261).
func ValidateServiceCIDRUpdate(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	cidrs := field.NewPath("spec", "cidrs")
	switch {
	case len(old.Spec.CIDRs) == len(c.Spec.CIDRs):
		for i, cidr := range old.Spec.CIDRs {
			if cidr != c.Spec.CIDRs[i] {
				allErrs = append(allErrs, field.Invalid(cidrs.Index(i), c.Spec.CIDRs[i], apimachineryvalidation.FieldImmutableErrorMsg))
			}
		}
	case len(old.Spec.CIDRs) == 1 && len(c.Spec.CIDRs) == 2:
		if c.Spec.CIDRs[0] != old.Spec.CIDRs[0] {
			allErrs = append(allErrs, field.Invalid(cidrs.Index(0), c.Spec.CIDRs[0], apimachineryvalidation.FieldImmutableErrorMsg))
		}
		allErrs = append(allErrs, validateServiceCIDRSpec(&c.Spec, cidrs)...)
	default:
		allErrs = append(allErrs, field.Invalid(cidrs, c.Spec.CIDRs, apimachineryvalidation.FieldImmutableErrorMsg))
	}
	return allErrs
}

// ValidateServiceCIDRStatusUpdate checks the metadata only, as upstream.
func ValidateServiceCIDRStatusUpdate(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
}
