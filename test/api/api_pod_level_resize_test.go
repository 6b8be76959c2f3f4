package api_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestPodLevelResizeThroughAPI: with 1.37's default gates
// (PodLevelResources, InPlacePodLevelResourcesVerticalScaling and
// PodLevelResourcesFixDefaulting on) a pod created with pod-level
// resources has them completed from its containers and its QoS class
// from them; pods/resize changes the pod-level cpu and memory (a new
// generation), keeps them when the write leaves them out, and refuses
// what upstream refuses, with upstream's messages.
func TestPodLevelResizeThroughAPI(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(config(t))
	const ns = "pod-level-resize"
	createNamespace(t, cs, ns)
	q := resource.MustParse
	pods := cs.CoreV1().Pods(ns)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1.PodSpec{
			NodeName: "nowhere",
			Resources: &v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("500m")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("1")},
			},
			Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")},
				Limits:   v1.ResourceList{v1.ResourceMemory: q("128Mi")},
			}}},
		},
	}
	got, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Defaulting: the memory request from the container's, the memory
	// limit from the container's (its only container limits it).
	r := got.Spec.Resources
	if m := r.Requests[v1.ResourceMemory]; m.Cmp(q("64Mi")) != 0 {
		t.Errorf("pod-level memory request %v after create; want 64Mi from the container", r.Requests)
	}
	if m := r.Limits[v1.ResourceMemory]; m.Cmp(q("128Mi")) != 0 {
		t.Errorf("pod-level memory limit %v after create; want 128Mi from the container", r.Limits)
	}
	if got.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass %s; want Burstable", got.Status.QOSClass)
	}

	// A resize of the pod-level cpu.
	got.Spec.Resources.Requests[v1.ResourceCPU] = q("700m")
	got.Spec.Resources.Limits[v1.ResourceCPU] = q("2")
	resized, err := pods.UpdateResize(ctx, "p", got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("resize pod-level cpu: %v", err)
	}
	if c := resized.Spec.Resources.Requests[v1.ResourceCPU]; c.Cmp(q("700m")) != 0 {
		t.Errorf("pod-level cpu request %v after resize; want 700m", resized.Spec.Resources.Requests)
	}
	if resized.Generation != got.Generation+1 {
		t.Errorf("generation %d after resize; want %d", resized.Generation, got.Generation+1)
	}

	// A writer that knows nothing of pod-level resources keeps them.
	blind := resized.DeepCopy()
	blind.Spec.Resources = nil
	blind.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("200m")
	kept, err := pods.UpdateResize(ctx, "p", blind, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("resize without pod-level resources: %v", err)
	}
	if kept.Spec.Resources == nil || kept.Spec.Resources.Requests.Cpu().Cmp(q("700m")) != 0 {
		t.Errorf("pod-level resources %v after a write without them; want them kept", kept.Spec.Resources)
	}

	refused := []struct {
		name   string
		change func(*v1.Pod)
		want   string
	}{
		{"request below the containers'", func(p *v1.Pod) { p.Spec.Resources.Requests[v1.ResourceCPU] = q("150m") },
			`spec.resources.requests[cpu]: Invalid value: "150m": must be greater than or equal to aggregate container requests of 200m`},
		{"remove a pod-level limit", func(p *v1.Pod) { delete(p.Spec.Resources.Limits, v1.ResourceCPU) },
			"spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"},
		{"pod-level ephemeral storage", func(p *v1.Pod) { p.Spec.Resources.Limits[v1.ResourceEphemeralStorage] = q("1Gi") },
			"Unsupported value: \"ephemeral-storage\""},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			p := kept.DeepCopy()
			tc.change(p)
			_, err := pods.UpdateResize(ctx, "p", p, metav1.UpdateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resize: %v; want 422 with %q", err, tc.want)
			}
		})
	}
}
