package workload

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestPodStateReached(t *testing.T) {
	ready := func(s v1.ConditionStatus) []v1.PodCondition {
		return []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: s}}
	}
	cases := []struct {
		name  string
		pod   v1.Pod
		state podState
		want  bool
	}{
		{"unbound", v1.Pod{}, podBound, false},
		{"bound", v1.Pod{Spec: v1.PodSpec{NodeName: "n"}}, podBound, true},
		{"pending is not running", v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending}}, podRunning, false},
		{"running", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning}}, podRunning, true},
		{"running but not ready", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: ready(v1.ConditionFalse)}}, podReady, false},
		{"ready", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: ready(v1.ConditionTrue)}}, podReady, true},
		{"no conditions is not ready", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning}}, podReady, false},
		{"succeeded", v1.Pod{Status: v1.PodStatus{Phase: v1.PodSucceeded}}, podSucceeded, true},
		{"failed is not succeeded", v1.Pod{Status: v1.PodStatus{Phase: v1.PodFailed}}, podSucceeded, false},
		{"a live pod is not gone", v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning}}, podGone, false},
	}
	for _, c := range cases {
		if got := c.state.reached(&c.pod); got != c.want {
			t.Errorf("%s: %v.reached = %v, want %v", c.name, c.state, got, c.want)
		}
	}
}

func TestClusterOptionsDefaultsAndMistakes(t *testing.T) {
	o, err := ClusterOptions{}.withDefaults()
	if err != nil || o.Pods != 50 || o.Execs != 20 || o.LogBytes != 100_000_000 || o.LogReads != 3 || o.Timeout == 0 || o.Log == nil {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, bad := range []ClusterOptions{{Pods: -1}, {Execs: -1}, {LogReads: -1}, {Timeout: -1}, {LogBytes: 99}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
