package containerconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kite-project/kite/agent/runtime"
)

// TestQOSTiers: the tiers' cpu shares from the active pods, as the
// kubelet's setCPUCgroupConfig: BestEffort always 2; Burstable the shares
// of the sum of its pods' cpu requests (milli-CPUs summed, then
// converted once), 2 when none asks for cpu; Guaranteed and BestEffort
// pods count for nothing.
func TestQOSTiers(t *testing.T) {
	pod := func(req, lim v1.ResourceList, mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	rl := resourceList
	guaranteed := pod(rl("1", "64Mi"), rl("1", "64Mi"))
	bestEffort := pod(nil, nil)
	burstable := func(cpu string) *v1.Pod { return pod(rl(cpu, "16Mi"), nil) }
	for _, tc := range []struct {
		name string
		pods []*v1.Pod
		want runtime.QOSTiers
	}{
		{"no pods", nil, runtime.QOSTiers{BurstableCPUShares: 2, BestEffortCPUShares: 2}},
		{"guaranteed and besteffort only", []*v1.Pod{guaranteed, bestEffort}, runtime.QOSTiers{BurstableCPUShares: 2, BestEffortCPUShares: 2}},
		{"one burstable", []*v1.Pod{burstable("100m"), guaranteed}, runtime.QOSTiers{BurstableCPUShares: 102, BestEffortCPUShares: 2}},
		// 3 x 1m is 3m, 3 shares; per pod it would be 2+2+2.
		{"summed before the conversion", []*v1.Pod{burstable("1m"), burstable("1m"), burstable("1m")}, runtime.QOSTiers{BurstableCPUShares: 3, BestEffortCPUShares: 2}},
		{"two burstable", []*v1.Pod{burstable("250m"), burstable("1500m"), bestEffort}, runtime.QOSTiers{BurstableCPUShares: 1792, BestEffortCPUShares: 2}},
		{"memory request only", []*v1.Pod{pod(rl("", "32Mi"), nil)}, runtime.QOSTiers{BurstableCPUShares: 2, BestEffortCPUShares: 2}},
		{"init container and overhead", []*v1.Pod{pod(rl("100m", ""), nil, func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("500m", "")}}}
			p.Spec.Overhead = rl("250m", "")
		})}, runtime.QOSTiers{BurstableCPUShares: 768, BestEffortCPUShares: 2}},
		{"pod-level requests", []*v1.Pod{pod(nil, nil, func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("2", "64Mi")}
		})}, runtime.QOSTiers{BurstableCPUShares: 2048, BestEffortCPUShares: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := QOSTiers(tc.pods); got != tc.want {
				t.Errorf("QOSTiers = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// resourceList is a ResourceList of the cpu and memory quantities given
// ("" leaves one out).
func resourceList(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}
