package podactions

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// DefaultMaxPods is the kubelet's --max-pods default.
const DefaultMaxPods = 110

// Rejection is why a pod may not run on the node, as the kubelet's
// admission (lifecycle/predicate.go): Reason is the event reason and the
// status reason (OutOfpods, OutOfcpu, OutOfmemory), Message the event's
// (the status message is "Pod was rejected: " + Message).
type Rejection struct {
	Reason, Message string
}

// Admit checks that pod fits beside the active pods: the pod count within
// maxPods and the cpu and memory requests within allocatable (a resource
// allocatable lacks is not checked), as the kubelet's GeneralPredicates
// for resources. It returns nil when the pod fits.
func Admit(pod *v1.Pod, active []*v1.Pod, allocatable v1.ResourceList, maxPods int) *Rejection {
	if maxPods <= 0 {
		maxPods = DefaultMaxPods
	}
	if len(active)+1 > maxPods {
		return insufficient(v1.ResourcePods, 1, int64(len(active)), int64(maxPods))
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		capacity, ok := allocatable[name]
		if !ok {
			continue
		}
		value := func(p *v1.Pod) int64 {
			q := requests(p)[name]
			if name == v1.ResourceCPU {
				return q.MilliValue()
			}
			return q.Value()
		}
		want := value(pod)
		if want == 0 {
			continue
		}
		var used int64
		for _, p := range active {
			used += value(p)
		}
		limit := capacity.Value()
		if name == v1.ResourceCPU {
			limit = capacity.MilliValue()
		}
		if used+want > limit {
			return insufficient(name, want, used, limit)
		}
	}
	return nil
}

func insufficient(name v1.ResourceName, requested, used, capacity int64) *Rejection {
	return &Rejection{Reason: "OutOf" + string(name),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)}
}

// requests are the pod's effective requests: the sum of its containers',
// or the largest init container's where that is more; pod-level requests
// when set; plus the overhead.
func requests(pod *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	if r := pod.Spec.Resources; r != nil && len(r.Requests) > 0 {
		for k, v := range r.Requests {
			out[k] = v.DeepCopy()
		}
	} else {
		for _, c := range pod.Spec.Containers {
			for k, v := range c.Resources.Requests {
				q := out[k]
				q.Add(v)
				out[k] = q
			}
		}
		for _, c := range pod.Spec.InitContainers {
			for k, v := range c.Resources.Requests {
				if v.Cmp(out[k]) > 0 {
					out[k] = v.DeepCopy()
				}
			}
		}
	}
	for k, v := range pod.Spec.Overhead {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}
