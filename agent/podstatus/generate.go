// Package podstatus computes a pod's API status from its spec, what the
// runtime has of it and the probe results, as the kubelet's
// generateAPIPodStatus, getPhase and the condition generators
// (pkg/kubelet/kubelet_pods.go, pkg/kubelet/status/generate.go) do. It is
// pure: the status manager (package status) decides when to write it.
package podstatus

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/apis/core/qos"
)

// Container waiting and terminated reasons the agent sets, as upstream's.
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonContainerStatusUnknown     = "ContainerStatusUnknown"
)

// Pod condition reasons, as upstream's.
const (
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	ReasonPodSandboxNotReady       = "PodSandboxNotReady"
)

// Waiting is why a container could not be started in the last sync (the
// kubelet's reasonCache): Reason is e.g. CrashLoopBackOff or
// CreateContainerConfigError.
type Waiting struct {
	Reason, Message string
}

// Probes are the readiness and startup results of running containers, by
// instance ID. Without a probe a container is started and ready as soon
// as it runs.
type Probes interface {
	// Ready says whether the readiness probe succeeded (last result).
	Ready(containerID string) bool
	// Started says whether the startup probe succeeded.
	Started(containerID string) bool
}

// NoProbes has no prober: every running container is started and ready.
type NoProbes struct{}

func (NoProbes) Ready(string) bool   { return true }
func (NoProbes) Started(string) bool { return true }

// Input is what a pod's status is computed from.
type Input struct {
	Pod *v1.Pod
	// Runtime is what the runtime has of the pod; nil is nothing.
	Runtime *podruntime.Pod
	// Old is the status the agent computed last (or the API's when it has
	// none), for lastTransitionTime, startTime and the monotonic phase.
	Old v1.PodStatus
	// Waiting are the containers' start failures of the last sync, by
	// container name.
	Waiting map[string]Waiting
	// Probes are the readiness/startup results; nil is NoProbes.
	Probes Probes
	// HostIPs are the node's addresses: hostIPs, and the podIPs of a pod
	// in the node's network.
	HostIPs []string
	// PodNetwork says that a pod that is not hostNetwork has addresses of
	// its own, Runtime's IPs (none until its sandbox is ready); without it
	// every pod is in the node's network.
	PodNetwork bool
	// RuntimeName prefixes container IDs ("kite-process" gives
	// kite-process://<id>).
	RuntimeName string
	// Terminal says that the pod's worker has stopped it for good: its
	// containers will not run again whatever the restart policy.
	Terminal bool
	Now      time.Time
	// Allocation is what the agent allocated of each container's
	// resources (allocatedResources; the resources of an instance whose
	// own are not known); nil reports neither.
	Allocation podactions.Allocation
	// Actuated are the resources each running instance has, by runtime
	// ID (a container's status resources).
	Actuated map[string]v1.ResourceRequirements
	// ResizeConditions are the pod's PodResizePending and
	// PodResizeInProgress conditions, when it has them.
	ResizeConditions []v1.PodCondition
	// StartHold is the relist period: a stdin-once container's running
	// instance is reported as not yet seen until it has run this long
	// (StartHold). 0 reports every instance as it is.
	StartHold time.Duration
}

