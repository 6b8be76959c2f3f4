package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

// TestTerminalPhaseIsNotTradedForTheOther: a pod the agent failed (its
// active deadline passed) whose containers then exit 0 on SIGTERM stays
// Failed with its reason, and a Succeeded pod does not turn Failed, as the
// kubelet forces a terminal phase back (the conformance test "Pods should
// allow activeDeadlineSeconds to be updated": pause exits 0 on SIGTERM).
func TestTerminalPhaseIsNotTradedForTheOther(t *testing.T) {
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		code   int32
		old    v1.PodStatus
		api    v1.PodPhase
		want   v1.PodPhase
		reason string
	}{
		{name: "failed for the deadline, exits 0", policy: v1.RestartPolicyAlways, code: 0,
			old: v1.PodStatus{Phase: v1.PodFailed, Reason: ReasonDeadlineExceeded, Message: MessageDeadlineExceeded}, want: v1.PodFailed, reason: ReasonDeadlineExceeded},
		{name: "failed in the API only, exits 0", policy: v1.RestartPolicyNever, code: 0, api: v1.PodFailed, want: v1.PodFailed},
		{name: "succeeded, then an exit code", policy: v1.RestartPolicyNever, code: 1, old: v1.PodStatus{Phase: v1.PodSucceeded}, want: v1.PodSucceeded},
		{name: "nothing terminal before", policy: v1.RestartPolicyNever, code: 0, want: v1.PodSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.policy, nil, "a")
			p.Status.Phase = tc.api
			s := Generate(Input{Pod: p, Runtime: rt(instance("a", podruntime.Exited, tc.code, 1, 0)), Old: tc.old, Terminal: true, Now: now})
			if s.Phase != tc.want || s.Reason != tc.reason {
				t.Errorf("phase, reason = %s, %q; want %s, %q", s.Phase, s.Reason, tc.want, tc.reason)
			}
		})
	}
}

// TestObservedGenerationIsThePodsGeneration: the status and the agent's
// conditions carry the generation of the pod they were made from, as the
// kubelet's (PodObservedGenerationTracking); conditions the agent does not
// own keep theirs.
func TestObservedGenerationIsThePodsGeneration(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "a")
	p.Generation = 3
	old := v1.PodStatus{Conditions: []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue, ObservedGeneration: 1}}}
	s := Generate(Input{Pod: p, Runtime: rt(instance("a", podruntime.Running, 0, 1, 0)), Old: old, Now: now})
	if s.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", s.ObservedGeneration)
	}
	for _, c := range s.Conditions {
		want := int64(3)
		if c.Type == "example.com/gate" {
			want = 1
		}
		if c.ObservedGeneration != want {
			t.Errorf("condition %s: observedGeneration %d, want %d", c.Type, c.ObservedGeneration, want)
		}
	}
}
