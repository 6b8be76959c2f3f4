package scheduler

import v1 "k8s.io/api/core/v1"

// Usage is what the pods on a node take: their summed requests (as
// filters count them, and with the non-zero defaults scoring uses), how
// many there are, and their host ports. The runner keeps one per node up
// to date as pods come and go, so that a decision costs O(nodes), not
// O(pods).
type Usage struct {
	requested resources
	nonZero   resources
	pods      int
	ports     map[string][]v1.ContainerPort // by pod namespace/name
}

// NewUsage is the usage of pods.
func NewUsage(pods []*v1.Pod) *Usage {
	u := &Usage{}
	for _, p := range pods {
		u.Add(p)
	}
	return u
}

// Add counts pod on the node.
func (u *Usage) Add(pod *v1.Pod) { u.change(pod, 1) }

// Remove takes back what Add(pod) counted; pod must be the version that
// was added.
func (u *Usage) Remove(pod *v1.Pod) { u.change(pod, -1) }

func (u *Usage) change(pod *v1.Pod, sign int64) {
	u.requested.plus(podRequests(pod), sign)
	u.nonZero.plus(requests(pod, true), sign)
	u.pods += int(sign)
	key := pod.Namespace + "/" + pod.Name
	if sign < 0 {
		delete(u.ports, key)
		return
	}
	if ports := hostPorts(pod); len(ports) > 0 {
		if u.ports == nil {
			u.ports = map[string][]v1.ContainerPort{}
		}
		u.ports[key] = ports
	}
}

func (r *resources) plus(o resources, sign int64) {
	r.milliCPU += sign * o.milliCPU
	r.memory += sign * o.memory
	r.storage += sign * o.storage
	for k, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[v1.ResourceName]int64{}
		}
		r.scalar[k] += sign * v
		if r.scalar[k] == 0 {
			delete(r.scalar, k)
		}
	}
}
