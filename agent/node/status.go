package node

import (
	"cmp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Info is what the host and the agent know of the node at one moment.
type Info struct {
	// CPUs, MemoryBytes and EphemeralStorageBytes are the capacity;
	// zero leaves a resource out.
	CPUs                  int64
	MemoryBytes           int64
	EphemeralStorageBytes int64
	// MaxPods is capacity.pods (--max-pods).
	MaxPods int64
	// Addresses are the node's addresses, InternalIP first.
	Addresses []v1.NodeAddress
	// NodeInfo is kernel, OS image, versions, IDs.
	NodeInfo v1.NodeSystemInfo
	// Port is daemonEndpoints.kubeletEndpoint.port (--port).
	Port int32
	// NotReady are the reasons the node cannot run pods (the runtime is
	// down, ...): empty means Ready.
	NotReady []string
	// MemoryPressure, DiskPressure and PIDPressure are the eviction
	// signals' verdicts; nil means not measured yet (Unknown).
	MemoryPressure, DiskPressure, PIDPressure *bool
	// Degraded are the runtime's conditions of what it cannot do while it
	// still runs pods (no writable cgroup: no limits, ...), shown as Node
	// conditions of their type with status False, after Ready. A
	// condition that is no longer reported goes from the Node.
	Degraded []v1.NodeCondition
	// Images are status.images (NodeImages); nil keeps what the Node has.
	Images []v1.ContainerImage
	// EvictionHard are the hard eviction thresholds, which allocatable
	// holds back; nil means DefaultEvictionHard.
	EvictionHard Thresholds
}

// Ready condition reasons and messages, the kubelet's
// (nodestatus.ReadyCondition).
const (
	ReasonReady    = "KubeletReady"
	MessageReady   = "kubelet is posting ready status"
	ReasonNotReady = "KubeletNotReady"
)

// pressure is one of the pressure conditions' reasons and messages.
type pressure struct {
	typ                   v1.NodeConditionType
	falseReason, falseMsg string
	trueReason, trueMsg   string
}

var pressures = []pressure{
	{v1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
	{v1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", "KubeletHasDiskPressure", "kubelet has disk pressure"},
	{v1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
}

// Build is the node status for info at now, given the previous status
// (nil for a new node): the conditions keep their lastTransitionTime unless
// their status flips, and every condition's lastHeartbeatTime is now.
// Conditions come in the kubelet's order: MemoryPressure, DiskPressure,
// PIDPressure, Ready.
func Build(info Info, old *v1.NodeStatus, now metav1.Time) v1.NodeStatus {
	capacity := v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(info.MaxPods, resource.DecimalSI)}
	if info.CPUs > 0 {
		capacity[v1.ResourceCPU] = *resource.NewQuantity(info.CPUs, resource.DecimalSI)
	}
	if info.MemoryBytes > 0 {
		capacity[v1.ResourceMemory] = *resource.NewQuantity(info.MemoryBytes, resource.BinarySI)
	}
	if info.EphemeralStorageBytes > 0 {
		capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(info.EphemeralStorageBytes, resource.BinarySI)
	}
	var oldConds []v1.NodeCondition
	if old != nil {
		oldConds = old.Conditions
	}
	conds := make([]v1.NodeCondition, 0, len(pressures)+1)
	for i, p := range pressures {
		verdict := []*bool{info.MemoryPressure, info.DiskPressure, info.PIDPressure}[i]
		c := v1.NodeCondition{Type: p.typ, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "kubelet has not measured it yet"}
		switch {
		case verdict == nil:
		case *verdict:
			c.Status, c.Reason, c.Message = v1.ConditionTrue, p.trueReason, p.trueMsg
		default:
			c.Status, c.Reason, c.Message = v1.ConditionFalse, p.falseReason, p.falseMsg
		}
		conds = append(conds, stamp(c, oldConds, now))
	}
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReasonReady, Message: MessageReady}
	if len(info.NotReady) > 0 {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, ReasonNotReady, joinErrors(info.NotReady)
	}
	conds = append(conds, stamp(ready, oldConds, now))
	own := map[v1.NodeConditionType]bool{v1.NodeReady: true}
	for _, p := range pressures {
		own[p.typ] = true
	}
	for _, c := range info.Degraded {
		c.Status = v1.ConditionFalse
		conds = append(conds, stamp(c, oldConds, now))
		own[c.Type] = true
	}
	for _, o := range oldConds {
		// Conditions others set (a node problem detector's) stay; the
		// runtime's that are no longer reported go.
		if !own[o.Type] && !DegradedTypes[o.Type] {
			conds = append(conds, o)
		}
	}

	status := v1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     allocatable(capacity, info.EvictionHard),
		Conditions:      conds,
		Addresses:       info.Addresses,
		NodeInfo:        info.NodeInfo,
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: info.Port}},
	}
	if old != nil {
		// Fields the agent does not own (images, volumes, config) are kept.
		status.Images, status.VolumesInUse, status.VolumesAttached = old.Images, old.VolumesInUse, old.VolumesAttached
		status.Config, status.Phase, status.Features = old.Config, old.Phase, old.Features
	}
	if info.Images != nil {
		status.Images = info.Images
	}
	return status
}

