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
	pod := podactions.WithAllocation(in.Pod, in.Allocation)
	var sandboxes []podruntime.Sandbox
	if in.Runtime != nil {
		sandboxes = in.Runtime.Sandboxes
	}
	for _, sb := range sandboxes {
		if have, ok := in.Actuated[sb.ID]; ok && sb.Ready && pod.Spec.Resources != nil {
			pod.Spec.Resources = have.DeepCopy()
			break
		}
	}
	opts := resourcehelper.PodResourcesOptions{}
	allocated := podactions.WithAllocation(in.Pod, in.Allocation)
	s.AllocatedResources = resourcehelper.PodRequests(allocated, opts)
	r := &v1.ResourceRequirements{}
	if pod.Spec.Resources != nil {
		r = pod.Spec.Resources.DeepCopy()
	}
	r.Requests = resourcehelper.PodRequests(pod, opts)
	r.Limits = resourcehelper.PodLimits(pod, opts)
	s.Resources = r
}
