package podstatus

import (
	v1 "k8s.io/api/core/v1"
)

// QOSClass is the pod's quality-of-service class, as upstream's GetPodQOS:
// BestEffort without any cpu or memory request or limit; Guaranteed when
// every container (init containers too) limits cpu and memory and
// requests what it limits; else Burstable. Pod-level resources, when set,
// decide alone.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if r := pod.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		return classOf([]v1.ResourceRequirements{*r})
	}
	var all []v1.ResourceRequirements
	for _, c := range pod.Spec.InitContainers {
		all = append(all, c.Resources)
	}
	for _, c := range pod.Spec.Containers {
		all = append(all, c.Resources)
	}
	return classOf(all)
}

func classOf(all []v1.ResourceRequirements) v1.PodQOSClass {
	compute := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
	any, guaranteed := false, true
	for _, r := range all {
		for _, name := range compute {
			req, hasReq := r.Requests[name]
			lim, hasLim := r.Limits[name]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				any = true
			}
			if !hasLim || lim.IsZero() {
				guaranteed = false
				continue
			}
			if hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
