// Package defaults is upstream's v1 defaulting of scheduling.k8s.io
// (k8s.io/kubernetes/pkg/apis/scheduling/v1/defaults.go).
package defaults

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// PriorityClass defaults preemptionPolicy to PreemptLowerPriority.
func PriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &p
	}
}
