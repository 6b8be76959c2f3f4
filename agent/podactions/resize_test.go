package podactions

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resizePod(cpu string) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

// TestDecideResizeAsTheKubelet: no change, allocated when it fits beside
// the other pods, Deferred with the admission's message when it does not,
// Infeasible on a runtime that cannot resize.
func TestDecideResizeAsTheKubelet(t *testing.T) {
	allocatable := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
	others := []*v1.Pod{resizePod("1")}
	tests := []struct {
		name      string
		spec      string
		supported bool
		want      ResizeDecision
	}{
		{name: "as allocated", spec: "500m", supported: true, want: ResizeDecision{}},
		{name: "as allocated, runtime without resize", spec: "500m", want: ResizeDecision{}},
		{name: "fits", spec: "1", supported: true, want: ResizeDecision{Allocate: true}},
		{name: "does not fit beside the others", spec: "1500m", supported: true,
			want: ResizeDecision{Reason: ResizeDeferred, Message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
		{name: "runtime without resize", spec: "1", want: ResizeDecision{Reason: ResizeInfeasible, Message: MessageResizeUnsupported}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideResize(resizePod(tt.spec), AllocationOf(resizePod("500m")), others, allocatable, 0, tt.supported)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRestartsToResize: a restart only for a changed resource whose
// policy is RestartContainer.
func TestRestartsToResize(t *testing.T) {
	c := &v1.Container{ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}}
	mem := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(q), v1.ResourceCPU: resource.MustParse("1")}}
	}
	cpu := mem("64Mi")
	cpu.Limits[v1.ResourceCPU] = resource.MustParse("2")
	if !RestartsToResize(c, mem("64Mi"), mem("128Mi")) {
		t.Error("memory changed under RestartContainer: want a restart")
	}
	if RestartsToResize(c, mem("64Mi"), cpu) {
		t.Error("cpu changed under NotRequired: want none")
	}
	if RestartsToResize(c, mem("64Mi"), mem("64Mi")) {
		t.Error("nothing changed: want none")
	}
}
