package podstatus

import (
	v1 "k8s.io/api/core/v1"
)

// ephemeralContainerStatuses are the statuses of the pod's ephemeral
// containers, as the kubelet converts them: like any container's, but
// never ready and without started, which only the prober sets and no
// probe runs in an ephemeral container. Nil when there are none.
func ephemeralContainerStatuses(in Input, old []v1.ContainerStatus) []v1.ContainerStatus {
	spec := in.Pod.Spec.EphemeralContainers
	if len(spec) == 0 {
		return nil
	}
	containers := make([]v1.Container, len(spec))
	for i := range spec {
		containers[i] = v1.Container(spec[i].EphemeralContainerCommon)
	}
	out := containerStatuses(in, containers, false, old)
	for i := range out {
		out[i].Ready = false
		out[i].Started = nil
		out[i].AllocatedResources, out[i].Resources = nil, nil
	}
	return out
}
