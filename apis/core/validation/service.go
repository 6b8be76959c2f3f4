package validation

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedSessionAffinities = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	supportedServiceTypes      = []corev1.ServiceType{
		corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort,
	}
	supportedInternalTrafficPolicies = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	supportedExternalTrafficPolicies = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	supportedIPFamilies              = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	supportedIPFamilyPolicies        = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
)

// ValidateService checks a service object as upstream's ValidateService:
// name a DNS-1035 label; ports (required unless headless or ExternalName,
// names required when more than one and unique DNS-1123 labels, port
// numbers, protocols, targetPort, no duplicate port/protocol or node port);
// type; selector labels; session affinity and its config; cluster IPs
// consistent with clusterIP; IP families and policy; external IPs;
// external/internal traffic policies; load balancer-only fields.
//
// It expects a defaulted service whose spec.clusterIPs the registry has
// already filled from spec.clusterIP, as upstream's strategy does
// (defaults.NormalizeServiceClusterIPs). Left out: load balancer class,
// traffic distribution, the topology annotations, the source-ranges
// annotation and the rule against special external IPs (loopback,
// link-local).
func ValidateService(svc *corev1.Service) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&svc.ObjectMeta, true, ValidateServiceName, field.NewPath("metadata"))
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	portsPath := specPath.Child("ports")
	headless := isHeadlessService(svc)

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, field.Required(portsPath, ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// A trailing dot marks the CNAME as fully qualified.
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			allErrs = append(allErrs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			allErrs = append(allErrs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	names := map[string]bool{}
	for i := range spec.Ports {
		allErrs = append(allErrs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, portsPath.Index(i))...)
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metavalidation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}

	switch spec.SessionAffinity {
	case "":
		allErrs = append(allErrs, field.Required(specPath.Child("sessionAffinity"), ""))
	case corev1.ServiceAffinityClientIP:
		allErrs = append(allErrs, validateClientIPAffinityConfig(spec.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("sessionAffinityConfig"), "must not be set when session affinity is None"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, supportedSessionAffinities))
	}

	allErrs = append(allErrs, validateServiceClusterIPs(svc)...)
	for i, ip := range spec.ExternalIPs {
		allErrs = append(allErrs, validation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}

	if spec.Type == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("type"), ""))
	} else if !contains(supportedServiceTypes, spec.Type) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("type"), spec.Type, supportedServiceTypes))
	}
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i := range spec.Ports {
			if spec.Ports[i].NodePort != 0 {
				allErrs = append(allErrs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}

	// Ports and node ports are unique per protocol.
	type protoPort struct {
		proto corev1.Protocol
		port  int32
	}
	nodePorts := map[protoPort]bool{}
	ports := map[protoPort]bool{}
	for i, p := range spec.Ports {
		if p.NodePort != 0 {
			key := protoPort{p.Protocol, p.NodePort}
			if nodePorts[key] {
				allErrs = append(allErrs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
			}
			nodePorts[key] = true
		}
		key := protoPort{p.Protocol, p.Port}
		if ports[key] {
			allErrs = append(allErrs, field.Duplicate(portsPath.Index(i), corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		}
		ports[key] = true
	}

	if len(spec.LoadBalancerSourceRanges) > 0 {
		// Upstream's path is capitalised here.
		rangesPath := specPath.Child("LoadBalancerSourceRanges")
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Forbidden(rangesPath, "may only be used when `type` is 'LoadBalancer'"))
		}
		for i, v := range spec.LoadBalancerSourceRanges {
			allErrs = append(allErrs, validation.IsValidCIDR(rangesPath.Index(i), strings.TrimSpace(v))...)
		}
	}
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		// Upstream reports this one without the "spec." prefix.
		allErrs = append(allErrs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	allErrs = append(allErrs, validateServiceTrafficPolicies(svc)...)
	return allErrs
}

// ValidateServiceUpdate checks an update of a service: metadata update
// rules, cluster IPs fixed once set (a secondary may be added or removed;
// anything goes to, from or on ExternalName), and the new object valid.
//
// Upstream's registry copies the allocated IPs from the old object into an
// update that omits them before validating; the registry must do the same.
func ValidateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateClusterIPsUpdate(svc, old)...)
	return append(allErrs, ValidateService(svc)...)
}

func validateClusterIPsUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadlessService(svc) && isHeadlessService(old) {
		return nil
	}
	var allErrs field.ErrorList
	ipsPath := field.NewPath("spec", "clusterIPs")
	newIPs, oldIPs := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
	const msg = "may not change once set"
	switch {
	case len(oldIPs) == len(newIPs):
		for i, ip := range oldIPs {
			if ip != newIPs[i] {
				allErrs = append(allErrs, field.Invalid(ipsPath.Index(i), newIPs, msg))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			allErrs = append(allErrs, field.Invalid(ipsPath.Index(0), newIPs, "primary clusterIP can not be unset"))
		} else if newIPs[0] != oldIPs[0] {
			allErrs = append(allErrs, field.Invalid(ipsPath.Index(0), newIPs, msg))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			allErrs = append(allErrs, field.Invalid(ipsPath.Index(0), newIPs, msg))
		}
	}
	return allErrs
}

// ValidateServiceStatusUpdate checks a write to services/status: only the
// metadata update rules and the load balancer ingress IPs.
func ValidateServiceStatusUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	ingressPath := field.NewPath("status", "loadBalancer", "ingress")
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			allErrs = append(allErrs, validation.IsValidIP(ingressPath.Index(i).Child("ip"), ing.IP)...)
		}
		if ing.Hostname != "" {
			allErrs = append(allErrs, validateDNS1123Subdomain(ing.Hostname, ingressPath.Index(i).Child("hostname"))...)
		}
	}
	return allErrs
}

