package containerconfig

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/apis/core/qos"
)

// QOSTiers are the settings of the QoS tiers' cgroups for the node's
// active pods (those admitted and not being stopped), as the kubelet's
// QoS container manager's setCPUCgroupConfig: BestEffort always the
// minimum shares; Burstable the shares of the sum of its pods' cpu
// requests (upstream's PodRequests: sidecars and init containers, pod-level
// resources and overhead counted as for the pod's own cgroup), the
// minimum when none asks for cpu. Guaranteed pods are directly under
// kubepods, which has no tier setting of its own.
func QOSTiers(pods []*v1.Pod) runtime.QOSTiers {
	var milliCPU int64
	for _, p := range pods {
		if qos.GetPodQOS(p) != v1.PodQOSBurstable {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		if cpu, ok := req[v1.ResourceCPU]; ok {
			milliCPU += cpu.MilliValue()
		}
	}
	return runtime.QOSTiers{BurstableCPUShares: milliCPUToShares(milliCPU), BestEffortCPUShares: minShares}
}
