// Package defaults is upstream's v1 defaulting of networking.k8s.io
// (k8s.io/kubernetes/pkg/apis/networking/v1/defaults.go).
package defaults

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// NetworkPolicy defaults ports' protocol to TCP and policyTypes to
// Ingress, plus Egress when there are egress rules.
func NetworkPolicy(np *networkingv1.NetworkPolicy) {
	for i := range np.Spec.Ingress {
		defaultPorts(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		defaultPorts(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) != 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func defaultPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			tcp := corev1.ProtocolTCP
			ports[i].Protocol = &tcp
		}
	}
}

// IngressClass defaults the parameters' scope to Cluster.
func IngressClass(ic *networkingv1.IngressClass) {
	if ic.Spec.Parameters != nil && ic.Spec.Parameters.Scope == nil {
		scope := networkingv1.IngressClassParametersReferenceScopeCluster
		ic.Spec.Parameters.Scope = &scope
	}
}
