package podactions

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAdmit(t *testing.T) {
	withRequests := func(cpu, mem string) *v1.Pod {
		r := v1.ResourceList{}
		if cpu != "" {
			r[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			r[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: r}}}}}
	}
	many := func(n int) []*v1.Pod {
		out := make([]*v1.Pod, n)
		for i := range out {
			out[i] = withRequests("", "")
		}
		return out
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	cases := []struct {
		name   string
		pod    *v1.Pod
		active []*v1.Pod
		max    int
		want   *Rejection
	}{
		{"fits", withRequests("500m", "256Mi"), many(3), 110, nil},
		{"the 111th pod", withRequests("", ""), many(110), 0,
			&Rejection{"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"}},
		{"too much cpu", withRequests("1500m", ""), []*v1.Pod{withRequests("1", "")}, 110,
			&Rejection{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
		{"too much memory", withRequests("", "768Mi"), []*v1.Pod{withRequests("", "512Mi")}, 110,
			&Rejection{"OutOfmemory", fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", 768<<20, 512<<20, 1<<30)}},
		{"best effort always fits resources", withRequests("", ""), []*v1.Pod{withRequests("2", "1Gi")}, 110, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Admit(tc.pod, tc.active, alloc, tc.max)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Admit = %+v, want %+v", got, tc.want)
			}
		})
	}
}
