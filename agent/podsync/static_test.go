package podsync

import (
	"context"
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
