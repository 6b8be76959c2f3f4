package cri

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestExecAttachToWhatDoesNotRun: exec and attach to a container that
// does not run answer what they answer against a kubelet 1.37, through
// the API server, to client-go and to kubectl. The kubelet finds the
// container among its runtime's running ones only (findContainer), so a
// container that has not started yet and one that has exited are both
// "not found": 500 `container not found ("c")` to an exec, "container c
// not found in pod <name>_<namespace>" to an attach, which the API
// server's stream translator hands a WebSocket client as "Internal error
// occurred: unable to upgrade connection: <that>". A name the pod does
// not have is the API server's 400.
func TestExecAttachToWhatDoesNotRun(t *testing.T) {
	a := startAgent(t, "cri-stream-errors", t.TempDir())
	never := v1.RestartPolicyNever
	// main waits behind an init container that does not end.
	pending := a.pod(t, "pending", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "init", Image: critest.BusyBox, Args: []string{"sleep", "3600"}}}
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
	})
	// done has exited; main runs on, so the pod is Running (kubectl
	// itself refuses a pod that has completed).
	exited := a.pod(t, "exited", func(p *v1.Pod) {
		p.Spec.RestartPolicy = never
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "done", Image: critest.BusyBox, Args: []string{"true"}})
	})
	a.wait(t, pending, "init running", func(p *v1.Pod) bool {
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil
	})
	a.wait(t, exited, "done exited, main running", func(p *v1.Pod) bool {
		var mainRuns, doneExited bool
		for _, s := range p.Status.ContainerStatuses {
			mainRuns = mainRuns || (s.Name == "main" && s.State.Running != nil)
			doneExited = doneExited || (s.Name == "done" && s.State.Terminated != nil)
		}
		return mainRuns && doneExited
	})
	const upgrade = "Internal error occurred: unable to upgrade connection: "
	cases := []struct {
		pod       *v1.Pod
		container string
		exec      string // the error of an exec, as client-go reports it
		attach    string
	}{
		{pending, "main", upgrade + `container not found ("main")`, upgrade + "container main not found in pod pending_" + pending.Namespace},
		{exited, "done", upgrade + `container not found ("done")`, upgrade + "container done not found in pod exited_" + exited.Namespace},
		{exited, "nope", "container nope is not valid for pod exited", "container nope is not valid for pod exited"},
	}
	for _, c := range cases {
		t.Run(c.pod.Name+"/"+c.container, func(t *testing.T) {
			if err := session(t, c.pod, "exec", c.container); err == nil || !strings.Contains(err.Error(), c.exec) {
				t.Errorf("exec: %v, want %q", err, c.exec)
			}
			if err := session(t, c.pod, "attach", c.container); err == nil || !strings.Contains(err.Error(), c.attach) {
				t.Errorf("attach: %v, want %q", err, c.attach)
			}
			out, err := kubectl(t, "", "-n", c.pod.Namespace, "exec", c.pod.Name, "-c", c.container, "--", "true")
			if err == nil || !strings.Contains(out, c.exec) {
				t.Errorf("kubectl exec: %v\n%s\nwant %q", err, out, c.exec)
			}
		})
	}
}

// session opens an exec (of true) or attach to container through the API
// server over WebSocket, as kubectl does first, and returns its error.
func session(t *testing.T, p *v1.Pod, sub, container string) error {
	t.Helper()
	req := kubernetes.NewForConfigOrDie(shared.RESTConfig()).CoreV1().RESTClient().Post().
		Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource(sub)
	var u *url.URL
	switch sub {
	case "exec":
		u = req.VersionedParams(&v1.PodExecOptions{Container: container, Command: []string{"true"}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	case "attach":
		u = req.VersionedParams(&v1.PodAttachOptions{Container: container, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	default:
		panic(fmt.Sprintf("session %s", sub))
	}
	ex, err := remotecommand.NewWebSocketExecutor(shared.RESTConfig(), "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	return ex.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
}
