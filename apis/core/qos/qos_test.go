package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(cpu, mem string, more ...string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	for i := 0; i+1 < len(more); i += 2 {
		l[v1.ResourceName(more[i])] = resource.MustParse(more[i+1])
	}
	return l
}

func req(requests, limits v1.ResourceList) v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: requests, Limits: limits}
}

// TestComputePodQOS: upstream 1.37's cases
// (pkg/apis/core/v1/helper/qos/qos_test.go, PodLevelResources and
// PodLevelResourcesFixKubeletQOSClass on), and the cases where Kite's two
// former rules (the agent's podstatus.QOSClass, the registry's
// defaults.PodQOSClass) answered otherwise, marked "was".
func TestComputePodQOS(t *testing.T) {
	guaranteed := req(rl("100m", "100Mi", "ephemeral-storage", "10Gi"), rl("100m", "100Mi"))
	cases := []struct {
		name       string
		init, ctrs []v1.ResourceRequirements
		pod        *v1.ResourceRequirements
		want       v1.PodQOSClass
	}{
		{name: "guaranteed (an ephemeral-storage request does not count)", ctrs: []v1.ResourceRequirements{guaranteed}, want: v1.PodQOSGuaranteed},
		{name: "nothing", ctrs: []v1.ResourceRequirements{{}}, want: v1.PodQOSBestEffort},
		{name: "zero requests", ctrs: []v1.ResourceRequirements{req(rl("0", "0"), nil)}, want: v1.PodQOSBestEffort},
		{name: "zero requests and limits", ctrs: []v1.ResourceRequirements{req(rl("0", "0"), rl("0", "0"))}, want: v1.PodQOSBestEffort},
		{name: "ephemeral-storage only", ctrs: []v1.ResourceRequirements{req(rl("", "", "ephemeral-storage", "10Gi"), rl("", "", "ephemeral-storage", "10Gi"))}, want: v1.PodQOSBestEffort},
		{name: "requests below limits", ctrs: []v1.ResourceRequirements{req(rl("100m", "100Mi"), rl("200m", "200Mi"))}, want: v1.PodQOSBurstable},
		{name: "memory request below its limit", ctrs: []v1.ResourceRequirements{req(rl("100m", "100Mi"), rl("100m", "200Mi"))}, want: v1.PodQOSBurstable},
		{name: "requests only", ctrs: []v1.ResourceRequirements{req(rl("100m", "100Mi"), nil)}, want: v1.PodQOSBurstable},
		{name: "cpu guaranteed, memory not limited", ctrs: []v1.ResourceRequirements{req(rl("100m", "100Mi"), rl("100m", ""))}, want: v1.PodQOSBurstable},
		{name: "two guaranteed", ctrs: []v1.ResourceRequirements{guaranteed, guaranteed}, want: v1.PodQOSGuaranteed},
		{name: "guaranteed beside best effort", ctrs: []v1.ResourceRequirements{guaranteed, {}}, want: v1.PodQOSBurstable},
		{name: "guaranteed beside a best-effort init container", init: []v1.ResourceRequirements{{}}, ctrs: []v1.ResourceRequirements{guaranteed}, want: v1.PodQOSBurstable},
		{name: "a burstable init container", init: []v1.ResourceRequirements{req(rl("100m", ""), nil)}, ctrs: []v1.ResourceRequirements{{}}, want: v1.PodQOSBurstable},
		{name: "guaranteed beside explicit zeros", ctrs: []v1.ResourceRequirements{guaranteed, req(rl("0", "0"), rl("0", "0"))}, want: v1.PodQOSBurstable},

		// Limits without requests: the API defaults the requests from
		// them, so a pod from the API has both; as written, the class
		// is Burstable (was Guaranteed in the agent's rule).
		{name: "limits without requests, as written (was Guaranteed)", ctrs: []v1.ResourceRequirements{req(nil, rl("1", "1Gi"))}, want: v1.PodQOSBurstable},
		{name: "cpu request defaulted from its limit, memory not", ctrs: []v1.ResourceRequirements{req(rl("1", ""), rl("1", "1Gi"))}, want: v1.PodQOSBurstable},
		{name: "limits with their defaulted requests", ctrs: []v1.ResourceRequirements{req(rl("1", "1Gi"), rl("1", "1Gi"))}, want: v1.PodQOSGuaranteed},

		// Pod-level resources.
		{name: "pod-level guaranteed over best-effort containers", ctrs: []v1.ResourceRequirements{{}}, pod: &v1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}, want: v1.PodQOSGuaranteed},
		{name: "pod-level cpu request only", ctrs: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{Requests: rl("1", "")}, want: v1.PodQOSBurstable},
		{name: "pod-level zeros decide (best effort over guaranteed containers)", ctrs: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{Requests: rl("0", "0"), Limits: rl("0", "0")}, want: v1.PodQOSBestEffort},
		{name: "empty pod-level resources fall back to the containers", ctrs: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}, want: v1.PodQOSGuaranteed},
		{name: "nil-map pod-level resources fall back to the containers", ctrs: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{}, want: v1.PodQOSGuaranteed},
		{name: "pod-level with hugepages, guaranteed", ctrs: []v1.ResourceRequirements{{}}, pod: &v1.ResourceRequirements{Requests: rl("10m", "100Mi", "hugepages-2Mi", "100Mi"), Limits: rl("10m", "100Mi", "hugepages-2Mi", "100Mi")}, want: v1.PodQOSGuaranteed},
		{name: "pod-level with hugepages, burstable", ctrs: []v1.ResourceRequirements{{}}, pod: &v1.ResourceRequirements{Requests: rl("10m", "", "hugepages-2Mi", "100Mi"), Limits: rl("", "", "hugepages-2Mi", "100Mi")}, want: v1.PodQOSBurstable},
		// PodLevelResourcesFixKubeletQOSClass: pod-level resources that
		// name no pod-level resource do not decide (both former rules let
		// any non-empty spec.resources decide alone).
		{name: "pod-level naming no pod-level resource falls back (was BestEffort)", ctrs: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{Requests: rl("", "", "ephemeral-storage", "1Gi")}, want: v1.PodQOSGuaranteed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Resources: tc.pod}}
			for _, r := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: "init", Resources: r})
			}
			for _, r := range tc.ctrs {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c", Resources: r})
			}
			if got := ComputePodQOS(pod); got != tc.want {
				t.Errorf("ComputePodQOS = %s, want %s", got, tc.want)
			}
			// Init containers count as containers do: moving the
			// second container into the init containers changes nothing.
			if len(tc.init) == 0 && len(tc.ctrs) == 2 {
				moved := pod.DeepCopy()
				moved.Spec.InitContainers, moved.Spec.Containers = moved.Spec.Containers[1:], moved.Spec.Containers[:1]
				if got := ComputePodQOS(moved); got != tc.want {
					t.Errorf("as an init container: ComputePodQOS = %s, want %s", got, tc.want)
				}
			}
		})
	}
}

// TestGetPodQOS: the class set at creation stands (a pod's class never
// changes); without one it is computed.
func TestGetPodQOS(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	if got := GetPodQOS(pod); got != v1.PodQOSBestEffort {
		t.Errorf("no status: %s, want BestEffort", got)
	}
	pod.Status.QOSClass = v1.PodQOSBurstable
	if got := GetPodQOS(pod); got != v1.PodQOSBurstable {
		t.Errorf("status Burstable: %s, want Burstable", got)
	}
}
