package nodelifecycle

import (
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons and messages the controller writes, as upstream's.
const (
	ReasonUnknown       = "NodeStatusUnknown"
	MessageUnknown      = "Kubelet stopped posting node status."
	ReasonNeverUpdated  = "NodeStatusNeverUpdated"
	MessageNeverUpdated = "Kubelet never posted node status."
)

// health is what the controller last observed of a node: its status, its
// Lease, and when (by the controller's clock) it last heard from it.
type health struct {
	status *v1.NodeStatus
	lease  *coordv1.Lease
	probe  time.Time
}

func readyCondition(s *v1.NodeStatus) *v1.NodeCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == v1.NodeReady {
			return &s.Conditions[i]
		}
	}
	return nil
}

// observe is upstream's tryUpdateNodeHealth bookkeeping: the probe time
// moves to now when the Ready condition's heartbeat changes, when Ready
// appears or goes, or when the Lease's renewTime grows. A node seen for
// the first time counts from now, or from its creation if it never
// posted Ready.
func observe(prev *health, node *v1.Node, lease *coordv1.Lease, now time.Time) *health {
	cur := readyCondition(&node.Status)
	h := prev
	switch {
	case prev == nil && cur == nil:
		h = &health{status: node.Status.DeepCopy(), probe: node.CreationTimestamp.Time}
	case prev == nil:
		h = &health{status: node.Status.DeepCopy(), probe: now}
	default:
		saved := readyCondition(prev.status)
		switch {
		case (saved == nil) != (cur == nil),
			saved != nil && cur != nil && !saved.LastHeartbeatTime.Equal(&cur.LastHeartbeatTime):
			h = &health{status: node.Status.DeepCopy(), lease: prev.lease, probe: now}
		default:
			h = &health{status: node.Status.DeepCopy(), lease: prev.lease, probe: prev.probe}
		}
	}
	if lease != nil && lease.Spec.RenewTime != nil &&
		(h.lease == nil || h.lease.Spec.RenewTime == nil || h.lease.Spec.RenewTime.Before(lease.Spec.RenewTime)) {
		h.lease = lease
		h.probe = now
	}
	return h
}

// expired returns node with Ready, MemoryPressure, DiskPressure and
// PIDPressure set Unknown when nothing was heard from it for the grace
// period (startupGrace if it never posted Ready), or nil when no write is
// needed.
func expired(node *v1.Node, h *health, now time.Time, grace, startupGrace time.Duration) *v1.Node {
	observed := readyCondition(&node.Status)
	if observed == nil {
		grace = startupGrace
	}
	if !now.After(h.probe.Add(grace)) {
		return nil
	}
	out := node.DeepCopy()
	ts := metav1.NewTime(now)
	for _, t := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		found := false
		for i := range out.Status.Conditions {
			c := &out.Status.Conditions[i]
			if c.Type != t {
				continue
			}
			found = true
			if c.Status != v1.ConditionUnknown {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionUnknown, ReasonUnknown, MessageUnknown, ts
			}
		}
		if !found {
			out.Status.Conditions = append(out.Status.Conditions, v1.NodeCondition{
				Type: t, Status: v1.ConditionUnknown, Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: ts,
			})
		}
	}
	if observed != nil && equality.Semantic.DeepEqual(readyCondition(&out.Status), observed) {
		return nil
	}
	return out
}
