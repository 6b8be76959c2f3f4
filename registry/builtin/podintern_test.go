package builtin

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

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
				Env:             []v1.EnvVar{{Name: "MODE", Value: "production"}},
				Ports:           []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
				Resources:       v1.ResourceRequirements{Requests: res(), Limits: res()},
				ImagePullPolicy: v1.PullIfNotPresent,
			}},
			TerminationGracePeriodSeconds: ptr(int64(30)),
			RestartPolicy:                 v1.RestartPolicyAlways,
		},
		Status: v1.PodStatus{
			Phase:             v1.PodRunning,
			HostIP:            "192.168.0.11",
			HostIPs:           []v1.HostIP{{IP: "192.168.0.11"}},
			PodIP:             "10.244.1." + name,
			PodIPs:            []v1.PodIP{{IP: "10.244.1." + name}},
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "web", Image: "registry.example.com/web:1.0", AllocatedResources: res()}},
		},
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
		"env":                 same(ca.Env, cb.Env),
		"ports":               same(ca.Ports, cb.Ports),
		"host IPs":            same(a.Status.HostIPs, b.Status.HostIPs),
		"grace period":        a.Spec.TerminationGracePeriodSeconds == b.Spec.TerminationGracePeriodSeconds,
		"pull policy":         unsafe.StringData(string(ca.ImagePullPolicy)) == unsafe.StringData(string(cb.ImagePullPolicy)),
		"phase":               unsafe.StringData(string(a.Status.Phase)) == unsafe.StringData(string(b.Status.Phase)),
		"condition type":      unsafe.StringData(string(a.Status.Conditions[0].Type)) == unsafe.StringData(string(b.Status.Conditions[0].Type)),
		"pod IP within pod":   unsafe.StringData(a.Status.PodIP) == unsafe.StringData(a.Status.PodIPs[0].IP),
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

func ptr[T any](v T) *T { return &v }

func TestInternPodKeepsEnvWithReferencesApart(t *testing.T) {
	tbl := intern.New(intern.Options{})
	a, b := templatePod("a"), templatePod("b")
	for _, p := range []*v1.Pod{a, b} {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
	}
	InternPod(tbl, a)
	InternPod(tbl, b)
	if reflect.ValueOf(a.Spec.Containers[0].Env).UnsafePointer() == reflect.ValueOf(b.Spec.Containers[0].Env).UnsafePointer() {
		t.Error("env lists with references were shared (their pointers compare by address)")
	}
	if b.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Error("env reference lost")
	}
}
