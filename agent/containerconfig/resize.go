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

// PodResources are the limits of the pod's cgroup, as the sandbox gets
// them: what a resize of pod-level resources hands
// UpdatePodSandboxResources.
func PodResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources { return podResources(pod) }

// AllContainers are the pod's init containers and containers, in that
// order.
func AllContainers(pod *v1.Pod) []*v1.Container { return allContainers(pod) }
