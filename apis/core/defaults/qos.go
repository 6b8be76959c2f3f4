package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodQOSClass computes a pod's quality of service class as upstream's
// qos.ComputePodQOS, for the registry to put into status.qosClass on create
// (upstream's pod strategy does it, together with phase Pending; the node
// agent does the same for static pods). Only cpu and memory count:
// BestEffort when no container requests or limits either, Guaranteed when
// every container limits both and requests equal limits, Burstable
// otherwise. Pod-level resources (spec.resources), when set, decide
// alone, as they do upstream with 1.37's PodLevelResources and
// PodLevelResourcesFixKubeletQOSClass (both on).
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	all := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
	if r := pod.Spec.Resources; r != nil && len(r.Requests)+len(r.Limits) > 0 {
		all = []corev1.Container{{Resources: *r}}
	}
	for _, c := range all {
		add(requests, c.Resources.Requests)
		found := add(limits, c.Resources.Limits)
		if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// add sums the positive cpu and memory quantities of from into sum and
// says which it found.
func add(sum, from corev1.ResourceList) map[corev1.ResourceName]bool {
	found := map[corev1.ResourceName]bool{}
	for name, q := range from {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			continue
		}
		if q.Cmp(resource.Quantity{}) <= 0 {
			continue
		}
		found[name] = true
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}
