package containerconfig

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Resources are the runtime resources of container c of pod, as Build
// gives them: what an in-place resize hands UpdateContainerResources.
func Resources(pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) *runtimeapi.LinuxContainerResources {
	return resources(pod, c, allocatable)
}

// AllContainers are the pod's init containers and containers, in that
// order.
func AllContainers(pod *v1.Pod) []*v1.Container { return allContainers(pod) }