// Generate is the pod's status.
func Generate(in Input) v1.PodStatus {
	if in.Probes == nil {
		in.Probes = NoProbes{}
	}
	pod, old := in.Pod, in.Old
	s := v1.PodStatus{QOSClass: qos.GetPodQOS(pod), ObservedGeneration: pod.Generation}
	s.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, true, old.InitContainerStatuses)
	s.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, false, old.ContainerStatuses)
	sort.Slice(s.ContainerStatuses, func(i, j int) bool { return s.ContainerStatuses[i].Name < s.ContainerStatuses[j].Name })
	s.EphemeralContainerStatuses = ephemeralContainerStatuses(in, old.EphemeralContainerStatuses)
	if in.Allocation != nil {
		podResourcesStatus(&s, in)
	}

	s.Phase = Phase(pod, s.InitContainerStatuses, s.ContainerStatuses, in.Terminal, initialized(pod, s.InitContainerStatuses, s.ContainerStatuses))
	// A terminal phase is final (the kubelet's three-way check), also
	// against the other terminal phase: a pod failed for its deadline
	// whose containers then exit 0 on SIGTERM stays Failed, as the
	// kubelet forces the API's phase back ("Pod attempted illegal phase
	// transition").
	switch {
	case terminal(old.Phase):
		s.Phase = old.Phase
	case terminal(pod.Status.Phase):
		s.Phase = pod.Status.Phase
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}

	// Conditions the agent does not own are kept as they are.
	for _, c := range old.Conditions {
		if !kubetypes.PodConditionByAgent(c.Type) {
			s.Conditions = append(s.Conditions, c)
		}
	}
	all := append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	ready := containersReady(pod, all, s.Phase)
	s.Conditions = append(s.Conditions,
		readyToStart(in.Runtime),
		initializedCondition(pod, all, s.Phase),
		podReady(pod, old.Conditions, ready),
		ready,
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	)
	s.Conditions = append(s.Conditions, in.ResizeConditions...)
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if !kubetypes.PodConditionByAgent(c.Type) {
			continue
		}
		// The generation the agent saw (the kubelet's
		// PodObservedGenerationTracking, on by default since 1.35); a
		// resize condition keeps the generation it was set for.
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = pod.Generation
		}
		c.LastTransitionTime = metav1.NewTime(in.Now.Truncate(time.Second))
		for _, o := range append(old.Conditions, pod.Status.Conditions...) {
			if o.Type == c.Type {
				if o.Status == c.Status {
					c.LastTransitionTime = o.LastTransitionTime
				}
				break
			}
		}
	}

	if len(in.HostIPs) > 0 {
		s.HostIP = in.HostIPs[0]
		for _, ip := range in.HostIPs {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
		}
	}
	podIPs := in.HostIPs
	if in.PodNetwork && !pod.Spec.HostNetwork {
		podIPs = nil
		if in.Runtime != nil {
			podIPs = in.Runtime.IPs
		}
	}
	for _, ip := range podIPs {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(podIPs) > 0 {
		s.PodIP = podIPs[0]
	}
	switch {
	case old.StartTime != nil:
		s.StartTime = old.StartTime
	case pod.Status.StartTime != nil:
		s.StartTime = pod.Status.StartTime
	default:
		t := metav1.NewTime(in.Now.Truncate(time.Second))
		s.StartTime = &t
	}
	return s
}

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// containerStatuses converts the runtime's instances of containers into
// their API statuses, as upstream's convertToAPIContainerStatuses: the
// newest instance is the state, the one before it lastState; a container
// due to start again with a recorded start failure is Waiting with it.
func containerStatuses(in Input, containers []v1.Container, init bool, old []v1.ContainerStatus) []v1.ContainerStatus {
	// Upstream's rule is by the pod, not the list: with init containers,
	// every container not yet started (init or app) is PodInitializing.
	defaultReason := ReasonContainerCreating
	if len(in.Pod.Spec.InitContainers) > 0 {
		defaultReason = ReasonPodInitializing
	}
	out := make([]v1.ContainerStatus, 0, len(containers))
	for i := range containers {
		c := &containers[i]
		st := v1.ContainerStatus{Name: c.Name, Image: c.Image, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultReason}}}
		var prev *v1.ContainerStatus
		for j := range old {
			if old[j].Name == c.Name {
				prev = &old[j]
			}
		}
		instances := in.Runtime.Instances(c.Name)
		if len(instances) > 0 && StartHold(in.Pod, c, instances[0], in.Now, in.StartHold) > 0 {
			// Reported as if its start were not seen yet, as the
			// kubelet before its next relist: from the instances before.
			instances = instances[1:]
		}
		if len(instances) > 0 {
			n := instances[0]
			st.State = stateOf(n, prev)
			st.ContainerID = containerID(in.RuntimeName, n.ID)
			st.ImageID = n.ImageRef
			if n.Image != "" {
				st.Image = n.Image
			}
			st.RestartCount = int32(n.RestartCount)
			if st.State.Terminated != nil && st.State.Terminated.Reason == ReasonContainerStatusUnknown && prev != nil {
				st.RestartCount = prev.RestartCount + 1
			}
			if len(instances) > 1 {
				st.LastTerminationState = stateOf(instances[1], nil)
			}
		}
		if w, ok := in.Waiting[c.Name]; ok && podactions.ShouldRestart(c, in.Pod, in.Runtime) {
			if st.State.Terminated != nil {
				st.LastTerminationState = st.State
			}
			st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		}
		started := false
		if st.State.Running != nil && len(instances) > 0 {
			started = c.StartupProbe == nil || in.Probes.Started(instances[0].ID)
			st.Ready = started && (c.ReadinessProbe == nil || in.Probes.Ready(instances[0].ID))
		}
		if init && !podactions.IsSidecar(c) {
			st.Ready = st.State.Terminated != nil && st.State.Terminated.ExitCode == 0
		}
		st.Started = &started
		if in.Allocation != nil {
			resourcesStatus(&st, in, c.Name, instances)
		}
		out = append(out, st)
	}
	return out
}

func stateOf(n *podruntime.Container, prev *v1.ContainerStatus) v1.ContainerState {
	switch n.State {
	case podruntime.Running:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(n.StartedAt)}}
	case podruntime.Created:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
	case podruntime.Exited:
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: n.ExitCode, Reason: n.Reason, Message: n.Message,
			StartedAt: metav1.NewTime(n.StartedAt), FinishedAt: metav1.NewTime(n.FinishedAt), ContainerID: n.ID}}
	}
	if prev != nil && prev.State.Running != nil {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: ReasonContainerStatusUnknown,
			Message: "The container could not be located when the pod was terminated", ExitCode: 137}}
	}
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
}

func containerID(runtimeName, id string) string {
	if runtimeName == "" {
		return id
	}
	return runtimeName + "://" + id
}

