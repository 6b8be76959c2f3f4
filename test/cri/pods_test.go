package cri

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestBusyBoxPodRunsLogsAndExecs: a pod from the busybox image (args
// without command: the image has no entrypoint, so args run) reaches
// Running with a containerd:// container ID and the image's ID, its
// output is its log (kubectl logs), exec runs in it through the API
// server, the image's files are its root, and the Node says containerd
// runs and lists the images.
func TestBusyBoxPodRunsLogsAndExecs(t *testing.T) {
	a := startAgent(t, "cri-busybox", t.TempDir())
	p := a.pod(t, "bb", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sh", "-c", "echo hello from $(cat /etc/hostname 2>/dev/null || hostname); exec sleep 3600"}
	})
	p = a.wait(t, p, "Running", running)
	st := p.Status.ContainerStatuses[0]
	if !strings.HasPrefix(st.ContainerID, "containerd://") || !strings.HasPrefix(st.ImageID, "sha256:") || st.Image != critest.BusyBox {
		t.Errorf("container status: id %q image %q imageID %q; want containerd://, the image's name and its sha256 ID", st.ContainerID, st.Image, st.ImageID)
	}
	a.waitEvent(t, p, "Pulled", `Container image "`+critest.BusyBox+`" already present on machine`)
	var logs string
	for range 100 {
		b, err := a.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &v1.PodLogOptions{}).DoRaw(context.Background())
		if logs = string(b); err == nil && strings.HasPrefix(logs, "hello from ") {
			break
		}
		<-timeAfter(100)
	}
	if !strings.HasPrefix(logs, "hello from ") {
		t.Fatalf("logs = %q, want hello from ...", logs)
	}
	out, err := a.exec(t, p, "sh", "-c", "ls /bin/busybox && id -u")
	if err != nil || out != "/bin/busybox\n0\n" {
		t.Fatalf("exec = %q, %v; want the image's /bin/busybox and uid 0", out, err)
	}
	_, err = a.exec(t, p, "sh", "-c", "exit 7")
	if err == nil || !strings.Contains(err.Error(), "7") {
		t.Errorf("exec exiting 7 = %v, want its exit code", err)
	}
	n := waitNode(t, a, func(n *v1.Node) bool { return len(n.Status.Images) > 0 })
	if v := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(v, "containerd://1.") {
		t.Errorf("containerRuntimeVersion = %q, want containerd://1.x", v)
	}
	found := false
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			found = found || name == critest.BusyBox
		}
	}
	if !found {
		t.Errorf("status.images %+v has no %s", n.Status.Images, critest.BusyBox)
	}
}

// TestMissingImageIsErrImagePullThenImagePullBackOff: an image no
// registry serves is pulled (Pulling), fails (ErrImagePull, a Failed
// event), and the next sync within the back-off waits in
// ImagePullBackOff with a BackOff event, as the kubelet reports it. A
// missing image under Never is ErrImageNeverPull without a pull.
func TestMissingImageIsErrImagePullThenImagePullBackOff(t *testing.T) {
	a := startAgent(t, "cri-missing", t.TempDir())
	p := a.pod(t, "missing", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.invalid/kite/none:1" })
	a.wait(t, p, "ErrImagePull", waiting("ErrImagePull"))
	a.waitEvent(t, p, "Pulling", `Pulling image "registry.invalid/kite/none:1"`)
	a.waitEvent(t, p, "Failed", `Failed to pull image "registry.invalid/kite/none:1"`)
	a.waitEvent(t, p, "Failed", "Error: ErrImagePull")
	a.wait(t, p, "ImagePullBackOff", waiting("ImagePullBackOff"))
	a.waitEvent(t, p, "BackOff", `Back-off pulling image "registry.invalid/kite/none:1"`)

	never := a.pod(t, "never", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = "registry.invalid/kite/none:2"
		p.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	})
	got := a.wait(t, never, "ErrImageNeverPull", waiting("ErrImageNeverPull"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; msg != `Container image "registry.invalid/kite/none:2" is not present with pull policy of Never` {
		t.Errorf("ErrImageNeverPull message = %q", msg)
	}
	if pulls := a.events(t, never, "Pulling"); len(pulls) != 0 {
		t.Errorf("a Never pod pulled: %q", pulls)
	}
}

// TestRunAsNonRootChecksTheImageUser: runAsNonRoot runs an image whose
// user is 65534, and refuses one that runs as root, with the kubelet's
// CreateContainerConfigError.
func TestRunAsNonRootChecksTheImageUser(t *testing.T) {
	a := startAgent(t, "cri-nonroot", t.TempDir())
	yes := true
	ok := a.pod(t, "nonroot", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = critest.BusyBoxNonRoot
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: &yes}
	})
	root := a.pod(t, "root", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: &yes}
	})
	ok = a.wait(t, ok, "Running", running)
	if out, err := a.exec(t, ok, "id", "-u"); err != nil || out != "65534\n" {
		t.Errorf("id -u in the non-root image = %q, %v", out, err)
	}
	got := a.wait(t, root, "CreateContainerConfigError", waiting("CreateContainerConfigError"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "container has runAsNonRoot and image will run as root") {
		t.Errorf("message = %q", msg)
	}
}

