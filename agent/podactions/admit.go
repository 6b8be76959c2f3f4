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
// allocatable lacks is not checked), then its host ports free (NodePorts),
// as the kubelet's GeneralPredicates, in their order. It returns nil when
// the pod fits.
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
	if hostPortsTaken(pod, active) {
		// The kubelet's PredicateFailureError for the scheduler's
		// NodePorts plugin: its name is the reason.
		return &Rejection{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
	}
	return nil
}

// hostPort is a (host IP, protocol, port) a pod holds on the node, with
// the scheduler's defaults: no IP is 0.0.0.0, no protocol TCP.
type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts are the host ports of a pod's containers and of its
// restartable (sidecar) init containers, which run as long as the pod, as
// the scheduler's GetHostPorts.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
			if hp.ip == "" {
				hp.ip = "0.0.0.0"
			}
			if hp.protocol == "" {
				hp.protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c)
	}
	return out
}

// hostPortsTaken says whether one of pod's host ports conflicts with one
// the active pods hold, as the scheduler's HostPortInfo.CheckConflict:
// same protocol and port, and the same IP or either of them 0.0.0.0.
func hostPortsTaken(pod *v1.Pod, active []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return false
	}
	for _, other := range active {
		for _, used := range hostPorts(other) {
			for _, w := range want {
				if w.protocol == used.protocol && w.port == used.port &&
					(w.ip == used.ip || w.ip == "0.0.0.0" || used.ip == "0.0.0.0") {
					return true
				}
			}
		}
	}
	return false
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