// Phase is the pod's phase from its container statuses, as upstream's
// getPhase. terminal says the worker stopped the pod for good; static pods
// never get a terminal phase from it (upstream TODO #116484).
func Phase(pod *v1.Pod, inits, containers []v1.ContainerStatus, terminal, initialized bool) v1.PodPhase {
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
	var unknown, running, waiting, stopped, succeeded int
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st, ok := find(inits, c.Name)
		if podactions.IsSidecar(c) {
			switch {
			case !ok:
				unknown++
			case st.State.Running != nil:
				if st.Started == nil || !*st.Started {
					pendingSidecars++
				}
				running++
			case st.State.Terminated != nil:
			case st.State.Waiting != nil:
				if st.LastTerminationState.Terminated == nil {
					pendingSidecars++
					waiting++
				}
			default:
				pendingSidecars++
				unknown++
			}
			continue
		}
		switch {
		case !ok:
			pendingInit++
		case st.State.Running != nil:
			pendingInit++
		case st.State.Terminated != nil:
			if st.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	for i := range pod.Spec.Containers {
		st, ok := find(containers, pod.Spec.Containers[i].Name)
		switch {
		case !ok:
			unknown++
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 || pendingSidecars > 0 && !initialized:
		return v1.PodPending
	case waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal && !kubetypes.IsStaticPod(pod) {
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if pod.Spec.RestartPolicy == v1.RestartPolicyAlways {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

func find(statuses []v1.ContainerStatus, name string) (*v1.ContainerStatus, bool) {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i], true
		}
	}
	return nil, false
}

// initialized says whether the pod got past its init containers: each
// regular one exited 0 and each sidecar started, or a regular container
// has started.
func initialized(pod *v1.Pod, inits, containers []v1.ContainerStatus) bool {
	if anyRegularStarted(pod, containers) {
		return true
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st, ok := find(inits, c.Name)
		if !ok {
			return false
		}
		if podactions.IsSidecar(c) {
			if st.Started == nil || !*st.Started {
				return false
			}
		} else if !st.Ready {
			return false
		}
	}
	return true
}

func anyRegularStarted(pod *v1.Pod, statuses []v1.ContainerStatus) bool {
	for i := range pod.Spec.Containers {
		st, ok := find(statuses, pod.Spec.Containers[i].Name)
		if !ok {
			continue
		}
		if st.State.Running != nil || st.State.Terminated != nil || st.State.Waiting != nil && st.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

func readyToStart(rt *podruntime.Pod) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}
	if changed, _, _ := podactions.SandboxChanged(rt); changed {
		c.Status, c.Reason = v1.ConditionFalse, ReasonPodSandboxNotReady
		if rt == nil || len(rt.Sandboxes) == 0 {
			c.Message = "no pod sandbox exists"
		} else {
			c.Message = "pod sandbox is not ready"
		}
	}
	return c
}

func initializedCondition(pod *v1.Pod, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st, ok := find(all, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if podactions.IsSidecar(c) {
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, c.Name)
			}
		} else if !st.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: ReasonPodCompleted}
	}
	if anyRegularStarted(pod, all) {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	if msg := messages("incomplete", unknown, incomplete); msg != "" {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ReasonContainersNotInitialized, Message: msg}
	}
	return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
}

func containersReady(pod *v1.Pod, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var unknown, unready []string
	check := func(c *v1.Container) {
		st, ok := find(all, c.Name)
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
		case !st.Ready:
			unready = append(unready, c.Name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if podactions.IsSidecar(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodCompleted}
	}
	if phase == v1.PodFailed {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed}
	}
	if msg := messages("unready", unknown, unready); msg != "" {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady, Message: msg}
	}
	return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
}

// messages is upstream's "containers with unknown status: [a], containers
// with <kind> status: [b c]" (Go's %s of a slice).
func messages(kind string, unknown, other []string) string {
	var m []string
	if len(unknown) > 0 {
		m = append(m, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(other) > 0 {
		m = append(m, fmt.Sprintf("containers with %s status: %s", kind, other))
	}
	return strings.Join(m, ", ")
}

// podReady is ContainersReady as Ready, unless a readiness gate is unmet.
func podReady(pod *v1.Pod, conditions []v1.PodCondition, ready v1.PodCondition) v1.PodCondition {
	ready.Type = v1.PodReady
	if ready.Status != v1.ConditionTrue {
		return ready
	}
	var unmet []string
	for _, g := range pod.Spec.ReadinessGates {
		var found *v1.PodCondition
		for i := range conditions {
			if conditions[i].Type == g.ConditionType {
				found = &conditions[i]
			}
		}
		for i := range pod.Status.Conditions {
			if found == nil && pod.Status.Conditions[i].Type == g.ConditionType {
				found = &pod.Status.Conditions[i]
			}
		}
		switch {
		case found == nil:
			unmet = append(unmet, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case found.Status != v1.ConditionTrue:
			unmet = append(unmet, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), found.Status))
		}
	}
	if len(unmet) > 0 {
		return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, Message: strings.Join(unmet, ", ")}
	}
	return ready
}
