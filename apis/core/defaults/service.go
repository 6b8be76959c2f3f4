package defaults

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Service applies upstream's SetDefaults_Service: session affinity None
// (and no affinity config with it; a ClientIP affinity gets its 3-hour
// timeout), type ClusterIP, ports' protocol TCP and targetPort = port,
// externalTrafficPolicy Cluster for externally reachable services,
// internalTrafficPolicy Cluster, allocateLoadBalancerNodePorts true and
// ingress ipMode VIP for load balancers.
//
// Cluster IP allocation and the derived clusterIPs, ipFamilies and
// ipFamilyPolicy are the registry's job, not defaulting.
func Service(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityNone {
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		cfg := spec.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP:
			spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" && ing.IPMode == nil {
				svc.Status.LoadBalancer.Ingress[i].IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// NormalizeServiceClusterIPs is what upstream's service strategy does
// before validation to reconcile spec.clusterIP and spec.clusterIPs, which
// old clients set one of and new clients set both of: on create (old nil) a
// lone clusterIP fills clusterIPs; on update, clusterIPs dropped by a client
// that kept clusterIP come back from the old object, and a clusterIP changed
// or cleared while clusterIPs stayed the same carries clusterIPs along.
// Validation then judges the result.
func NormalizeServiceClusterIPs(old, svc *corev1.Service) {
	if old == nil {
		if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return
	}
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) == 0 && old.Spec.ClusterIP == svc.Spec.ClusterIP {
		svc.Spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if old.Spec.ClusterIP == svc.Spec.ClusterIP {
		return
	}
	sameIPs := slices.Equal(old.Spec.ClusterIPs, svc.Spec.ClusterIPs)
	switch {
	case old.Spec.ClusterIP != "" && svc.Spec.ClusterIP == "":
		if sameIPs {
			svc.Spec.ClusterIPs = nil
		}
	case sameIPs:
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
}
