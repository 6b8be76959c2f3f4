package builtin

import (
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/storage/intern"
)

func templatePod(name string) *v1.Pod {
	res := func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			NodeName:     "node-1",
			NodeSelector: map[string]string{"disk": "ssd"},
			Containers: []v1.Container{{
				Name: "web", Image: "registry.example.com/web:1.0",
				Env:       []v1.EnvVar{{Name: "MODE", Value: "production"}},
				Resources: v1.ResourceRequirements{Requests: res(), Limits: res()},
			}},
		},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "web", Image: "registry.example.com/web:1.0", AllocatedResources: res()}}},
	}
}

func TestInternPodSharesTemplatePartsAndKeepsTheEncodings(t *testing.T) {
	tbl := intern.New(intern.Options{})
	a, b := templatePod("a"), templatePod("b")
	wantA, _ := a.Marshal()
	wantB, _ := b.Marshal()
	wantJSON, _ := json.Marshal(b)
	InternPod(tbl, a)
	InternPod(tbl, b)
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	ca, cb := a.Spec.Containers[0], b.Spec.Containers[0]
	for what, ok := range map[string]bool{
		"requests":            same(ca.Resources.Requests, cb.Resources.Requests),
		"limits":              same(ca.Resources.Limits, cb.Resources.Limits),
		"node selector":       same(a.Spec.NodeSelector, b.Spec.NodeSelector),
		"allocated resources": same(a.Status.ContainerStatuses[0].AllocatedResources, b.Status.ContainerStatuses[0].AllocatedResources),
	} {
		if !ok {
			t.Errorf("%s not shared", what)
		}
	}
	gotA, _ := a.Marshal()
	gotB, _ := b.Marshal()
	gotJSON, _ := json.Marshal(b)
	if string(gotA) != string(wantA) || string(gotB) != string(wantB) || string(gotJSON) != string(wantJSON) {
		t.Error("interning changed a pod's encoding")
	}
}