func isHeadlessService(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

func validateServicePort(sp *corev1.ServicePort, requireName bool, names map[string]bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if requireName && sp.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if sp.Name != "" {
		allErrs = append(allErrs, validateDNS1123Label(sp.Name, fldPath.Child("name"))...)
		if names[sp.Name] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("name"), sp.Name))
		}
		names[sp.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("port"), sp.Port, msg))
	}
	allErrs = append(allErrs, validateProtocol(sp.Protocol, fldPath.Child("protocol"))...)
	allErrs = append(allErrs, validatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		allErrs = append(allErrs, validateQualifiedName(*sp.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return allErrs
}

func validateClientIPAffinityConfig(cfg *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	if cfg == nil {
		return field.ErrorList{field.Required(fldPath, "when session affinity type is ClientIP")}
	}
	if cfg.ClientIP == nil {
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), "when session affinity type is ClientIP")}
	}
	if cfg.ClientIP.TimeoutSeconds == nil {
		return field.ErrorList{field.Required(fldPath.Child("clientIP").Child("timeoutSeconds"), "when session affinity type is ClientIP")}
	}
	const maxTimeout = 86400
	if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxTimeout {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP").Child("timeoutSeconds"), t,
			fmt.Sprintf("must be greater than 0 and less than %d", maxTimeout))}
	}
	return nil
}

// validateServiceClusterIPs: clusterIPs mirrors clusterIP, holds at most
// two valid IPs or "None" alone; families and policy take known values.
func validateServiceClusterIPs(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	ipsPath := specPath.Child("clusterIPs")
	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			allErrs = append(allErrs, field.Required(ipsPath, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, f := range spec.IPFamilies {
		if !contains(supportedIPFamilies, f) {
			allErrs = append(allErrs, field.NotSupported(specPath.Child("ipFamilies").Index(i), f, supportedIPFamilies))
		}
		if seen[f] {
			allErrs = append(allErrs, field.Duplicate(specPath.Child("ipFamilies").Index(i), f))
		}
		seen[f] = true
	}
	if p := spec.IPFamilyPolicy; p != nil && !contains(supportedIPFamilyPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, supportedIPFamilyPolicies))
	}
	invalidIPs := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				invalidIPs = true
				allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		errs := validation.IsValidIPForLegacyField(ipsPath.Index(i), ip, true, nil)
		invalidIPs = invalidIPs || len(errs) > 0
		allErrs = append(allErrs, errs...)
	}
	if len(spec.ClusterIPs) > 2 {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	// Bad IPs would make the family checks below meaningless.
	if invalidIPs {
		return allErrs
	}
	if len(spec.ClusterIPs) == 2 && isIPv6(spec.ClusterIPs[0]) == isIPv6(spec.ClusterIPs[1]) {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !isHeadlessService(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			switch {
			case spec.IPFamilies[i] == corev1.IPv4Protocol && isIPv6(ip):
				allErrs = append(allErrs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			case spec.IPFamilies[i] == corev1.IPv6Protocol && !isIPv6(ip):
				allErrs = append(allErrs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return allErrs
}

// externallyAccessible is upstream's service.ExternallyAccessible.
func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func validateServiceTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	if !externallyAccessible(svc) {
		if spec.ExternalTrafficPolicy != "" {
			allErrs = append(allErrs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else if spec.ExternalTrafficPolicy == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
	} else if !contains(supportedExternalTrafficPolicies, spec.ExternalTrafficPolicy) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, supportedExternalTrafficPolicies))
	}
	needsHealthCheck := spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if !needsHealthCheck && spec.HealthCheckNodePort != 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP:
			allErrs = append(allErrs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else if !contains(supportedInternalTrafficPolicies, *spec.InternalTrafficPolicy) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *spec.InternalTrafficPolicy, supportedInternalTrafficPolicies))
	}
	return allErrs
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func isIPv6(ip string) bool {
	parsed := net.ParseIP(ip)
	return parsed != nil && parsed.To4() == nil
}
