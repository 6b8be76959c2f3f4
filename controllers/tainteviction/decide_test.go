package tainteviction

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestDecide(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	unreachable := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	notReady := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}
	noSchedule := v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}
	tol := func(key string, s *int64) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	cases := []struct {
		name        string
		taints      []v1.Taint
		tolerations []v1.Toleration
		want        Decision
	}{
		{"no taints", nil, nil, Decision{}},
		{"NoSchedule taints do not evict", []v1.Taint{noSchedule}, nil, Decision{}},
		{"untolerated NoExecute evicts now", []v1.Taint{unreachable}, nil, Decision{Evict: true}},
		{"tolerated for 300 s", []v1.Taint{unreachable}, []v1.Toleration{tol(v1.TaintNodeUnreachable, secs(300))}, Decision{Evict: true, After: 300 * time.Second}},
		{"tolerated forever", []v1.Taint{unreachable}, []v1.Toleration{tol(v1.TaintNodeUnreachable, nil)}, Decision{}},
		{"the smallest tolerationSeconds wins", []v1.Taint{unreachable, notReady},
			[]v1.Toleration{tol(v1.TaintNodeUnreachable, secs(300)), tol(v1.TaintNodeNotReady, secs(30))}, Decision{Evict: true, After: 30 * time.Second}},
		{"one untolerated of two evicts now", []v1.Taint{unreachable, notReady}, []v1.Toleration{tol(v1.TaintNodeUnreachable, nil)}, Decision{Evict: true}},
		{"negative seconds evict now", []v1.Taint{unreachable}, []v1.Toleration{tol(v1.TaintNodeUnreachable, secs(-5))}, Decision{Evict: true}},
		{"a wildcard toleration tolerates all", []v1.Taint{unreachable, notReady}, []v1.Toleration{{Operator: v1.TolerationOpExists}}, Decision{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Tolerations: c.tolerations}}
			if got := Decide(pod, c.taints); got != c.want {
				t.Fatalf("Decide = %+v, want %+v", got, c.want)
			}
		})
	}
}
