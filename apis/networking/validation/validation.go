// Package validation is upstream's validation of networking.k8s.io/v1
// Ingresses, IngressClasses and NetworkPolicies
// (k8s.io/kubernetes/pkg/apis/networking/validation), ported to the v1
// types with its field paths and messages.
package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

const (
	maxLenIngressClassController = 250
	annotationIngressClass       = "kubernetes.io/ingress.class"
)

var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
	supportedPathTypes   = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
)

// ValidateNetworkPolicy is upstream's ValidateNetworkPolicy (metadata is
// the Store's).
func ValidateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	return validateNetworkPolicySpec(&np.Spec, field.NewPath("spec"))
}

// ValidateNetworkPolicyUpdate is upstream's: the spec is validated again.
func ValidateNetworkPolicyUpdate(np, _ *networkingv1.NetworkPolicy) field.ErrorList {
	return ValidateNetworkPolicy(np)
}

func validateNetworkPolicySpec(spec *networkingv1.NetworkPolicySpec, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(&spec.PodSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("podSelector"))
	for i, ingress := range spec.Ingress {
		p := fldPath.Child("ingress").Index(i)
		for j := range ingress.Ports {
			allErrs = append(allErrs, validateNetworkPolicyPort(&ingress.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range ingress.From {
			allErrs = append(allErrs, validateNetworkPolicyPeer(&ingress.From[j], p.Child("from").Index(j))...)
		}
	}
	for i, egress := range spec.Egress {
		p := fldPath.Child("egress").Index(i)
		for j := range egress.Ports {
			allErrs = append(allErrs, validateNetworkPolicyPort(&egress.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range egress.To {
			allErrs = append(allErrs, validateNetworkPolicyPeer(&egress.To[j], p.Child("to").Index(j))...)
		}
	}
	allowed := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(spec.PolicyTypes) > len(allowed) {
		return append(allErrs, field.Invalid(fldPath.Child("policyTypes"), &spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, pType := range spec.PolicyTypes {
		if !slices.Contains(allowed, string(pType)) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("policyTypes").Index(i), pType, allowed))
		}
	}
	return allErrs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, portPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if port.Protocol != nil && *port.Protocol != corev1.ProtocolTCP && *port.Protocol != corev1.ProtocolUDP && *port.Protocol != corev1.ProtocolSCTP {
		allErrs = append(allErrs, field.NotSupported(portPath.Child("protocol"), *port.Protocol, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			allErrs = append(allErrs, field.Invalid(portPath.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == 0: // an integer
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			allErrs = append(allErrs, field.Invalid(portPath.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				allErrs = append(allErrs, field.Invalid(portPath.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				allErrs = append(allErrs, field.Invalid(portPath.Child("endPort"), *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			allErrs = append(allErrs, field.Invalid(portPath.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			allErrs = append(allErrs, field.Invalid(portPath.Child("port"), port.Port.StrVal, msg))
		}
	}
	return allErrs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, peerPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	n := 0
	if peer.PodSelector != nil {
		n++
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.PodSelector, metav1validation.LabelSelectorValidationOptions{}, peerPath.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, peerPath.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		allErrs = append(allErrs, validateIPBlock(peer.IPBlock, peerPath.Child("ipBlock"))...)
		if n > 0 {
			return append(allErrs, field.Forbidden(peerPath, "may not specify both ipBlock and another peer"))
		}
		n++
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(peerPath, "must specify a peer"))
	}
	return allErrs
}

func validateIPBlock(ipb *networkingv1.IPBlock, fldPath *field.Path) field.ErrorList {
	if ipb.CIDR == "" {
		return field.ErrorList{field.Required(fldPath.Child("cidr"), "")}
	}
	_, cidr, err := netutils.ParseCIDRSloppy(ipb.CIDR)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath.Child("cidr"), ipb.CIDR, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")}
	}
	allErrs := field.ErrorList{}
	for i, except := range ipb.Except {
		p := fldPath.Child("except").Index(i)
		_, ec, err := netutils.ParseCIDRSloppy(except)
		if err != nil {
			allErrs = append(allErrs, field.Invalid(p, except, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
			continue
		}
		cidrSize, _ := cidr.Mask.Size()
		exceptSize, _ := ec.Mask.Size()
		if !cidr.Contains(ec.IP) || cidrSize >= exceptSize {
			allErrs = append(allErrs, field.Invalid(p, except, "must be a strict subset of `cidr`"))
		}
	}
	return allErrs
}

// ValidateIngressCreate is upstream's ValidateIngressCreate.
func ValidateIngressCreate(ing *networkingv1.Ingress) field.ErrorList {
	allErrs := validateIngressSpec(&ing.Spec, field.NewPath("spec"))
	if v, ok := ing.Annotations[annotationIngressClass]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
		allErrs = append(allErrs, field.Invalid(field.NewPath("annotations").Child(annotationIngressClass), v, "must match `ingressClassName` when both are specified"))
	}
	return allErrs
}

// ValidateIngressUpdate is upstream's ValidateIngressUpdate.
func ValidateIngressUpdate(ing, _ *networkingv1.Ingress) field.ErrorList {
	return validateIngressSpec(&ing.Spec, field.NewPath("spec"))
}

// ValidateIngressStatusUpdate is upstream's: load balancer addresses are
// IPs, hostnames DNS names.
func ValidateIngressStatusUpdate(ing, _ *networkingv1.Ingress) field.ErrorList {
	allErrs := field.ErrorList{}
	fldPath := field.NewPath("status", "loadBalancer", "ingress")
	for i, in := range ing.Status.LoadBalancer.Ingress {
		idx := fldPath.Index(i)
		if in.IP != "" && netutils.ParseIPSloppy(in.IP) == nil {
			allErrs = append(allErrs, field.Invalid(idx.Child("ip"), in.IP, "must be a valid IP address"))
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				allErrs = append(allErrs, field.Invalid(idx.Child("hostname"), in.Hostname, msg))
			}
			if netutils.ParseIPSloppy(in.Hostname) != nil {
				allErrs = append(allErrs, field.Invalid(idx.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return allErrs
}

func validateIngressSpec(spec *networkingv1.IngressSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		allErrs = append(allErrs, field.Invalid(fldPath, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		allErrs = append(allErrs, validateIngressBackend(spec.DefaultBackend, fldPath.Child("defaultBackend"))...)
	}
	for i, rule := range spec.Rules {
		p := fldPath.Child("rules").Index(i)
		if rule.Host != "" {
			if netutils.ParseIPSloppy(rule.Host) != nil {
				allErrs = append(allErrs, field.Invalid(p.Child("host"), rule.Host, "must be a DNS name, not an IP address"))
			}
			check := validation.IsDNS1123Subdomain
			if strings.Contains(rule.Host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(rule.Host) {
				allErrs = append(allErrs, field.Invalid(p.Child("host"), rule.Host, msg))
			}
		}
		if rule.HTTP != nil {
			hp := p.Child("http")
			if len(rule.HTTP.Paths) == 0 {
				allErrs = append(allErrs, field.Required(hp.Child("paths"), ""))
			}
			for j := range rule.HTTP.Paths {
				allErrs = append(allErrs, validateHTTPIngressPath(&rule.HTTP.Paths[j], hp.Child("paths").Index(j))...)
			}
		}
	}
	for i, tls := range spec.TLS {
		for j, host := range tls.Hosts {
			check := validation.IsDNS1123Subdomain
			if strings.Contains(host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(host) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("tls").Index(i).Child("hosts").Index(j), host, msg))
			}
		}
		if tls.SecretName != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("tls").Index(i).Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return allErrs
}

func validateHTTPIngressPath(path *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(fldPath.Child("pathType"), "pathType must be specified")}
	}
	allErrs := field.ErrorList{}
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), path.Path, "must be an absolute path"))
		}
		for _, seq := range invalidPathSequences {
			if strings.Contains(path.Path, seq) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), path.Path, "must be an absolute path"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("pathType"), *path.PathType, supportedPathTypes))
	}
	return append(allErrs, validateIngressBackend(&path.Backend, fldPath.Child("backend"))...)
}

func validateIngressBackend(backend *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	switch {
	case backend.Resource != nil && backend.Service != nil:
		return append(allErrs, field.Invalid(fldPath, "", "cannot set both resource and service backends"))
	case backend.Resource != nil:
		allErrs = append(allErrs, validateTypedLocalObjectReference(backend.Resource, fldPath.Child("resource"))...)
	case backend.Service != nil:
		if backend.Service.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("service", "name"), ""))
		} else {
			for _, msg := range apivalidation.NameIsDNSLabel(backend.Service.Name, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("service", "name"), backend.Service.Name, msg))
			}
		}
		port := backend.Service.Port
		switch {
		case port.Name != "" && port.Number != 0:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "cannot set both port name & port number"))
		case port.Name != "":
			for _, msg := range validation.IsValidPortName(port.Name) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("service", "port", "name"), port.Name, msg))
			}
		case port.Number != 0:
			for _, msg := range validation.IsValidPortNum(int(port.Number)) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("service", "port", "number"), port.Number, msg))
			}
		default:
			allErrs = append(allErrs, field.Required(fldPath, "port name or number is required"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "resource or service backend is required"))
	}
	return allErrs
}

