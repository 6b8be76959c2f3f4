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

// PodCgroupResize is how an in-place resize takes the pod cgroup from
// have (what it was last given; nil when unknown, as after an agent
// restart) to want (PodResources of the new allocation), as the kubelet's
// doPodResizeAction:
//
//   - a resize does not take a limit away: where want has no cpu quota or
//     no memory limit and have has one, it stays (the kubelet keeps the
//     cgroup's current value where ResourceConfigForPod gives none);
//   - each value that grows is given before the containers are resized,
//     so that a container given more finds room in its pod; each that
//     shrinks after them (cgroup v1 refuses a pod quota below a
//     container's): before is have widened by what grows, after is the
//     final limits, each nil when there is nothing to give then.
//
// Unknown have gives the final limits after the containers.
func PodCgroupResize(have, want *runtimeapi.LinuxContainerResources) (before, after *runtimeapi.LinuxContainerResources) {
	if have == nil {
		return nil, want
	}
	// Huge pages are not resized: they stay as want has them.
	final := &runtimeapi.LinuxContainerResources{CpuShares: want.CpuShares, CpuPeriod: want.CpuPeriod, CpuQuota: want.CpuQuota, MemoryLimitInBytes: want.MemoryLimitInBytes,
		HugepageLimits: want.HugepageLimits}
	if final.CpuQuota == 0 && have.CpuQuota > 0 {
		final.CpuQuota, final.CpuPeriod = have.CpuQuota, have.CpuPeriod
	}
	if final.MemoryLimitInBytes == 0 && have.MemoryLimitInBytes > 0 {
		final.MemoryLimitInBytes = have.MemoryLimitInBytes
	}
	// The wider of each: no quota or no memory limit (0) is the widest.
	wide := &runtimeapi.LinuxContainerResources{CpuShares: max(have.CpuShares, final.CpuShares),
		CpuQuota: widest(have.CpuQuota, final.CpuQuota), MemoryLimitInBytes: widest(have.MemoryLimitInBytes, final.MemoryLimitInBytes),
		HugepageLimits: want.HugepageLimits}
	if wide.CpuQuota > 0 {
		wide.CpuPeriod = final.CpuPeriod
	}
	if !samePodCgroup(wide, have) {
		before = wide
	}
	if !samePodCgroup(final, wide) {
		after = final
	}
	return before, after
}

// widest of two limits where 0 is none.
func widest(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// samePodCgroup says that a and b give the pod cgroup the same limits.
func samePodCgroup(a, b *runtimeapi.LinuxContainerResources) bool {
	return a.CpuShares == b.CpuShares && a.CpuPeriod == b.CpuPeriod && a.CpuQuota == b.CpuQuota && a.MemoryLimitInBytes == b.MemoryLimitInBytes
}
