package cri

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kite-project/kite/agent/podsync"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestResizeAllocationSurvivesAgentRestart: an in-place resize applied
// before an agent restart, and a second one deferred (the node cannot fit
// it) when the agent stops, are what they were after it: the new agent
// starts from the checkpointed allocation (<root-dir>/allocated_pods_state),
// so allocatedResources and resources keep the applied resize, the
// deferred one stays PodResizePending Deferred (not allocated because the
// agent forgot it was deferred), the container's cgroup keeps its limit,
// and the container is neither restarted nor replaced.
func TestResizeAllocationSurvivesAgentRestart(t *testing.T) {
	root := t.TempDir()
	a := startAgent(t, "cri-alloc-restart", root)
	res := func(reqCPU, limCPU string) v1.ResourceRequirements {
		return v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU), v1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(limCPU), v1.ResourceMemory: resource.MustParse("64Mi")},
		}
	}
	p := a.pod(t, "alloc", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].Resources = res("100m", "200m")
	})
	a.wait(t, p, "Running", running)
	applied := res("100m", "400m")
	if out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"400m"}}}]}}`); err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
	}
	a.wait(t, p, "the resize actuated", func(p *v1.Pod) bool {
		s := containerStatus(p, "main")
		return s != nil && s.Resources != nil && apiequality.Semantic.DeepEqual(*s.Resources, applied) && podCondition(p, v1.PodResizeInProgress) == nil
	})
	if out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}}]}}`); err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
	}
	before := a.wait(t, p, "the second resize Deferred", func(p *v1.Pod) bool {
		c := podCondition(p, v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonDeferred && c.ObservedGeneration == p.Generation
	})
	if _, err := os.Stat(filepath.Join(root, podsync.AllocationCheckpointFile)); err != nil {
		t.Errorf("no allocation checkpoint: %v", err)
	}
	a.stop()

	b := startAgent(t, "cri-alloc-restart", root)
	// An ephemeral container makes the new agent sync the pod (and write
	// its status): once it ran, the pod's allocation has been decided.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := b.cs.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "synced", Image: critest.BusyBox, Command: []string{"true"}, TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent}})
		_, err = b.cs.CoreV1().Pods(p.Namespace).UpdateEphemeralContainers(t.Context(), p.Name, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after := b.wait(t, p, "the new agent's sync (the ephemeral container ran)", func(p *v1.Pod) bool {
		s := ephemeralStatus(p, "synced")
		return s != nil && s.State.Terminated != nil && p.Status.ObservedGeneration == p.Generation
	})
	was, is := containerStatus(before, "main"), containerStatus(after, "main")
	if is.ContainerID != was.ContainerID || is.RestartCount != was.RestartCount || is.State.Running == nil {
		t.Errorf("after the restart: container %s, %d restarts, state %+v; before: %s, %d restarts", is.ContainerID, is.RestartCount, is.State, was.ContainerID, was.RestartCount)
	}
	if !apiequality.Semantic.DeepEqual(is.AllocatedResources, applied.Requests) {
		t.Errorf("allocatedResources %v after the restart; want the applied resize's %v", is.AllocatedResources, applied.Requests)
	}
	if is.Resources == nil || !apiequality.Semantic.DeepEqual(*is.Resources, applied) {
		t.Errorf("resources %v after the restart; want the applied resize's %v", is.Resources, applied)
	}
	if c := podCondition(after, v1.PodResizePending); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Errorf("PodResizePending %+v after the restart; want the deferred resize still Deferred", c)
	}
	if c := podCondition(after, v1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress %+v after the restart; want none", c)
	}
	out, err := b.exec(t, after, "sh", "-c", "cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us")
	if err != nil || !strings.HasPrefix(out, "40000") {
		t.Errorf("CPU quota after the restart %q, %v; want the applied 40000", out, err)
	}
}
