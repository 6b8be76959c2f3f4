package podstatus

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kite-project/kite/agent/podactions"

	"github.com/kite-project/kite/agent/podruntime"
)

// resourcesStatus sets a container's allocatedResources (its allocated
// requests) and resources (those of its running instance as the agent
// gave them, else its allocation), as the kubelet reports them with
// in-place resize: a node that reports them is one the API lets resize.
func resourcesStatus(st *v1.ContainerStatus, in Input, name string, instances []*podruntime.Container) {
	alloc, ok := in.Allocation[name]
	if !ok {
		return
	}
	st.AllocatedResources = alloc.Requests.DeepCopy()
	r := alloc.DeepCopy()
	if len(instances) > 0 && instances[0].State == podruntime.Running {
		if have, ok := in.Actuated[instances[0].ID]; ok {
			r = have.DeepCopy()
		}
	}
	st.Resources = &v1.ResourceRequirements{Requests: r.Requests, Limits: r.Limits}
}

// podResourcesStatus sets the pod's status.allocatedResources (the
// allocated pod's requests, pod-level ones deciding) and
// status.resources (its pod-level resources with requests and limits
// completed from the containers'), as the kubelet 1.37 reports them for
// every pod with InPlacePodLevelResourcesVerticalScaling (on). Where the
// kubelet reads a running pod's cgroup back, the agent reports what it
// gave the pod's sandbox (Actuated by sandbox ID), which is the same
// once a resize is actuated.
func podResourcesStatus(s *v1.PodStatus, in Input) {
	allocated := podactions.WithAllocation(in.Pod, in.Allocation)
	// pod is the allocated pod with the pod-level resources its ready
	// sandbox was given: a shallow copy, only Spec.Resources replaced.
	pod := *allocated
	if in.Runtime != nil && pod.Spec.Resources != nil {
		for _, sb := range in.Runtime.Sandboxes {
			if have, ok := in.Actuated[sb.ID]; ok && sb.Ready {
				pod.Spec.Resources = &have
				break
			}
		}
	}
	opts := resourcehelper.PodResourcesOptions{}
	s.AllocatedResources = resourcehelper.PodRequests(allocated, opts)
	r := &v1.ResourceRequirements{}
	if pod.Spec.Resources != nil {
		r = pod.Spec.Resources.DeepCopy()
	}
	r.Requests = resourcehelper.PodRequests(&pod, opts)
	r.Limits = resourcehelper.PodLimits(&pod, opts)
	s.Resources = r
}
