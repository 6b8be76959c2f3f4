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

// TestDecidePodLevelResizeAsTheKubelet: a change of the pod-level
// resources alone is a resize (also one that adds them), decided against
// the node's allocatable with the pod-level requests, and the allocation
// carries the pod-level resources back into the pod.
func TestDecidePodLevelResizeAsTheKubelet(t *testing.T) {
	q := resource.MustParse
	podLevel := func(cpu string) *v1.Pod {
		p := resizePod("100m")
		if cpu != "" {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q(cpu)}}
		}
		return p
	}
	allocatable := v1.ResourceList{v1.ResourceCPU: q("2")}
	others := []*v1.Pod{resizePod("1")}
	tests := []struct {
		name            string
		allocated, spec string
		want            ResizeDecision
	}{
		{name: "pod-level as allocated", allocated: "500m", spec: "500m", want: ResizeDecision{}},
		{name: "pod-level grows and fits", allocated: "500m", spec: "900m", want: ResizeDecision{Allocate: true}},
		{name: "pod-level added", allocated: "", spec: "300m", want: ResizeDecision{Allocate: true}},
		{name: "pod-level does not fit", allocated: "500m", spec: "1500m",
			want: ResizeDecision{Reason: ResizeDeferred, Message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideResize(podLevel(tt.spec), AllocationOf(podLevel(tt.allocated)), others, allocatable, 0, true)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	back := WithAllocation(podLevel("900m"), AllocationOf(podLevel("500m")))
	if c := back.Spec.Resources.Requests[v1.ResourceCPU]; c.Cmp(q("500m")) != 0 {
		t.Errorf("pod-level cpu %v with the allocation; want the allocated 500m", back.Spec.Resources.Requests)
	}
	if back := WithAllocation(podLevel("300m"), AllocationOf(podLevel(""))); back.Spec.Resources != nil {
		t.Errorf("pod-level resources %v with an allocation that has none; want none", back.Spec.Resources)
	}
}
