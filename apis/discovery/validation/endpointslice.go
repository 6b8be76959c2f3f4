// Package validation is upstream's validation of discovery.k8s.io/v1
// EndpointSlices (pkg/apis/discovery/validation), with its field paths
// and messages.
package validation

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	corevalidation "github.com/kite-project/kite/apis/core/validation"
)

// Upstream's limits.
const (
	maxTopologyLabels = 16
	maxAddresses      = 100
	maxPorts          = 20000
	maxEndpoints      = 1000
	maxZoneHints      = 8
	maxNodeHints      = 8
)

var supportedAddressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// ValidateEndpointSlice checks a slice on create (old nil) and update:
// on update the address type is immutable, and endpoints left as they
// were are not checked again.
func ValidateEndpointSlice(slice, old *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&slice.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if old != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateObjectMetaUpdate(&slice.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	}
	switch {
	case slice.AddressType == "":
		allErrs = append(allErrs, field.Required(field.NewPath("addressType"), ""))
	case !slices.Contains(supportedAddressTypes, slice.AddressType):
		allErrs = append(allErrs, field.NotSupported(field.NewPath("addressType"), slice.AddressType, supportedAddressTypes))
	}
	allErrs = append(allErrs, validatePorts(slice.Ports, field.NewPath("ports"))...)
	endpointsErrs := validateEndpoints(slice.Endpoints, slice.AddressType, field.NewPath("endpoints"))
	if len(endpointsErrs) != 0 && old != nil && apiequality.Semantic.DeepEqual(old.Endpoints, slice.Endpoints) {
		endpointsErrs = nil
	}
	allErrs = append(allErrs, endpointsErrs...)
	if old != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(slice.AddressType, old.AddressType, field.NewPath("addressType"))...)
	}
	return allErrs
}

func validateEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(endpoints) > maxEndpoints {
		return append(allErrs, field.TooMany(fldPath, len(endpoints), maxEndpoints))
	}
	for i, ep := range endpoints {
		idxPath := fldPath.Index(i)
		addressPath := idxPath.Child("addresses")
		if len(ep.Addresses) == 0 {
			allErrs = append(allErrs, field.Required(addressPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxAddresses {
			allErrs = append(allErrs, field.TooMany(addressPath, len(ep.Addresses), maxAddresses))
		}
		for j, address := range ep.Addresses {
			switch addrType {
			case discoveryv1.AddressTypeIPv4:
				if errs := validation.IsValidIPForLegacyField(addressPath.Index(j), address, true, nil); len(errs) > 0 {
					allErrs = append(allErrs, errs...)
					continue
				}
				if !netutils.IsIPv4String(address) {
					allErrs = append(allErrs, field.Invalid(addressPath, address, "must be an IPv4 address"))
				}
				allErrs = append(allErrs, corevalidation.ValidateEndpointIP(address, addressPath.Index(j))...)
			case discoveryv1.AddressTypeIPv6:
				if errs := validation.IsValidIP(addressPath.Index(j), address); len(errs) > 0 {
					allErrs = append(allErrs, errs...)
					continue
				}
				if !netutils.IsIPv6String(address) {
					allErrs = append(allErrs, field.Invalid(addressPath, address, "must be an IPv6 address"))
				}
				allErrs = append(allErrs, corevalidation.ValidateEndpointIP(address, addressPath.Index(j))...)
			case discoveryv1.AddressTypeFQDN:
				allErrs = append(allErrs, validation.IsFullyQualifiedDomainName(addressPath.Index(j), address)...)
			}
		}
		if ep.NodeName != nil {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		topologyPath := idxPath.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			allErrs = append(allErrs, field.TooMany(topologyPath, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		allErrs = append(allErrs, metavalidation.ValidateLabels(ep.DeprecatedTopology, topologyPath)...)
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.Hints != nil {
			allErrs = append(allErrs, validateHints(ep.Hints, idxPath.Child("hints"))...)
		}
	}
	return allErrs
}

func validatePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(ports) > maxPorts {
		return append(allErrs, field.TooMany(fldPath, len(ports), maxPorts))
	}
	names := make([]string, 0, len(ports))
	for i, p := range ports {
		idxPath := fldPath.Index(i)
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name != "" {
			allErrs = append(allErrs, corevalidation.ValidateEndpointPortName(name, idxPath.Child("name"))...)
		}
		if slices.Contains(names, name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), p.Name))
		} else {
			names = append(names, name)
		}
		if p.Protocol == nil {
			allErrs = append(allErrs, field.Required(idxPath.Child("protocol"), ""))
		} else if *p.Protocol != corev1.ProtocolTCP && *p.Protocol != corev1.ProtocolUDP && *p.Protocol != corev1.ProtocolSCTP {
			allErrs = append(allErrs, corevalidation.ValidateEndpointProtocol(p.Protocol, idxPath.Child("protocol"))...)
		}
		if p.AppProtocol != nil {
			allErrs = append(allErrs, corevalidation.ValidateAppProtocol(*p.AppProtocol, idxPath.Child("appProtocol"))...)
		}
	}
	return allErrs
}

func validateHints(hints *discoveryv1.EndpointHints, fldPath *field.Path) field.ErrorList {
	fzPath := fldPath.Child("forZones")
	if len(hints.ForZones) > maxZoneHints {
		return field.ErrorList{field.TooMany(fzPath, len(hints.ForZones), maxZoneHints)}
	}
	zones := make([]string, len(hints.ForZones))
	for i, z := range hints.ForZones {
		zones[i] = z.Name
	}
	allErrs := uniqueNames(zones, fzPath, validation.IsValidLabelValue)
	fnPath := fldPath.Child("forNodes")
	if len(hints.ForNodes) > maxNodeHints {
		return append(allErrs, field.TooMany(fnPath, len(hints.ForNodes), maxNodeHints))
	}
	nodes := make([]string, len(hints.ForNodes))
	for i, n := range hints.ForNodes {
		nodes[i] = n.Name
	}
	return append(allErrs, uniqueNames(nodes, fnPath, func(n string) []string { return apimachineryvalidation.NameIsDNSSubdomain(n, false) })...)
}

// uniqueNames checks the hints' names at path[i].name: each once, each
// valid by check.
func uniqueNames(names []string, path *field.Path, check func(string) []string) field.ErrorList {
	var allErrs field.ErrorList
	for i, name := range names {
		p := path.Index(i).Child("name")
		if slices.Contains(names[:i], name) {
			allErrs = append(allErrs, field.Duplicate(p, name))
		}
		for _, msg := range check(name) {
			allErrs = append(allErrs, field.Invalid(p, name, msg))
		}
	}
	return allErrs
}
