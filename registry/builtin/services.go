package builtin

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// defaultServiceIPFamilies are the service IP families of a cluster
// whose Services get no cluster IPs from Kite (Services() alone, before
// ServiceAllocation.Install): single-stack IPv4, as kube-apiserver with
// its default --service-cluster-ip-range.
var defaultServiceIPFamilies = []v1.IPFamily{v1.IPv4Protocol}

// Services returns the strategy of core/v1 services of a single-stack
// IPv4 cluster. Alone it stores service objects only: no cluster IP or
// node port is allocated; ServiceAllocation.Install makes it allocate
// them (kite.Start does). Before validation it reconciles clusterIP with
// clusterIPs and fills ipFamilies and ipFamilyPolicy, as upstream's
// service REST does before it allocates (PrepareService).
func Services() *registry.Strategy {
	strat := &registry.Strategy{
		Kind:                     v1.SchemeGroupVersion.WithKind("Service"),
		Resource:                 "services",
		SingularName:             "service",
		ShortNames:               []string{"svc"},
		Categories:               []string{"all"},
		Namespaced:               true,
		StoragePrefix:            "services/specs",
		New:                      func() runtime.Object { return &v1.Service{} },
		NewList:                  func() runtime.Object { return &v1.ServiceList{} },
		Default:                  func(obj runtime.Object) { defaults.Service(obj.(*v1.Service)) },
		ValidatesMetadata:        true,
		AllowUnconditionalUpdate: true,
		// As upstream's service SelectableFields: the kubelet lists
		// services with spec.clusterIP!=None for its environment
		// variables.
		SelectableFields: func(obj runtime.Object) fields.Set {
			svc := obj.(*v1.Service)
			return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
		},
		FieldLabels: []string{"spec.clusterIP", "spec.type"},
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) { obj.(*v1.Service).Spec = old.(*v1.Service).Spec },
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return validation.ValidateServiceStatusUpdate(obj.(*v1.Service), old.(*v1.Service))
				},
			},
		},
	}
	setServiceFamilies(strat, defaultServiceIPFamilies)
	return strat
}

// setServiceFamilies makes strat prepare and validate services for a
// cluster of the given service IP families (primary first).
func setServiceFamilies(strat *registry.Strategy, families []v1.IPFamily) {
	strat.PrepareForCreate = func(obj runtime.Object) {
		svc := obj.(*v1.Service)
		svc.Status = v1.ServiceStatus{}
		PrepareService(svc, nil, families)
	}
	strat.PrepareForUpdate = func(obj, old runtime.Object) {
		svc, oldSvc := obj.(*v1.Service), old.(*v1.Service)
		svc.Status = oldSvc.Status
		PrepareService(svc, oldSvc, families)
	}
	strat.Validate = func(obj runtime.Object) field.ErrorList {
		svc := obj.(*v1.Service)
		errs := append(validation.ValidateService(svc), validateIPFamilyPolicy(svc, nil)...)
		return append(errs, validateConfiguredFamilies(svc, families)...)
	}
	strat.ValidateUpdate = func(obj, old runtime.Object) field.ErrorList {
		svc, oldSvc := obj.(*v1.Service), old.(*v1.Service)
		errs := append(validation.ValidateServiceUpdate(svc, oldSvc), validateIPFamilyPolicy(svc, oldSvc)...)
		if matchingPreferDualStack(svc, oldSvc) {
			return errs // left as it was, whatever the cluster is now
		}
		return append(errs, validateConfiguredFamilies(svc, families)...)
	}
}

// PrepareService does to a created (old nil) or updated service what
// upstream's service REST does before validation, less the allocation of
// cluster IPs and node ports: on update it keeps the values the client
// omitted (patchAllocatedValues); it fills clusterIPs from a lone
// clusterIP (normalizeClusterIPs), so that "clusterIP: None" makes a
// headless service; it fills ipFamilyPolicy and ipFamilies
// (initIPFamilyFields); and on update it drops the fields the new type no
// longer uses and the client did not change (dropTypeDependentFields).
// families are the cluster's service IP families, primary first.
func PrepareService(svc, old *v1.Service, families []v1.IPFamily) {
	if old != nil {
		patchAllocatedValues(svc, old)
	}
	defaults.NormalizeServiceClusterIPs(old, svc)
	initIPFamilyFields(svc, old, families)
	if old != nil {
		dropTypeDependentFields(svc, old)
	}
}

