package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPodLevelResourcesAsUpstream: what upstream's DefaultPodLevelResources
// (1.37, PodLevelResourcesFixDefaulting on) completes of spec.resources.
func TestPodLevelResourcesAsUpstream(t *testing.T) {
	q := resource.MustParse
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = q(kv[i+1])
		}
		return l
	}
	ctr := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	tests := []struct {
		name       string
		containers []corev1.Container
		in, want   *corev1.ResourceRequirements
	}{
		{name: "none set stays none", containers: []corev1.Container{ctr(rl("cpu", "1"), nil)}},
		{name: "empty stays empty", containers: []corev1.Container{ctr(rl("cpu", "1"), nil)},
			in: &corev1.ResourceRequirements{}, want: &corev1.ResourceRequirements{}},
		{name: "memory request from the containers",
			containers: []corev1.Container{ctr(rl("memory", "64Mi"), nil), ctr(rl("memory", "32Mi"), nil)},
			in:         &corev1.ResourceRequirements{Requests: rl("cpu", "1")},
			want:       &corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "96Mi")}},
		{name: "request from the pod-level limit",
			containers: []corev1.Container{ctr(nil, nil)},
			in:         &corev1.ResourceRequirements{Limits: rl("cpu", "2")},
			want:       &corev1.ResourceRequirements{Requests: rl("cpu", "2"), Limits: rl("cpu", "2")}},
		{name: "limit from containers that all limit it, raised to the request",
			containers: []corev1.Container{ctr(rl("memory", "64Mi"), rl("memory", "128Mi"))},
			in:         &corev1.ResourceRequirements{Requests: rl("memory", "256Mi")},
			want:       &corev1.ResourceRequirements{Requests: rl("memory", "256Mi"), Limits: rl("memory", "256Mi")}},
		{name: "no limit when a container has none",
			containers: []corev1.Container{ctr(rl("memory", "64Mi"), rl("memory", "128Mi")), ctr(nil, nil)},
			in:         &corev1.ResourceRequirements{Requests: rl("memory", "100Mi")},
			want:       &corev1.ResourceRequirements{Requests: rl("memory", "100Mi")}},
		{name: "hugepage limit from the containers",
			containers: []corev1.Container{ctr(rl("hugepages-2Mi", "4Mi"), rl("hugepages-2Mi", "4Mi"))},
			in:         &corev1.ResourceRequirements{Requests: rl("cpu", "1")},
			want:       &corev1.ResourceRequirements{Requests: rl("cpu", "1", "hugepages-2Mi", "4Mi"), Limits: rl("hugepages-2Mi", "4Mi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tt.containers, Resources: tt.in}}
			PodLevelResources(pod)
			if !equality.Semantic.DeepEqual(pod.Spec.Resources, tt.want) {
				t.Errorf("got %+v, want %+v", pod.Spec.Resources, tt.want)
			}
		})
	}
}
