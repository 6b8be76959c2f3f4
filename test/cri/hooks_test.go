package cri

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestHTTPHookWithoutHostReachesThePodsOwnAddress: on a pod network, an
// HTTP lifecycle hook without a host goes to the pod's own address, as the
// kubelet's handler runner sends it (the conformance "Container Lifecycle
// Hook ... http hook" tests, whose hook reaches a server in the pod). A
// sidecar serves it, started (its startup probe passed) before the main
// container and its postStart hook; sent to the node's address instead,
// the hook finds nothing there and the container is killed
// (FailedPostStartHook).
func TestHTTPHookWithoutHostReachesThePodsOwnAddress(t *testing.T) {
	a := startChild(t, "cri-hooks", t.TempDir(), "kitecrihook")
	always := v1.ContainerRestartPolicyAlways
	p := a.pod(t, "hooked", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "server", Image: critest.BusyBox, RestartPolicy: &always,
			Command: []string{"httpd", "-f", "-p", "8080", "-h", "/bin"},
			StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(8080)}},
				PeriodSeconds: 1, FailureThreshold: 60}}}
		c := &p.Spec.Containers[0]
		c.Command = []string{"sh", "-c", trapLoop}
		c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/busybox", Port: intstr.FromInt(8080)}}}
	})
	p = a.wait(t, p, "Running with an IP", func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" })
	<-timeAfter(2000) // a hook that failed would have killed the container by now
	p = a.wait(t, p, "Running", running)
	if s := mainStatus(p); s.RestartCount != 0 || s.State.Running == nil {
		t.Errorf("main %+v, want running, never restarted", s)
	}
	if failed := a.events(t, p, "FailedPostStartHook"); len(failed) != 0 {
		t.Errorf("FailedPostStartHook: %q", failed)
	}
}
