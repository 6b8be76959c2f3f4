package kubetypes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{SET: "SET", ADD: "ADD", DELETE: "DELETE", REMOVE: "REMOVE", UPDATE: "UPDATE", RECONCILE: "RECONCILE", Op(42): "Op(42)"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", int(op), got, want)
		}
	}
}

func TestPodKinds(t *testing.T) {
	pod := func(annotations map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: annotations}}
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		static, mirror bool
	}{
		{"from the file source", pod(map[string]string{ConfigSourceAnnotationKey: FileSource}), true, false},
		{"from the http source", pod(map[string]string{ConfigSourceAnnotationKey: HTTPSource}), true, false},
		{"from the API", pod(map[string]string{ConfigSourceAnnotationKey: APISource}), false, false},
		{"mirror from the API", pod(map[string]string{ConfigSourceAnnotationKey: APISource, ConfigMirrorAnnotationKey: "h"}), false, true},
		{"not through the merge", pod(nil), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsStaticPod(tc.pod); got != tc.static {
				t.Errorf("IsStaticPod = %v, want %v", got, tc.static)
			}
			if got := IsMirrorPod(tc.pod); got != tc.mirror {
				t.Errorf("IsMirrorPod = %v, want %v", got, tc.mirror)
			}
			if got := PodFullName(tc.pod); got != "web_ns" {
				t.Errorf("PodFullName = %q, want web_ns", got)
			}
		})
	}
}

func TestPodConditionByAgent(t *testing.T) {
	for _, tc := range []struct {
		t     v1.PodConditionType
		owned bool
	}{
		{v1.PodScheduled, true},
		{v1.PodReady, true},
		{v1.PodInitialized, true},
		{v1.ContainersReady, true},
		{v1.PodReadyToStartContainers, true},
		{v1.DisruptionTarget, false},
		{"example.com/gate", false},
	} {
		if got := PodConditionByAgent(tc.t); got != tc.owned {
			t.Errorf("PodConditionByAgent(%s) = %v, want %v", tc.t, got, tc.owned)
		}
	}
}
