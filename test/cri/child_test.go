package cri

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/runtime/containerd"
)

// TestAgentRunsItsOwnContainerd: --container-runtime=containerd starts
// containerd under <root-dir>/containerd with the configuration Kite
// writes; a pod runs from an imported image; stopping the agent stops
// that containerd but not the pod, and the next agent (a new containerd
// on the same directories) adopts the pod's container, and its address.
func TestAgentRunsItsOwnContainerd(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "containerd")
	child := func(o *agent.Options) {
		o.ContainerRuntime, o.CNIBridge, o.PodRoutes = "containerd", "kitecri1", "none"
	}
	ctx := context.Background()
	a := startChild(t, "cri-child", root, "kitecri1")
	if b, err := os.ReadFile(filepath.Join(dir, "config.toml")); err != nil || !strings.Contains(string(b), `sandbox_image = "`+containerd.PauseImage+`"`) {
		t.Fatalf("config.toml: %v\n%s", err, b)
	}
	p := a.pod(t, "kept", func(p *v1.Pod) { p.Spec.Containers[0].Args = []string{"sleep", "3600"} })
	beforePod := a.wait(t, p, "Running with an IP", func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" })
	before := beforePod.Status.ContainerStatuses[0]
	pidBytes, err := os.ReadFile(filepath.Join(dir, "containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(pidBytes))
	a.stop()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(stat), ") Z ") {
			t.Fatalf("containerd (pid %d) still runs after the agent stopped", pid)
		}
	}
	b := startAgentWith(t, "cri-child", root, child)
	<-timeAfter(3000)
	afterPod := b.wait(t, p, "Running", running)
	after := afterPod.Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Errorf("after the restart: container %s restarts %d; before: %s", after.ContainerID, after.RestartCount, before.ContainerID)
	}
	// The new containerd finds the sandbox's network namespace again.
	if afterPod.Status.PodIP != beforePod.Status.PodIP {
		t.Errorf("after the restart: podIP %q; before: %q", afterPod.Status.PodIP, beforePod.Status.PodIP)
	}
	// The pod goes before the agent, which would start it again in the
	// cleanup's containerd otherwise.
	zero := int64(0)
	b.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := b.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
	}
	b.stop()
}