// The kubelet's limits on status.images (nodeStatusMaxImages,
// maxNamesPerImageInNodeStatus).
const (
	maxImages        = 50
	maxNamesPerImage = 5
)

// NodeImages is status.images from the runtime's images, as the kubelet's
// nodestatus.Images: the largest first, at most 50, each with its digests
// then its tags (at most 5 names); images without a name are left out.
func NodeImages(imgs []*runtimeapi.Image) []v1.ContainerImage {
	sorted := slices.Clone(imgs)
	slices.SortStableFunc(sorted, func(a, b *runtimeapi.Image) int { return cmp.Compare(b.GetSize(), a.GetSize()) })
	out := []v1.ContainerImage{}
	for _, img := range sorted {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) == 0 {
			continue
		}
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
		if len(out) == maxImages {
			break
		}
	}
	return out
}

// DegradedTypes are the condition types the agent's runtimes report in
// Info.Degraded: they are the agent's to remove.
var DegradedTypes = map[v1.NodeConditionType]bool{"ResourceLimits": true, "VolumeMounts": true}

// allocatable is capacity less the hard eviction thresholds of memory
// (memory.available) and ephemeral storage (nodefs.available), floored at
// zero, as the kubelet's hardEvictionReservation; no reservations are
// configured.
func allocatable(capacity v1.ResourceList, hard Thresholds) v1.ResourceList {
	if hard == nil {
		hard, _ = ParseEvictionHard(DefaultEvictionHard())
	}
	a := capacity.DeepCopy()
	for name, signal := range map[v1.ResourceName]string{v1.ResourceMemory: SignalMemoryAvailable, v1.ResourceEphemeralStorage: SignalNodeFsAvailable} {
		q, ok := a[name]
		t, set := hard[signal]
		if !ok || !set {
			continue
		}
		held := t.Quantity
		if t.Percentage > 0 {
			held = int64(t.Percentage * float64(q.Value()))
		}
		q.Sub(*resource.NewQuantity(held, resource.BinarySI))
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, resource.BinarySI)
		}
		a[name] = q
	}
	return a
}

// stamp sets c's times: the heartbeat is now; the transition is now only
// when the status differs from the old condition of its type.
func stamp(c v1.NodeCondition, old []v1.NodeCondition, now metav1.Time) v1.NodeCondition {
	c.LastHeartbeatTime, c.LastTransitionTime = now, now
	for _, o := range old {
		if o.Type == c.Type && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
	}
	return c
}

// joinErrors words several not-ready reasons as the kubelet's aggregate
// does: one as it is, several as [e1, e2].
func joinErrors(errs []string) string {
	if len(errs) == 1 {
		return errs[0]
	}
	return "[" + strings.Join(errs, ", ") + "]"
}

// Changed says whether new differs from old in anything but the
// conditions' heartbeat times: the kubelet patches only then, or when the
// report period is up.
func Changed(old, new *v1.NodeStatus) bool {
	if old == nil {
		return true
	}
	a, b := old.DeepCopy(), new.DeepCopy()
	for _, s := range []*v1.NodeStatus{a, b} {
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return !apiequality.Semantic.DeepEqual(a, b)
}
