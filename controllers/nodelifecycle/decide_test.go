package nodelifecycle

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func nodeWith(ready v1.ConditionStatus, heartbeat time.Time) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0)}}
	if ready != "" {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(t0)}}
	}
	return n
}

func leaseAt(t time.Time) *coordv1.Lease {
	rt := metav1.NewMicroTime(t)
	return &coordv1.Lease{Spec: coordv1.LeaseSpec{RenewTime: &rt}}
}

func TestObserve(t *testing.T) {
	cases := []struct {
		name      string
		prev      *health
		node      *v1.Node
		lease     *coordv1.Lease
		wantProbe time.Time
	}{
		{"first sight counts from now", nil, nodeWith(v1.ConditionTrue, t0), nil, t0.Add(time.Minute)},
		{"never posted Ready counts from creation", nil, nodeWith("", t0), nil, t0},
		{"same heartbeat keeps the probe",
			&health{status: &nodeWith(v1.ConditionTrue, t0).Status, probe: t0}, nodeWith(v1.ConditionTrue, t0), nil, t0},
		{"a new heartbeat moves it",
			&health{status: &nodeWith(v1.ConditionTrue, t0).Status, probe: t0}, nodeWith(v1.ConditionTrue, t0.Add(time.Second)), nil, t0.Add(time.Minute)},
		{"a renewed lease moves it",
			&health{status: &nodeWith(v1.ConditionTrue, t0).Status, lease: leaseAt(t0), probe: t0}, nodeWith(v1.ConditionTrue, t0), leaseAt(t0.Add(time.Second)), t0.Add(time.Minute)},
		{"the same lease does not",
			&health{status: &nodeWith(v1.ConditionTrue, t0).Status, lease: leaseAt(t0), probe: t0}, nodeWith(v1.ConditionTrue, t0), leaseAt(t0), t0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := observe(c.prev, c.node, c.lease, t0.Add(time.Minute))
			if !h.probe.Equal(c.wantProbe) {
				t.Fatalf("probe = %v, want %v", h.probe, c.wantProbe)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	grace, startup := 50*time.Second, 60*time.Second
	t.Run("within grace nothing changes", func(t *testing.T) {
		if out := expired(nodeWith(v1.ConditionTrue, t0), &health{probe: t0}, t0.Add(grace), grace, startup); out != nil {
			t.Fatalf("node changed within grace: %+v", out.Status.Conditions)
		}
	})
	t.Run("past grace Ready and pressures are Unknown", func(t *testing.T) {
		n := nodeWith(v1.ConditionTrue, t0)
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse})
		now := t0.Add(grace + time.Second)
		out := expired(n, &health{probe: t0}, now, grace, startup)
		if out == nil {
			t.Fatal("node not marked")
		}
		want := map[v1.NodeConditionType]string{v1.NodeReady: ReasonUnknown, v1.NodeMemoryPressure: ReasonUnknown,
			v1.NodeDiskPressure: ReasonNeverUpdated, v1.NodePIDPressure: ReasonNeverUpdated}
		for _, c := range out.Status.Conditions {
			if c.Status != v1.ConditionUnknown || c.Reason != want[c.Type] || !c.LastTransitionTime.Time.Equal(now) {
				t.Errorf("%s = %s/%s at %v, want Unknown/%s at %v", c.Type, c.Status, c.Reason, c.LastTransitionTime, want[c.Type], now)
			}
			delete(want, c.Type)
		}
		if len(want) != 0 {
			t.Errorf("missing conditions %v", want)
		}
		if rc := readyCondition(&out.Status); rc.Message != MessageUnknown {
			t.Errorf("Ready message %q", rc.Message)
		}
	})
	t.Run("already Unknown is not written again", func(t *testing.T) {
		n := nodeWith(v1.ConditionUnknown, t0)
		n.Status.Conditions = expired(nodeWith(v1.ConditionTrue, t0), &health{probe: t0}, t0.Add(time.Hour), grace, startup).Status.Conditions
		if out := expired(n, &health{probe: t0}, t0.Add(2*time.Hour), grace, startup); out != nil {
			t.Fatalf("written again: %+v", out.Status.Conditions)
		}
	})
	t.Run("a node that never posted gets the startup grace", func(t *testing.T) {
		n := nodeWith("", t0)
		if out := expired(n, &health{probe: t0}, t0.Add(55*time.Second), grace, startup); out != nil {
			t.Fatal("marked within the startup grace")
		}
		out := expired(n, &health{probe: t0}, t0.Add(61*time.Second), grace, startup)
		if rc := readyCondition(&out.Status); rc == nil || rc.Reason != ReasonNeverUpdated || rc.Message != MessageNeverUpdated {
			t.Fatalf("Ready = %+v, want NodeStatusNeverUpdated", rc)
		}
	})
}

func taintKeys(ts []v1.Taint) map[string]v1.TaintEffect {
	m := map[string]v1.TaintEffect{}
	for _, t := range ts {
		m[t.Key+":"+string(t.Effect)] = t.Effect
	}
	return m
}

func TestDesiredTaints(t *testing.T) {
	foreign := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}
	cases := []struct {
		name            string
		ready           v1.ConditionStatus
		mod             func(*v1.Node)
		noExecute, hold bool
		want            []string
	}{
		{"ready node has none", v1.ConditionTrue, nil, true, false, nil},
		{"not ready", v1.ConditionFalse, nil, true, false, []string{"node.kubernetes.io/not-ready:NoSchedule", "node.kubernetes.io/not-ready:NoExecute"}},
		{"unknown", v1.ConditionUnknown, nil, true, false, []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"}},
		{"full disruption: no NoExecute", v1.ConditionUnknown, nil, false, false, []string{"node.kubernetes.io/unreachable:NoSchedule"}},
		{"held: no new NoExecute", v1.ConditionUnknown, nil, true, true, []string{"node.kubernetes.io/unreachable:NoSchedule"}},
		{"held: an existing NoExecute is swapped", v1.ConditionUnknown, func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}}
		}, true, true, []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"}},
		{"healthy again: ours go, others stay", v1.ConditionTrue, func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{foreign, {Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}, {Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}}
		}, true, false, []string{"dedicated:NoSchedule"}},
		{"pressure and unschedulable", v1.ConditionTrue, func(n *v1.Node) {
			n.Spec.Unschedulable = true
			n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue})
		}, true, false, []string{"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := nodeWith(c.ready, t0)
			if c.mod != nil {
				c.mod(n)
			}
			got := taintKeys(desiredTaints(n, c.noExecute, c.hold, t0))
			if len(got) != len(c.want) {
				t.Fatalf("taints = %v, want %v", got, c.want)
			}
			for _, w := range c.want {
				if _, ok := got[w]; !ok {
					t.Fatalf("taints = %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestDisruption(t *testing.T) {
	mk := func(zone string, ready v1.ConditionStatus) *v1.Node {
		n := nodeWith(ready, t0)
		n.Labels = map[string]string{zoneLabel: zone}
		return n
	}
	cases := []struct {
		name       string
		nodes      []*v1.Node
		wantFull   bool
		wantPaused map[string]bool
	}{
		{"one node down is full disruption", []*v1.Node{mk("", v1.ConditionUnknown)}, true, map[string]bool{"": false}},
		{"one of two down", []*v1.Node{mk("", v1.ConditionUnknown), mk("", v1.ConditionTrue)}, false, map[string]bool{"": false}},
		{"one zone down, another up", []*v1.Node{mk("a", v1.ConditionUnknown), mk("b", v1.ConditionTrue)}, false, map[string]bool{"a": false, "b": false}},
		{"3 of 4 down pauses a small zone", []*v1.Node{mk("a", v1.ConditionFalse), mk("a", v1.ConditionUnknown), mk("a", v1.ConditionUnknown), mk("a", v1.ConditionTrue)},
			false, map[string]bool{"a": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			paused, full := disruption(c.nodes)
			if full != c.wantFull {
				t.Fatalf("full = %v, want %v", full, c.wantFull)
			}
			for z, want := range c.wantPaused {
				if paused[z] != want {
					t.Fatalf("paused[%q] = %v, want %v", z, paused[z], want)
				}
			}
		})
	}
}