// TestRestartPolicyAndGracefulDeletion: an OnFailure container that
// exits 1 is restarted (restartCount grows, lastState has its exit
// code); a Never one that exits 3 ends the pod Failed with its exit code
// and its termination message; a graceful delete with a grace of 60 s
// ends within 20 s: the container's TERM trap ran, no SIGKILL was waited
// for.
func TestRestartPolicyAndGracefulDeletion(t *testing.T) {
	a := startAgent(t, "cri-restart", t.TempDir())
	crash := a.pod(t, "crash", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		p.Spec.Containers[0].Args = []string{"sh", "-c", "exit 1"}
	})
	failed := a.pod(t, "failed", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Containers[0].Args = []string{"sh", "-c", "echo -n bye > /dev/termination-log; exit 3"}
	})
	term := a.pod(t, "term", func(p *v1.Pod) {
		grace := int64(60)
		p.Spec.TerminationGracePeriodSeconds = &grace
		p.Spec.Containers[0].Args = []string{"sh", "-c", "trap 'echo got TERM > /dev/termination-log; exit 0' TERM; while :; do sleep 0.1; done"}
	})
	got := a.wait(t, crash, "a restart", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1 &&
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated != nil
	})
	if code := got.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode; code != 1 {
		t.Errorf("lastState exit code %d, want 1", code)
	}
	got = a.wait(t, failed, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if tm := got.Status.ContainerStatuses[0].State.Terminated; tm == nil || tm.ExitCode != 3 || tm.Reason != "Error" || tm.Message != "bye" {
		t.Errorf("terminated = %+v, want exit 3, Error, message bye", tm)
	}
	term = a.wait(t, term, "Running", running)
	if err := a.cs.CoreV1().Pods(term.Namespace).Delete(context.Background(), term.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitEvent(t, term, "Killing", "Stopping container main")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := a.cs.CoreV1().Pods(term.Namespace).Get(context.Background(), term.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod deleted with a grace of 60 s whose container exits on TERM still there after 20 s (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAgentRestartAdoptsContainers: an agent stopped leaves its
// containers to containerd; one started again over the same root
// adopts them: same container ID, no restart.
func TestAgentRestartAdoptsContainers(t *testing.T) {
	root := t.TempDir()
	a := startAgent(t, "cri-adopt", root)
	p := a.pod(t, "kept", func(p *v1.Pod) { p.Spec.Containers[0].Args = []string{"sleep", "3600"} })
	before := a.wait(t, p, "Running", running).Status.ContainerStatuses[0]
	a.stop()
	b := startAgent(t, "cri-adopt", root)
	<-timeAfter(3000) // a few relists and syncs of the new agent
	after := b.wait(t, p, "Running", running).Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Errorf("after the restart: container %s restarts %d; before: %s", after.ContainerID, after.RestartCount, before.ContainerID)
	}
}