func validateTypedLocalObjectReference(params *corev1.TypedLocalObjectReference, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if params.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*params.APIGroup) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("apiGroup"), *params.APIGroup, msg))
		}
	}
	if params.Kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(params.Kind, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("kind"), params.Kind, msg))
		}
	}
	if params.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(params.Name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), params.Name, msg))
		}
	}
	return allErrs
}

// ValidateIngressClass is upstream's ValidateIngressClass (metadata is the
// Store's).
func ValidateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	fldPath := field.NewPath("spec")
	allErrs := field.ErrorList{}
	if len(ic.Spec.Controller) > maxLenIngressClassController {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("controller"), "", maxLenIngressClassController))
	}
	allErrs = append(allErrs, validation.IsDomainPrefixedPath(fldPath.Child("controller"), ic.Spec.Controller)...)
	if p := ic.Spec.Parameters; p != nil {
		pp := fldPath.Child("parameters")
		if p.APIGroup != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*p.APIGroup) {
				allErrs = append(allErrs, field.Invalid(pp.Child("apiGroup"), *p.APIGroup, msg))
			}
		}
		if p.Kind == "" {
			allErrs = append(allErrs, field.Required(pp.Child("kind"), ""))
		}
		if p.Name == "" {
			allErrs = append(allErrs, field.Required(pp.Child("name"), ""))
		}
		switch {
		case p.Scope == nil:
			allErrs = append(allErrs, field.Required(pp.Child("scope"), ""))
		case *p.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace:
			if p.Namespace == nil {
				allErrs = append(allErrs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
			} else {
				for _, msg := range apivalidation.ValidateNamespaceName(*p.Namespace, false) {
					allErrs = append(allErrs, field.Invalid(pp.Child("namespace"), *p.Namespace, msg))
				}
			}
		case *p.Scope == networkingv1.IngressClassParametersReferenceScopeCluster:
			if p.Namespace != nil {
				allErrs = append(allErrs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(pp.Child("scope"), *p.Scope, []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}))
		}
	}
	return allErrs
}

// ValidateIngressClassUpdate is upstream's: the controller is immutable.
func ValidateIngressClassUpdate(ic, old *networkingv1.IngressClass) field.ErrorList {
	allErrs := apivalidation.ValidateImmutableField(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))
	return append(allErrs, ValidateIngressClass(ic)...)
}
