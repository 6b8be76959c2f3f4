package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

// Node applies upstream's node defaults: quantities rounded to milli
// precision and allocatable copied from capacity when unset, plus the
// v1<->internal round trip of spec.podCIDR and spec.podCIDRs (the singular
// field fills the list when empty and then mirrors its first element).
func Node(node *corev1.Node) {
	resourceList(node.Status.Capacity)
	resourceList(node.Status.Allocatable)
	if node.Status.Allocatable == nil && node.Status.Capacity != nil {
		node.Status.Allocatable = make(corev1.ResourceList, len(node.Status.Capacity))
		for name, q := range node.Status.Capacity {
			node.Status.Allocatable[name] = q.DeepCopy()
		}
	}
	if len(node.Spec.PodCIDRs) == 0 && node.Spec.PodCIDR != "" {
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
	}
	if len(node.Spec.PodCIDRs) > 0 {
		node.Spec.PodCIDR = node.Spec.PodCIDRs[0]
	}
}
