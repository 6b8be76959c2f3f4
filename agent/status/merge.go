package status

import (
	"encoding/json"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/podactions"
)

// The pure half of the status manager: what to write over the API's
// status, as a patch, and when. The writer (manager.go) calls these.

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// Terminated is status as TerminatePod records it: a terminal phase, and
// every container that may have run without a terminated state marked
// ContainerStatusUnknown (whether it succeeded is unknown). As upstream's,
// containers with no evidence of a start keep their waiting state: the app
// containers of a pod that never initialized, and the init containers
// after the last one that started (the first is always marked). A failed
// init container is then what says why the pod failed.
func Terminated(pod *v1.Pod, status v1.PodStatus) v1.PodStatus {
	status = *status.DeepCopy()
	unknown := func(c *v1.ContainerStatus) {
		if c.State.Terminated != nil {
			return
		}
		c.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated", ExitCode: 137}}
		c.Ready = false
	}
	// The API's status may be older than the agent's last and the agent's
	// may have lost a container; either showing initialization is enough.
	if initialized(pod, pod.Status) || initialized(pod, status) {
		for i := range status.ContainerStatuses {
			unknown(&status.ContainerStatuses[i])
		}
	}
	inits := status.InitContainerStatuses
	for i := range inits[:startedInits(inits)] {
		unknown(&inits[i])
	}
	if !kubetypes.IsStaticPod(pod) && !terminal(status.Phase) {
		status.Phase = v1.PodFailed
	}
	return status
}

// initialized says whether status shows the pod past its init containers,
// as upstream's hasPodInitialized: it has none, an app container left
// waiting once, or the last init container succeeded (a sidecar: started).
func initialized(pod *v1.Pod, status v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, c := range status.ContainerStatuses {
		if c.LastTerminationState.Terminated != nil || c.State.Waiting == nil {
			return true
		}
	}
	l := len(status.InitContainerStatuses)
	if l == 0 || l > len(pod.Spec.InitContainers) || pod.Spec.InitContainers[l-1].Name != status.InitContainerStatuses[l-1].Name {
		return false
	}
	last := status.InitContainerStatuses[l-1]
	if podactions.IsSidecar(&pod.Spec.InitContainers[l-1]) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	for _, t := range []*v1.ContainerStateTerminated{last.LastTerminationState.Terminated, last.State.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// startedInits is how many init containers, from the first, may have
// started: all but the trailing ones waiting without a previous
// termination, and at least one (upstream's initializedContainers).
func startedInits(inits []v1.ContainerStatus) int {
	for i := len(inits) - 1; i >= 0; i-- {
		if inits[i].State.Waiting == nil || inits[i].LastTerminationState.Terminated != nil {
			return i + 1
		}
	}
	return min(len(inits), 1)
}

// newer is whichever of base and pod has the higher resourceVersion; pod
// when base is nil, nil when either's cannot be compared (the next write
// then reads the pod first).
func newer(base, pod *v1.Pod) *v1.Pod {
	p, err := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	if err != nil {
		return nil
	}
	if base == nil {
		return pod
	}
	b, err := strconv.ParseUint(base.ResourceVersion, 10, 64)
	switch {
	case err != nil:
		return nil
	case p > b:
		return pod
	}
	return base
}

// starting says whether status is that of a pod whose containers are
// being created: Pending, and every container not yet started waiting
// for that reason (the kubelet's ContainerCreating, PodInitializing).
func starting(status v1.PodStatus) bool {
	if status.Phase != v1.PodPending && status.Phase != "" {
		return false
	}
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for _, c := range list {
			if w := c.State.Waiting; w != nil && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return false
			}
		}
	}
	return true
}

// Merge is the status to write over the API's: the agent's, with the
// conditions it does not own as the API has them, and, until the worker
// finished (finished false), the API's phase instead of a terminal one, as
// upstream's mergePodStatus. A terminal pod is never Ready.
func Merge(api, status v1.PodStatus, finished bool) v1.PodStatus {
	out := *status.DeepCopy()
	var conds []v1.PodCondition
	for _, c := range out.Conditions {
		if kubetypes.PodConditionByAgent(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range api.Conditions {
		if !kubetypes.PodConditionByAgent(c.Type) {
			conds = append(conds, c)
		}
	}
	out.Conditions = conds
	if terminal(out.Phase) && !terminal(api.Phase) && !finished {
		out.Phase, out.Reason, out.Message = api.Phase, api.Reason, api.Message
	}
	if terminal(out.Phase) {
		for i := range out.Conditions {
			if t := out.Conditions[i].Type; (t == v1.PodReady || t == v1.ContainersReady) && out.Conditions[i].Status == v1.ConditionTrue {
				out.Conditions[i].Status = v1.ConditionFalse
			}
		}
	}
	return out
}

// Patch is the strategic merge patch from old to status with uid as a
// precondition, as upstream's PatchPodStatus; nil when nothing changed.
func Patch(uid types.UID, old, status v1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: status})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	if string(patch) == fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid) {
		return nil, nil
	}
	return patch, nil
}
