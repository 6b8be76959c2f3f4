package server

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

// TestStreamTarget checks the kubelet's answers (kubelet_pods.go GetExec,
// GetAttach over findContainer, which sees running containers only) to
// sessions with containers that do not run.
func TestStreamTarget(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u2"}, Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "main"}, {Name: "side"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	ctr := func(id, uid, name string, state runtimeapi.ContainerState, created int64) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, State: state, CreatedAt: created, Labels: map[string]string{
			runtime.LabelPodNamespace: "ns", runtime.LabelPodName: "web", runtime.LabelPodUID: uid, runtime.LabelContainerName: name}}
	}
	run, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	const (
		execNotFound   = `container not found ("main")`
		attachNotFound = "container main not found in pod web_ns"
	)
	cases := []struct {
		name      string
		op        streamOp
		uid       string
		container string
		pod       *v1.Pod
		known     bool
		running   []*runtimeapi.Container
		id        string
		code      int
		msg       string
	}{
		{name: "exec, pod not on the node", op: opExec, container: "main", known: false, code: 404, msg: "pod does not exist"},
		{name: "attach, pod not on the node", op: opAttach, container: "main", known: false, code: 404, msg: "pod does not exist"},
		{name: "exec, not started yet", op: opExec, container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("i", "u2", "init", run, 1)}, code: 500, msg: execNotFound},
		{name: "attach, not started yet", op: opAttach, container: "main", pod: pod, known: true, code: 500, msg: attachNotFound},
		{name: "exec, exited", op: opExec, container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("m", "u2", "main", exited, 1)}, code: 500, msg: execNotFound},
		{name: "attach, exited", op: opAttach, container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("m", "u2", "main", exited, 1)}, code: 500, msg: attachNotFound},
		{name: "exec, not in the pod", op: opExec, container: "nope", pod: pod, known: true, code: 500, msg: `container not found ("nope")`},
		{name: "attach, not in the pod", op: opAttach, container: "nope", pod: pod, known: true, code: 500, msg: "container nope not found in pod web_ns"},
		{name: "exec, running", op: opExec, container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("m", "u2", "main", run, 1)}, id: "m"},
		{name: "attach, running ephemeral", op: opAttach, container: "debug", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("d", "u2", "debug", run, 1)}, id: "d"},
		{name: "the agent's pod's instance over an older pod's still stopping", op: opExec, container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("new", "u2", "main", run, 1), ctr("old", "u1", "main", run, 2)}, id: "new"},
		{name: "the newest without a pod spec", op: opExec, container: "main", known: true,
			running: []*runtimeapi.Container{ctr("a", "u1", "main", run, 1), ctr("b", "u2", "main", run, 2)}, id: "b"},
		{name: "exec, the path's uid has none running", op: opExec, uid: "u9", container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("m", "u2", "main", run, 1)}, code: 500, msg: execNotFound},
		{name: "exec, the path's uid", op: opExec, uid: "u1", container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("m", "u2", "main", run, 1), ctr("o", "u1", "main", run, 1)}, id: "o"},
		{name: "attach, the path's uid is not the pod's", op: opAttach, uid: "u1", container: "main", pod: pod, known: true,
			running: []*runtimeapi.Container{ctr("o", "u1", "main", run, 1)}, code: 500, msg: "pod web_ns not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, r := streamTarget(c.op, "ns", "web", c.uid, c.container, c.pod, c.known, c.running)
			if c.code == 0 {
				if r != nil || id != c.id {
					t.Errorf("= %q, %+v; want %q", id, r, c.id)
				}
				return
			}
			if r == nil || r.code != c.code || r.msg != c.msg || id != "" {
				t.Errorf("= %q, %+v; want %d %q", id, r, c.code, c.msg)
			}
		})
	}
}
