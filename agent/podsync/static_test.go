package podsync

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/runtime"
)

// runningByName counts the running containers of pods named name.
func runningByName(t *testing.T, rt runtime.Service, name string) int {
	t.Helper()
	list, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{runtime.LabelPodName: name}})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// TestStaticPodEditNeverOverlaps: a static pod replaced by an edit (new
// UID, same name) is stopped before its successor starts; its status goes
// to its mirror pod.
func TestStaticPodEditNeverOverlaps(t *testing.T) {
	n := startNode(t, "node-static", Options{})
	old := n.staticPod("etcd", "hash-1", "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.1; done")
	n.namespace(t, "kube-system")
	// The mirror reconciler's part: a mirror pod carrying the hash.
	mirror := old.DeepCopy()
	mirror.UID = ""
	mirror.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash-1", kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource, kubetypes.ConfigHashAnnotationKey: "hash-1"}
	mirror, err := n.cs.CoreV1().Pods("kube-system").Create(context.Background(), mirror, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.setStatic(t, old)
	n.waitPod(t, mirror, "the mirror Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	edited := n.staticPod("etcd", "hash-2", "exec sleep 600")
	n.setStatic(t, edited)
	// The old pod's TERM trap takes a second; the new one must wait.
	deadline := time.Now().Add(20 * time.Second)
	for {
		count := runningByName(t, n.rt, old.Name)
		if count > 1 {
			all, _ := n.rt.ListContainers(context.Background(), nil)
			for _, c := range all {
				t.Logf("%s %s %s %v", c.Id[:8], c.Labels[runtime.LabelPodUID], c.Metadata.Name, c.State)
			}
			t.Fatalf("%d containers of %s run at once", count, old.Name)
		}
		list, _ := n.rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: "hash-2"},
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		if len(list) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edited static pod never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStaticPodBackWithSameUIDRunsAgain: a manifest moved out of the
// directory and back (a REMOVE, then an ADD of the same UID, since a
// static pod's UID is its content's hash) while the pod stops: the pod
// runs again once its old life ended, never beside it.
func TestStaticPodBackWithSameUIDRunsAgain(t *testing.T) {
	n := startNode(t, "node-static-back", Options{HousekeepingPeriod: 200 * time.Millisecond})
	p := n.staticPod("back", "hash-back", "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.1; done")
	running := func() []*runtimeapi.Container {
		list, err := n.rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: "hash-back"},
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	n.setStatic(t, p)
	deadline := time.Now().Add(20 * time.Second)
	for len(running()) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the static pod never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first := running()[0].Id
	n.setStatic(t)    // moved out: REMOVE; its TERM trap takes a second
	n.setStatic(t, p) // and back: ADD of the same UID
	deadline = time.Now().Add(30 * time.Second)
	for {
		list := running()
		if len(list) > 1 {
			t.Fatalf("%d containers of the static pod run at once", len(list))
		}
		if len(list) == 1 && list[0].Id != first {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the static pod that came back with its UID never ran again (running: %d)", len(list))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPodRemovedWhileItsStartBlocksNeverRuns (invariant 6): a container
// whose start blocks (its supervisor opening a log that is a FIFO nobody
// reads: the first instance makes it at the second one's log path, then
// exits) when its pod is removed: the termination cancels the start, the
// instance is abandoned and stopped whatever its state, and when the block
// clears the command never runs.
func TestPodRemovedWhileItsStartBlocksNeverRuns(t *testing.T) {
	n := startNode(t, "node-blocked", Options{HousekeepingPeriod: 200 * time.Millisecond})
	tmp := t.TempDir()
	runs, first := filepath.Join(tmp, "runs"), filepath.Join(tmp, "first")
	p := n.staticPod("blocked", "hash-blocked", "")
	fifo := filepath.Join(n.root, "pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), "main", "1.log")
	p.Spec.Containers[0].Command[2] = "if [ ! -e " + first + " ]; then touch " + first + "; mkfifo " + fifo + "; exit 1; fi; echo run >> " + runs + "; exec sleep 600"
	n.setStatic(t, p)
	instances := func(state runtimeapi.ContainerState) int {
		list, err := n.rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(p.UID)},
			State: &runtimeapi.ContainerStateValue{State: state}})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	deadline := time.Now().Add(20 * time.Second)
	for instances(runtimeapi.ContainerState_CONTAINER_CREATED) == 0 || instances(runtimeapi.ContainerState_CONTAINER_EXITED) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second instance was never created")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // its supervisor is blocked on the FIFO
	n.setStatic(t)                     // removed
	// The termination must not wait for the 30 s start timeout.
	deadline = time.Now().Add(15 * time.Second)
	for instances(runtimeapi.ContainerState_CONTAINER_CREATED)+instances(runtimeapi.ContainerState_CONTAINER_RUNNING) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the removed pod's blocked instance was never stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	time.Sleep(time.Second) // what the blocked start would need to run
	if b, _ := os.ReadFile(runs); len(b) != 0 {
		t.Fatalf("the container of a pod removed while its start blocked ran: %q", b)
	}
}