func needsClusterIP(svc *v1.Service) bool { return svc.Spec.Type != v1.ServiceTypeExternalName }

func needsNodePort(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeNodePort || (svc.Spec.Type == v1.ServiceTypeLoadBalancer &&
		(svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts))
}

func needsHealthCheckNodePort(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
}

func headlessSelectorless(svc *v1.Service) bool {
	return svc.Spec.ClusterIP == v1.ClusterIPNone && len(svc.Spec.Selector) == 0
}

// patchAllocatedValues lets a client resubmit its manifest without the
// values the server filled (upstream's patchAllocatedValues): cluster
// IPs, node ports by port name, the health check node port.
func patchAllocatedValues(svc, old *v1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if needsNodePort(old) && needsNodePort(svc) {
		// A node port the new object uses elsewhere is not given again.
		used := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 && slices.ContainsFunc(old.Spec.Ports, func(o v1.ServicePort) bool { return o.NodePort == p.NodePort }) {
				used[p.NodePort] = true
			}
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			if p := &svc.Spec.Ports[i]; p.NodePort == 0 && !used[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// initIPFamilyFields is upstream's defaulting of ipFamilyPolicy and
// ipFamilies on a cluster of the service IP families given (primary
// first): the policy is the old object's, else RequireDualStack for a
// headless service without selector and SingleStack for any other;
// families follow the cluster IPs, and a headless service without
// selector gets both families unless it asks for SingleStack, any other
// the primary one, and both on a dual-stack cluster unless it asks for
// SingleStack. A PreferDualStack service whose IPs and families did not
// change is left as it is (no upgrade or downgrade behind its back). The
// checks upstream makes here are validateIPFamilyPolicy's and
// validateConfiguredFamilies'.
func initIPFamilyFields(svc, old *v1.Service, families []v1.IPFamily) {
	if !needsClusterIP(svc) {
		return
	}
	if old != nil && svc.Spec.IPFamilyPolicy == nil && old.Spec.IPFamilyPolicy != nil {
		svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
	}
	if matchingPreferDualStack(svc, old) {
		return
	}
	if svc.Spec.IPFamilyPolicy == nil {
		policy := v1.IPFamilyPolicySingleStack
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			policy = *old.Spec.IPFamilyPolicy
		case headlessSelectorless(svc):
			policy = v1.IPFamilyPolicyRequireDualStack
		}
		svc.Spec.IPFamilyPolicy = &policy
	}
	singleStack := *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicySingleStack
	if old != nil && singleStack {
		// Asking for SingleStack without changing the IPs or families
		// releases the secondary ones.
		if slices.Equal(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) && len(svc.Spec.ClusterIPs) > 1 {
			svc.Spec.ClusterIPs = svc.Spec.ClusterIPs[:1]
		}
		if slices.Equal(old.Spec.IPFamilies, svc.Spec.IPFamilies) && len(svc.Spec.IPFamilies) > 1 {
			svc.Spec.IPFamilies = svc.Spec.IPFamilies[:1]
		}
	}
	// Families dropped under another policy are an error
	// (validateIPFamilyPolicy), not something to fill again.
	reduced := old != nil && !singleStack && len(svc.Spec.IPFamilies) > 0 && len(svc.Spec.IPFamilies) < len(old.Spec.IPFamilies)
	for i, ip := range svc.Spec.ClusterIPs {
		if ip == v1.ClusterIPNone {
			break
		}
		family := ipFamilyOf(ip)
		if family == "" {
			break // validation names the bad IP
		}
		if i >= len(svc.Spec.IPFamilies) {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, family)
		}
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []v1.IPFamily{families[0]}
	}
	if len(svc.Spec.IPFamilies) == 1 && !singleStack && !reduced && (headlessSelectorless(svc) || len(families) == 2) {
		// A headless service without selector: its endpoints are the
		// user's, of any family. Any other: what the cluster has.
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, otherIPFamily(svc.Spec.IPFamilies[0]))
	}
}

// matchingPreferDualStack is upstream's isMatchingPreferDualStackClusterIPFields:
// an update of a PreferDualStack service that keeps its policy, cluster
// IPs and families, which then stay as they are even if the cluster
// became (or stopped being) dual-stack.
func matchingPreferDualStack(svc, old *v1.Service) bool {
	if old == nil || !needsClusterIP(old) || !needsClusterIP(svc) {
		return false
	}
	return ipFamilyPolicy(old) == v1.IPFamilyPolicyPreferDualStack && ipFamilyPolicy(svc) == v1.IPFamilyPolicyPreferDualStack &&
		slices.Equal(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) && slices.Equal(old.Spec.IPFamilies, svc.Spec.IPFamilies)
}

