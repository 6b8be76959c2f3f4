// Package defaults is upstream's v1 defaulting of resource.k8s.io
// (k8s.io/kubernetes/pkg/apis/resource/v1/defaults.go).
package defaults

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// ResourceClaimSpec defaults each request's allocation mode to ExactCount
// with a count of 1, and tolerations' operator to Equal.
func ResourceClaimSpec(spec *resourcev1.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		req := &spec.Devices.Requests[i]
		if e := req.Exactly; e != nil {
			defaultMode(&e.AllocationMode, &e.Count)
			defaultTolerations(e.Tolerations)
		}
		for j := range req.FirstAvailable {
			sub := &req.FirstAvailable[j]
			defaultMode(&sub.AllocationMode, &sub.Count)
			defaultTolerations(sub.Tolerations)
		}
	}
}

func defaultMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func defaultTolerations(ts []resourcev1.DeviceToleration) {
	for i := range ts {
		if ts[i].Operator == "" {
			ts[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

// ResourceClaim defaults its spec.
func ResourceClaim(c *resourcev1.ResourceClaim) { ResourceClaimSpec(&c.Spec) }

// ResourceClaimTemplate defaults the spec of the claims it makes.
func ResourceClaimTemplate(t *resourcev1.ResourceClaimTemplate) { ResourceClaimSpec(&t.Spec.Spec) }
