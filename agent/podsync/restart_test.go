package podsync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process"
	"github.com/kite-project/kite/kitetest"
)

func containersOf(t *testing.T, rt runtime.Service, p *v1.Pod) []*runtimeapi.Container {
	t.Helper()
	list, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(p.UID)}})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestRestartAdoptsRunningPods: an agent stopped leaves its pods running;
// one started again over the same root adopts them, keeping the
// container, its restartCount and startedAt, and starts no second copy.
// A pod deleted while the agent was down is stopped once every source has
// been seen.
func TestRestartAdoptsRunningPods(t *testing.T) {
	root := t.TempDir()
	a := startNodeAt(t, "node-restart", root, Options{})
	kept := a.create(t, "restart", "kept", v1.RestartPolicyAlways, "exec sleep 600", nil)
	gone := a.create(t, "restart", "gone", v1.RestartPolicyAlways, "exec sleep 600", nil)
	kept = a.waitPod(t, kept, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	gone = a.waitPod(t, gone, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	before := kept.Status.ContainerStatuses[0]
	a.stop()

	rt, err := process.New(process.Options{RootDir: root + "/runtime", NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{kept, gone} {
		if cs := containersOf(t, rt, p); len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("after the agent stopped, %s's containers = %v; want it still running", p.Name, cs)
		}
	}
	if err := a.cs.CoreV1().Pods("restart").Delete(context.Background(), "gone", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}

	b := startNodeAt(t, "node-restart", root, Options{})
	deadline := time.Now().Add(20 * time.Second)
	for {
		cs := containersOf(t, b.rt, gone)
		if len(cs) == 0 || cs[0].State == runtimeapi.ContainerState_CONTAINER_EXITED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted pod's container still runs: %v", cs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // several relists and housekeeping passes
	cs := containersOf(t, b.rt, kept)
	if len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("the kept pod's containers = %v; want the one it had, running", cs)
	}
	got := b.waitPod(t, kept, "its status", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	after := got.Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != before.RestartCount || after.State.Running == nil ||
		!after.State.Running.StartedAt.Equal(&before.State.Running.StartedAt) {
		t.Errorf("after the restart: %+v\nbefore: %+v", after, before)
	}
}

// TestAPIServerRestartRestartsNothing: the API server going away and
// coming back stops and restarts nothing (an unreachable source sends
// nothing), and status writing resumes.
func TestAPIServerRestartRestartsNothing(t *testing.T) {
	srv := kitetest.StartRestartable(t)
	cfg := srv.Server().RESTConfig()
	n := startNodeWith(t, "node-apirestart", t.TempDir(), cfg, Options{})
	p := n.create(t, "apirestart", "web", v1.RestartPolicyAlways, "exec sleep 600", nil)
	flag := filepath.Join(t.TempDir(), "ready")
	exiting := n.create(t, "apirestart", "job", v1.RestartPolicyNever, "while [ ! -f "+flag+" ]; do sleep 0.1; done; exit 4", nil)
	p = n.waitPod(t, p, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	n.waitPod(t, exiting, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	before := containersOf(t, n.rt, p)

	srv.Stop()
	// While the server is away the second pod's container exits.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	srv.Start()

	n.waitPod(t, exiting, "Failed, written after the server came back", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	time.Sleep(2 * time.Second)
	after := containersOf(t, n.rt, p)
	if len(after) != 1 || len(before) != 1 || after[0].Id != before[0].Id || after[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("containers before %v, after %v; want the same one running", before, after)
	}
	got := n.waitPod(t, p, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("restartCount = %d after the API server restart", got.Status.ContainerStatuses[0].RestartCount)
	}
}

// TestRunEndsWhenUpdatesClose: closing the channel of operations ends
// Run, with every goroutine it started, and leaves the pods running.
func TestRunEndsWhenUpdatesClose(t *testing.T) {
	rt, err := process.New(process.Options{RootDir: t.TempDir(), NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{NodeName: "n", Runtime: rt, RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	updates := make(chan kubetypes.PodUpdate, 1)
	grace := int64(1)
	updates <- kubetypes.PodUpdate{Op: kubetypes.ADD, Source: kubetypes.FileSource, Pods: []*v1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", UID: "static-1",
			Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource, kubetypes.ConfigHashAnnotationKey: "static-1"}},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "600"}}}}}}}
	done := make(chan struct{})
	go func() { defer close(done); m.Run(context.Background(), updates) }()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "static-1"}}
	deadline := time.Now().Add(20 * time.Second)
	for cs := containersOf(t, rt, pod); len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING; cs = containersOf(t, rt, pod) {
		if time.Now().After(deadline) {
			t.Fatalf("the standalone static pod never ran: %v", cs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(updates)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its updates closed")
	}
	if cs := containersOf(t, rt, pod); len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("after Run returned the container is %v; want it still running", cs)
	}
	stopAll(rt)
}