// validateConfiguredFamilies makes upstream's checks of a service's
// cluster IPs and families against the cluster's: an IP or family of
// another family, RequireDualStack on a single-stack cluster. A headless
// service without selector may have any.
func validateConfiguredFamilies(svc *v1.Service, families []v1.IPFamily) field.ErrorList {
	if !needsClusterIP(svc) || headlessSelectorless(svc) {
		return nil
	}
	var errs field.ErrorList
	for i, ip := range svc.Spec.ClusterIPs {
		if ip == v1.ClusterIPNone {
			break
		}
		if f := ipFamilyOf(ip); f != "" && !slices.Contains(families, f) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), svc.Spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if ipFamilyPolicy(svc) == v1.IPFamilyPolicyRequireDualStack && len(families) < 2 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range svc.Spec.IPFamilies {
		if !slices.Contains(families, f) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	return errs
}

// validateIPFamilyPolicy makes upstream's checks of ipFamilyPolicy against
// the cluster IPs and families: SingleStack allows one of each, and any
// other policy cannot drop the secondary ones on update.
func validateIPFamilyPolicy(svc, old *v1.Service) field.ErrorList {
	if !needsClusterIP(svc) || svc.Spec.IPFamilyPolicy == nil {
		return nil
	}
	path := field.NewPath("spec", "ipFamilyPolicy")
	policy := *svc.Spec.IPFamilyPolicy
	var errs field.ErrorList
	if policy == v1.IPFamilyPolicySingleStack {
		if len(svc.Spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(path, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(svc.Spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(path, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
		return errs
	}
	if old == nil || !needsClusterIP(old) {
		return nil
	}
	if n := len(svc.Spec.ClusterIPs); n > 0 && n < len(old.Spec.ClusterIPs) {
		errs = append(errs, field.Invalid(path, policy, "must be 'SingleStack' to release the secondary cluster IP"))
	}
	if n := len(svc.Spec.IPFamilies); n > 0 && n < len(old.Spec.IPFamilies) {
		errs = append(errs, field.Invalid(path, policy, "must be 'SingleStack' to release the secondary IP family"))
	}
	return errs
}

// dropTypeDependentFields is upstream's: a service whose type changes
// loses the fields the new type does not use, where the client left them
// as they were (a read-modify-write that only changed the type), so that
// validation does not refuse values the server set.
func dropTypeDependentFields(svc, old *v1.Service) {
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if old.Spec.ClusterIP == svc.Spec.ClusterIP && slices.Equal(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(old.Spec.IPFamilies, svc.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if ipFamilyPolicy(old) == ipFamilyPolicy(svc) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) && sameNodePorts(svc, old) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && old.Spec.HealthCheckNodePort == svc.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.Type != v1.ServiceTypeLoadBalancer {
		if a, b := old.Spec.AllocateLoadBalancerNodePorts, svc.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if a, b := old.Spec.LoadBalancerClass, svc.Spec.LoadBalancerClass; (a == nil) == (b == nil) && (a == nil || *a == *b) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && old.Spec.ExternalTrafficPolicy == svc.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if svc.Spec.Type != v1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = v1.LoadBalancerStatus{}
	}
}

// sameNodePorts reports whether svc adds no node port old did not have.
func sameNodePorts(svc, old *v1.Service) bool {
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !slices.ContainsFunc(old.Spec.Ports, func(o v1.ServicePort) bool { return o.NodePort == p.NodePort }) {
			return false
		}
	}
	return true
}

func externallyAccessible(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer || svc.Spec.Type == v1.ServiceTypeNodePort ||
		(svc.Spec.Type == v1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func ipFamilyPolicy(svc *v1.Service) v1.IPFamilyPolicy {
	if svc.Spec.IPFamilyPolicy == nil {
		return ""
	}
	return *svc.Spec.IPFamilyPolicy
}

func ipFamilyOf(ip string) v1.IPFamily {
	switch {
	case netutils.IsIPv4String(ip):
		return v1.IPv4Protocol
	case netutils.IsIPv6String(ip):
		return v1.IPv6Protocol
	}
	return ""
}

func otherIPFamily(f v1.IPFamily) v1.IPFamily {
	if f == v1.IPv4Protocol {
		return v1.IPv6Protocol
	}
	return v1.IPv4Protocol
}
