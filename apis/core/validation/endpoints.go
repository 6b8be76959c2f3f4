package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ValidateEndpoints is upstream's validation of core/v1 Endpoints on
// create (old nil) and update: on update, subsets left as they were are
// not checked again (older servers accepted more).
func ValidateEndpoints(ep, old *corev1.Endpoints) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&ep.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if old != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateObjectMetaUpdate(&ep.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	}
	subsetErrs := validateEndpointSubsets(ep.Subsets, field.NewPath("subsets"))
	if len(subsetErrs) != 0 && old != nil && apiequality.Semantic.DeepEqual(old.Subsets, ep.Subsets) {
		subsetErrs = nil
	}
	return append(allErrs, subsetErrs...)
}

func validateEndpointSubsets(subsets []corev1.EndpointSubset, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range subsets {
		ss := &subsets[i]
		idxPath := fldPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idxPath, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.Addresses[j], idxPath.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.NotReadyAddresses[j], idxPath.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			allErrs = append(allErrs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, idxPath.Child("ports").Index(j))...)
		}
	}
	return allErrs
}

func validateEndpointAddress(address *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	allErrs := validation.IsValidIPForLegacyField(fldPath.Child("ip"), address.IP, true, nil)
	if len(address.Hostname) > 0 {
		allErrs = append(allErrs, validateDNS1123Label(address.Hostname, fldPath.Child("hostname"))...)
	}
	if address.NodeName != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*address.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), *address.NodeName, msg))
		}
	}
	return append(allErrs, ValidateEndpointIP(address.IP, fldPath.Child("ip"))...)
}

// ValidateEndpointIP is upstream's check of Endpoints' and EndpointSlices'
// addresses: no unspecified, loopback or link-local address.
func ValidateEndpointIP(ipAddress string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ip := netutils.ParseIPSloppy(ipAddress)
	if ip == nil {
		return append(allErrs, field.Invalid(fldPath, ipAddress, "must be a valid IP address"))
	}
	if ip.IsUnspecified() {
		allErrs = append(allErrs, field.Invalid(fldPath, ipAddress, fmt.Sprintf("may not be unspecified (%v)", ipAddress)))
	}
	if ip.IsLoopback() {
		allErrs = append(allErrs, field.Invalid(fldPath, ipAddress, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		allErrs = append(allErrs, field.Invalid(fldPath, ipAddress, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		allErrs = append(allErrs, field.Invalid(fldPath, ipAddress, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return allErrs
}

var supportedEndpointProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if requireName && len(port.Name) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if len(port.Name) != 0 {
		allErrs = append(allErrs, validateDNS1123Label(port.Name, fldPath.Child("name"))...)
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("port"), port.Port, msg))
	}
	allErrs = append(allErrs, ValidateEndpointProtocol(&port.Protocol, fldPath.Child("protocol"))...)
	if port.AppProtocol != nil {
		allErrs = append(allErrs, validateQualifiedName(*port.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return allErrs
}

// ValidateEndpointProtocol: required, and TCP, UDP or SCTP.
func ValidateEndpointProtocol(p *corev1.Protocol, fldPath *field.Path) field.ErrorList {
	switch {
	case p == nil || *p == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case *p != corev1.ProtocolTCP && *p != corev1.ProtocolUDP && *p != corev1.ProtocolSCTP:
		return field.ErrorList{field.NotSupported(fldPath, *p, supportedEndpointProtocols)}
	}
	return nil
}

// ValidateEndpointPortName and ValidateAppProtocol are the checks of an
// EndpointSlice port's name and appProtocol.
func ValidateEndpointPortName(name string, fldPath *field.Path) field.ErrorList {
	return validateDNS1123Label(name, fldPath)
}

func ValidateAppProtocol(p string, fldPath *field.Path) field.ErrorList {
	return validateQualifiedName(p, fldPath)
}
