package cri

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestRuntimeClassHandlers: a pod's runtimeClassName reaches containerd
// as the sandbox's runtime handler, as the kubelet passes it. With the
// containerd configuration Kite writes, handler runc (the CRI plugin's
// default runtime's name) runs; a handler containerd does not have fails
// the sandbox with containerd's error; a RuntimeClass deleted after its
// pod was admitted fails it with the lookup's NotFound. Both failures are
// the kubelet's: a FailedCreatePodSandBox event "Failed to create pod
// sandbox: <error>", and the pod Pending with its container waiting in
// ContainerCreating.
func TestRuntimeClassHandlers(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ctx := context.Background()
	class := func(name, handler string) {
		t.Helper()
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	withClass := func(name string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.RuntimeClassName = &name
			p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		}
	}
	class("cri-rc-runc", "runc")
	class("cri-rc-nope", "nope")
	class("cri-rc-gone", "runc")

	// Admitted while its class exists; the class is gone before the
	// node's agent runs it.
	const node = "cri-runtimeclass"
	pre := &testAgent{node: node, cs: cs}
	gone := pre.pod(t, "gone", withClass("cri-rc-gone"))
	if err := cs.NodeV1().RuntimeClasses().Delete(ctx, "cri-rc-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NodeV1().RuntimeClasses().Get(ctx, "cri-rc-gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("RuntimeClass cri-rc-gone after its delete: %v", err)
	}

	a := startAgent(t, node, t.TempDir())
	ok := a.pod(t, "runc", withClass("cri-rc-runc"))
	nope := a.pod(t, "nope", withClass("cri-rc-nope"))

	ok = a.wait(t, ok, "Running", running)
	sbs, err := critest.Runtime(t).ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(ok.UID)}})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of pod runc: %v, %v", sbs, err)
	}
	if sbs[0].RuntimeHandler != "runc" {
		t.Errorf("sandbox of a pod of RuntimeClass cri-rc-runc has runtime handler %q, want runc", sbs[0].RuntimeHandler)
	}

	a.waitEvent(t, nope, "FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nope" is configured`)
	a.waitEvent(t, gone, "FailedCreatePodSandBox", `Failed to create pod sandbox: runtimeclass.node.k8s.io "cri-rc-gone" not found`)
	for _, p := range []*v1.Pod{nope, gone} {
		got := a.wait(t, p, "ContainerCreating", waiting("ContainerCreating"))
		if got.Status.Phase != v1.PodPending {
			t.Errorf("pod %s: phase %s, want Pending", p.Name, got.Status.Phase)
		}
		sbs, err := critest.Runtime(t).ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(p.UID)}})
		if err != nil || len(sbs) != 0 {
			t.Errorf("pod %s has sandboxes %v (%v), want none", p.Name, sbs, err)
		}
	}

	// A class that does not exist when the pod is created: the API
	// server's RuntimeClass admission refuses the pod (403), as upstream.
	name := "cri-rc-never"
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "never", Namespace: ok.Namespace}, Spec: v1.PodSpec{NodeName: node, RuntimeClassName: &name,
		Containers: []v1.Container{{Name: "main", Image: critest.BusyBox}}}}
	_, err = cs.CoreV1().Pods(ok.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod rejected: RuntimeClass "cri-rc-never" not found`) {
		t.Errorf("create of a pod of a RuntimeClass that does not exist: %v, want 403 pod rejected", err)
	}
}
