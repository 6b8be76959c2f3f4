package podstatus

import (
	v1 "k8s.io/api/core/v1"

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
