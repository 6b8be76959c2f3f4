package defaults

import (
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
