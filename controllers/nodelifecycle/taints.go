package nodelifecycle

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints are the NoSchedule taints that stand for node
// conditions (upstream's nodeConditionToTaintKeyStatusMap).
var conditionTaints = []struct {
	condition v1.NodeConditionType
	status    v1.ConditionStatus
	key       string
}{
	{v1.NodeReady, v1.ConditionFalse, v1.TaintNodeNotReady},
	{v1.NodeReady, v1.ConditionUnknown, v1.TaintNodeUnreachable},
	{v1.NodeMemoryPressure, v1.ConditionTrue, v1.TaintNodeMemoryPressure},
	{v1.NodeDiskPressure, v1.ConditionTrue, v1.TaintNodeDiskPressure},
	{v1.NodeNetworkUnavailable, v1.ConditionTrue, v1.TaintNodeNetworkUnavailable},
	{v1.NodePIDPressure, v1.ConditionTrue, v1.TaintNodePIDPressure},
}

// managed says whether the controller owns a taint.
func managed(t v1.Taint) bool {
	if t.Key == v1.TaintNodeUnschedulable && t.Effect == v1.TaintEffectNoSchedule {
		return true
	}
	for _, ct := range conditionTaints {
		if t.Key == ct.key && t.Effect == v1.TaintEffectNoSchedule {
			return true
		}
	}
	return (t.Key == v1.TaintNodeNotReady || t.Key == v1.TaintNodeUnreachable) && t.Effect == v1.TaintEffectNoExecute
}

// noExecuteTaint is the NoExecute taint a node's Ready condition calls
// for: not-ready when False, unreachable when Unknown (or absent), none
// when True.
func noExecuteTaint(node *v1.Node) string {
	c := readyCondition(&node.Status)
	switch {
	case c == nil || c.Status == v1.ConditionUnknown:
		return v1.TaintNodeUnreachable
	case c.Status == v1.ConditionFalse:
		return v1.TaintNodeNotReady
	}
	return ""
}

// desiredTaints is the node's taint list with the controller's taints
// as its conditions and spec call for: NoSchedule ones for conditions and
// spec.unschedulable, and the NoExecute one when noExecute is set. Taints
// of others are kept, and so is the TimeAdded of a taint that stays.
// holdNoExecute keeps the node's current NoExecute taints as they are
// (eviction paused: the rate limit or a partial disruption), except that
// an unready one is swapped for the other at once.
func desiredTaints(node *v1.Node, noExecute bool, holdNoExecute bool, now time.Time) []v1.Taint {
	var want []v1.Taint
	for _, ct := range conditionTaints {
		for _, c := range node.Status.Conditions {
			if c.Type == ct.condition && c.Status == ct.status {
				want = append(want, v1.Taint{Key: ct.key, Effect: v1.TaintEffectNoSchedule})
			}
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	key := noExecuteTaint(node)
	switch {
	case noExecute && key != "" && !holdNoExecute:
		want = append(want, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute})
	case noExecute && key != "" && holdNoExecute:
		// Only a swap, never a new taint, while eviction is paused.
		for _, t := range node.Spec.Taints {
			if managed(t) && t.Effect == v1.TaintEffectNoExecute {
				want = append(want, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute})
				break
			}
		}
	}
	var out []v1.Taint
	for _, t := range node.Spec.Taints {
		if !managed(t) {
			out = append(out, t)
		}
	}
	for _, w := range want {
		i := slices.IndexFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == w.Key && t.Effect == w.Effect })
		if i >= 0 {
			out = append(out, node.Spec.Taints[i])
			continue
		}
		ts := metav1.NewTime(now)
		w.TimeAdded = &ts
		out = append(out, w)
	}
	return out
}

// sameTaints compares taint lists as sets of key, value and effect.
func sameTaints(a, b []v1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for _, t := range a {
		if !slices.ContainsFunc(b, func(u v1.Taint) bool { return t.Key == u.Key && t.Value == u.Value && t.Effect == u.Effect }) {
			return false
		}
	}
	return true
}

// zoneLabel groups nodes into zones for the disruption rules.
const zoneLabel = "topology.kubernetes.io/zone"

// Disruption rules (upstream's defaults for the node lifecycle controller).
const (
	unhealthyZoneThreshold = 0.55
	largeClusterThreshold  = 50
)

// disruption says, per zone, whether new NoExecute taints are paused, and
// whether every zone is fully disrupted (no node Ready anywhere), in which
// case no node gets a NoExecute taint and the ones there go: upstream's
// "master disruption mode", so a cluster that lost every node (or a
// one-node cluster whose agent restarts) keeps its pods.
func disruption(nodes []*v1.Node) (paused map[string]bool, full bool) {
	type count struct{ total, notReady int }
	zones := map[string]*count{}
	for _, n := range nodes {
		z := n.Labels[zoneLabel]
		if zones[z] == nil {
			zones[z] = &count{}
		}
		zones[z].total++
		if c := readyCondition(&n.Status); c == nil || c.Status != v1.ConditionTrue {
			zones[z].notReady++
		}
	}
	paused = map[string]bool{}
	full = len(zones) > 0
	for z, c := range zones {
		fullZone := c.notReady == c.total
		full = full && fullZone
		partial := !fullZone && c.notReady > 2 && float64(c.notReady)/float64(c.total) >= unhealthyZoneThreshold
		// The secondary eviction rate is zero in small clusters.
		paused[z] = partial && c.total <= largeClusterThreshold
	}
	return paused, full
}
