package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// TestMerge: the agent's conditions over the API's others; a terminal
// phase only once the worker finished; a terminal pod never Ready.
func TestMerge(t *testing.T) {
	cond := func(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s}
	}
	gate := cond("example.com/gate", v1.ConditionTrue)
	tests := []struct {
		name     string
		api, own v1.PodStatus
		finished bool
		want     v1.PodStatus
	}{
		{"the agent's conditions replace the API's; others are kept",
			v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse), gate}},
			v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), cond("example.com/mine", v1.ConditionTrue)}},
			false,
			v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), gate}}},
		{"a terminal phase waits for the worker",
			v1.PodStatus{Phase: v1.PodRunning, Reason: "api"},
			v1.PodStatus{Phase: v1.PodFailed, Reason: "DeadlineExceeded", Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)}},
			false,
			v1.PodStatus{Phase: v1.PodRunning, Reason: "api", Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)}}},
		{"a finished pod's terminal phase is written, never Ready",
			v1.PodStatus{Phase: v1.PodRunning},
			v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), cond(v1.ContainersReady, v1.ConditionTrue)}},
			true,
			v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse), cond(v1.ContainersReady, v1.ConditionFalse)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Merge(tc.api, tc.own, tc.finished)); d != "" {
				t.Errorf("Merge (-want +got):\n%s", d)
			}
		})
	}
}

// TestPatchOfNothingIsNil: a status equal to the API's needs no request.
func TestPatchOfNothingIsNil(t *testing.T) {
	st := v1.PodStatus{Phase: v1.PodRunning, HostIP: "10.0.0.1"}
	if p, err := Patch("uid-1", st, st); err != nil || p != nil {
		t.Errorf("Patch of an unchanged status = %s, %v; want nil", p, err)
	}
	if p, err := Patch("uid-1", v1.PodStatus{}, st); err != nil || p == nil {
		t.Errorf("Patch of a changed status = %s, %v; want a patch", p, err)
	}
}
