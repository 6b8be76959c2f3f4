package podactions

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// Allocation is what the agent admitted of a pod's containers, by
// container name: the resources its containers run with, which differ
// from the spec while a resize is pending (the kubelet's allocation
// manager's checkpoint). The pod-level resources (spec.resources), when
// the pod has them, are under PodLevel, a name no container can have
// (the kubelet's PodResourceInfo.PodLevelResources).
type Allocation map[string]v1.ResourceRequirements

// PodLevel is the Allocation key of the pod-level resources.
const PodLevel = ""

// AllocationOf is the pod's spec as an allocation.
func AllocationOf(pod *v1.Pod) Allocation {
	a := Allocation{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			a[cs[i].Name] = *cs[i].Resources.DeepCopy()
		}
	}
	if pod.Spec.Resources != nil {
		a[PodLevel] = *pod.Spec.Resources.DeepCopy()
	}
	return a
}

// WithAllocation is pod with its containers' resources and its pod-level
// resources those of a (the kubelet's UpdatePodFromAllocation, with
// InPlacePodLevelResourcesVerticalScaling): what new instances and the
// pod's cgroup run with.
func WithAllocation(pod *v1.Pod, a Allocation) *v1.Pod {
	if a == nil {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if r, ok := a[cs[i].Name]; ok {
				cs[i].Resources = *r.DeepCopy()
			}
		}
	}
	if r, ok := a[PodLevel]; ok {
		out.Spec.Resources = r.DeepCopy()
	} else {
		// Allocated without pod-level resources (a resize added them
		// and is not allocated yet).
		out.Spec.Resources = nil
	}
	return out
}

// Resize reasons of the PodResizePending condition, as upstream's.
const (
	ResizeInfeasible = v1.PodReasonInfeasible
	ResizeDeferred   = v1.PodReasonDeferred
)

// MessageResizeUnsupported is the Infeasible message of a node whose
// runtime cannot change a running container's resources (upstream's
// for a platform without in-place resize).
const MessageResizeUnsupported = "In-place pod resize is not supported on this node"

// ResizeDecision is what the agent does about a pod whose spec asks for
// other resources than it allocated.
type ResizeDecision struct {
	// Allocate: the spec's resources become the allocation.
	Allocate bool
	// Reason and Message, when Reason is set, are the PodResizePending
	// condition's: Infeasible or Deferred.
	Reason, Message string
}

// DecideResize is the kubelet's handlePodResourcesResize for pod, whose
// allocation is a, beside the allocations of the node's other pods: no
// change when the spec is what was allocated; Infeasible when the runtime
// cannot resize (supported false); Deferred with the admission's message
// when the new requests do not fit beside the others' (upstream's admit
// handlers turn every reason but Infeasible into Deferred); else the
// spec is allocated.
func DecideResize(pod *v1.Pod, a Allocation, others []*v1.Pod, allocatable v1.ResourceList, maxPods int, supported bool) ResizeDecision {
	if !ResizeRequested(pod, a) {
		return ResizeDecision{}
	}
	if !supported {
		return ResizeDecision{Reason: ResizeInfeasible, Message: MessageResizeUnsupported}
	}
	if r := Admit(pod, others, allocatable, maxPods); r != nil && strings.HasPrefix(r.Reason, "OutOf") {
		return ResizeDecision{Reason: ResizeDeferred, Message: r.Message}
	}
	return ResizeDecision{Allocate: true}
}

// ResizeRequested says that the spec's resources of a container, or the
// pod-level ones, differ from the allocation.
func ResizeRequested(pod *v1.Pod, a Allocation) bool {
	for name, want := range AllocationOf(pod) {
		got, ok := a[name]
		if ok && !apiequality.Semantic.DeepEqual(got, want) {
			return true
		}
		// Pod-level resources the allocation lacks were added by a
		// resize.
		if !ok && name == PodLevel {
			return true
		}
	}
	return false
}

// RestartsToResize says whether changing a container's resources from
// old to new needs a restart under its resizePolicy: a changed cpu or
// memory whose policy is RestartContainer (NotRequired is the default).
func RestartsToResize(c *v1.Container, old, new v1.ResourceRequirements) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != v1.RestartContainer {
			continue
		}
		n := p.ResourceName
		if !old.Requests[n].Equal(new.Requests[n]) || !old.Limits[n].Equal(new.Limits[n]) {
			return true
		}
	}
	return false
}
