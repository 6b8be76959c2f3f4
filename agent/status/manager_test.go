package status

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/agent/kubetypes"
)

// run starts a Manager over the shared server until the test ends.
func run(t *testing.T) (*Manager, kubernetes.Interface) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	m, err := New(Options{Client: cs.CoreV1(), SyncPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m, cs
}

func createPod(t *testing.T, cs kubernetes.Interface, ns, name string, mutate func(*v1.Pod)) *v1.Pod {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "img"}}}}
	if mutate != nil {
		mutate(p)
	}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, cs kubernetes.Interface, p *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func running(now time.Time) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, HostIP: "10.0.0.1", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "img", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}}
}

func TestWritesOnlyWhenChanged(t *testing.T) {
	m, cs := run(t)
	p := createPod(t, cs, "st-changed", "web", nil)
	now := time.Now().Truncate(time.Second)
	m.SetPodStatus(p, running(now))
	eventually(t, "Running in the API", func() bool { return get(t, cs, p).Status.Phase == v1.PodRunning })
	rv := get(t, cs, p).ResourceVersion
	m.SetPodStatus(p, running(now))
	time.Sleep(600 * time.Millisecond) // three sync periods
	if got := get(t, cs, p).ResourceVersion; got != rv {
		t.Errorf("an unchanged status was written again: resourceVersion %s -> %s", rv, got)
	}
	got := get(t, cs, p)
	if got.Status.HostIP != "10.0.0.1" || len(got.Status.ContainerStatuses) != 1 || !got.Status.ContainerStatuses[0].Ready {
		t.Errorf("status in the API = %+v", got.Status)
	}
}

func TestForeignConditionsKept(t *testing.T) {
	m, cs := run(t)
	p := createPod(t, cs, "st-foreign", "web", nil)
	p.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
	var err error
	if p, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	m.SetPodStatus(p, running(time.Now()))
	eventually(t, "Running in the API", func() bool { return get(t, cs, p).Status.Phase == v1.PodRunning })
	found := false
	for _, c := range get(t, cs, p).Status.Conditions {
		found = found || c.Type == "example.com/gate" && c.Status == v1.ConditionTrue
	}
	if !found {
		t.Errorf("foreign condition lost: %+v", get(t, cs, p).Status.Conditions)
	}
}

// TestUIDPrecondition: a status for a pod deleted and created again under
// its name never reaches the new pod.
func TestUIDPrecondition(t *testing.T) {
	m, cs := run(t)
	old := createPod(t, cs, "st-uid", "web", nil)
	if err := cs.CoreV1().Pods(old.Namespace).Delete(context.Background(), old.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the old pod gone", func() bool {
		_, err := cs.CoreV1().Pods(old.Namespace).Get(context.Background(), old.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	fresh := createPod(t, cs, "st-uid", "web", nil)
	m.SetPodStatus(old, running(time.Now()))
	time.Sleep(600 * time.Millisecond)
	if got := get(t, cs, fresh); got.Status.Phase == v1.PodRunning {
		t.Errorf("the old pod's status reached the new pod %s", got.UID)
	}
	// And the patch itself refuses another UID, as the apiserver checks
	// metadata.uid in a patch.
	patch, _ := Patch(old.UID, v1.PodStatus{}, running(time.Now()))
	_, err := cs.CoreV1().Pods(fresh.Namespace).Patch(context.Background(), fresh.Name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}, "status")
	if err == nil {
		t.Errorf("a status patch with another pod's UID was accepted")
	}
}

// TestTerminalPhaseWaitsForTerminatePod: Failed is not written while the
// worker may still run containers; after TerminatePod it is, and a pod
// being deleted through the API is then removed.
func TestTerminalPhaseWaitsForTerminatePod(t *testing.T) {
	m, cs := run(t)
	p := createPod(t, cs, "st-term", "web", nil)
	m.SetPodStatus(p, running(time.Now()))
	eventually(t, "Running", func() bool { return get(t, cs, p).Status.Phase == v1.PodRunning })
	failed := v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "img", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}}
	m.SetPodStatus(p, failed)
	eventually(t, "the container's exit in the API", func() bool {
		cs := get(t, cs, p).Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil
	})
	if got := get(t, cs, p).Status.Phase; got != v1.PodRunning {
		t.Errorf("phase before TerminatePod = %s, want Running kept", got)
	}
	m.TerminatePod(p, failed)
	eventually(t, "Failed", func() bool { return get(t, cs, p).Status.Phase == v1.PodFailed })
}

func TestDeletedPodIsRemovedAfterTerminatePod(t *testing.T) {
	m, cs := run(t)
	p := createPod(t, cs, "st-delete", "web", nil)
	grace := int64(30)
	if err := cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	p = get(t, cs, p)
	if p.DeletionTimestamp == nil {
		t.Fatal("no deletionTimestamp after a graceful delete")
	}
	m.SetPodStatus(p, running(time.Now()))
	time.Sleep(400 * time.Millisecond)
	if _, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("pod removed before its worker finished: %v", err)
	}
	m.TerminatePod(p, v1.PodStatus{Phase: v1.PodSucceeded})
	eventually(t, "the pod gone from the API", func() bool {
		_, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestStaticPodReportsThroughMirror(t *testing.T) {
	m, cs := run(t)
	mirror := createPod(t, cs, "st-static", "etcd-n1", func(p *v1.Pod) {
		p.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash1", kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash1"}
	})
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-n1", Namespace: "st-static", UID: "hash1",
		Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash1"}}}
	m.SetPodStatus(static, running(time.Now()))
	eventually(t, "the mirror Running", func() bool { return get(t, cs, mirror).Status.Phase == v1.PodRunning })
	// A terminated static pod is never deleted through its mirror.
	m.TerminatePod(static, v1.PodStatus{Phase: v1.PodRunning})
	time.Sleep(400 * time.Millisecond)
	get(t, cs, mirror)
}

// TestStaticPodStatusWaitsForItsMirror: a static pod's status recorded
// before its mirror pod exists (the agent starts it at once; the mirror
// reconciler creates the mirror a moment later) reaches the mirror once it
// is created, instead of being taken for a pod that is gone.
func TestStaticPodStatusWaitsForItsMirror(t *testing.T) {
	m, cs := run(t)
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late-n1", Namespace: "st-late", UID: "hash2",
		Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash2"}}}
	m.SetPodStatus(static, running(time.Now()))
	time.Sleep(500 * time.Millisecond) // a few sync periods without a mirror
	mirror := createPod(t, cs, "st-late", "late-n1", func(p *v1.Pod) {
		p.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash2", kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash2"}
	})
	eventually(t, "the late mirror Running", func() bool { return get(t, cs, mirror).Status.Phase == v1.PodRunning })
}

// TestReconcileRewritesAForeignChange: a status another writer changed is
// written again when the agent sees the API's version.
func TestReconcileRewritesAForeignChange(t *testing.T) {
	m, cs := run(t)
	p := createPod(t, cs, "st-reconcile", "web", nil)
	m.SetPodStatus(p, running(time.Now().Truncate(time.Second)))
	eventually(t, "Running", func() bool { return get(t, cs, p).Status.Phase == v1.PodRunning })
	got := get(t, cs, p)
	got.Status.HostIP = "192.0.2.9"
	got, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Reconcile(got)
	eventually(t, "the agent's hostIP back", func() bool { return get(t, cs, p).Status.HostIP == "10.0.0.1" })
	// The agent's own write seen back changes nothing.
	again := get(t, cs, p)
	m.Reconcile(again)
	time.Sleep(400 * time.Millisecond)
	if rv := get(t, cs, p).ResourceVersion; rv != again.ResourceVersion {
		t.Errorf("reconciling an unchanged pod wrote it: %s -> %s", again.ResourceVersion, rv)
	}
}

// TestTerminatedKeepsContainersThatNeverStartedWaiting: as upstream's
// TerminatePod, a pod that never got past its init containers keeps its app
// containers waiting (PodInitializing) and its init containers after the
// last one that started waiting too; only containers that started, or
// every app container once the pod has initialized, become
// ContainerStatusUnknown (conformance: InitContainer should not start app
// containers and fail the pod if init containers fail on a RestartNever pod).
func TestTerminatedKeepsContainersThatNeverStartedWaiting(t *testing.T) {
	initializing := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}
	ok := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	failed := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	withInits := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i1"}, {Name: "i2"}, {Name: "i3"}}, Containers: []v1.Container{{Name: "a"}}}}
	cases := []struct {
		name  string
		pod   *v1.Pod
		inits []v1.ContainerState
		app   v1.ContainerState
		// wantUnknown are the containers marked ContainerStatusUnknown.
		wantUnknown []string
	}{
		{"second init container failed: the third and the app container stay waiting", withInits,
			[]v1.ContainerState{ok, failed, initializing}, initializing, nil},
		{"nothing started: the first init container is unknown, the rest waiting", withInits,
			[]v1.ContainerState{initializing, initializing, initializing}, initializing, []string{"i1"}},
		{"second init container running: it is unknown, the third and the app container waiting", withInits,
			[]v1.ContainerState{ok, running, initializing}, initializing, []string{"i2"}},
		{"initialized: a waiting app container is unknown", withInits,
			[]v1.ContainerState{ok, ok, ok}, initializing, []string{"a"}},
		{"no init containers: a waiting app container is unknown", &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}},
			nil, initializing, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: tc.app}}}
			for i, st := range tc.inits {
				in.InitContainerStatuses = append(in.InitContainerStatuses, v1.ContainerStatus{Name: tc.pod.Spec.InitContainers[i].Name, State: st})
			}
			got := Terminated(tc.pod, in)
			var unknown []string
			for _, list := range [][]v1.ContainerStatus{got.InitContainerStatuses, got.ContainerStatuses} {
				for _, c := range list {
					if tt := c.State.Terminated; tt != nil && tt.Reason == "ContainerStatusUnknown" {
						unknown = append(unknown, c.Name)
					}
				}
			}
			if fmt.Sprint(unknown) != fmt.Sprint(tc.wantUnknown) {
				t.Errorf("ContainerStatusUnknown: %v, want %v", unknown, tc.wantUnknown)
			}
			for _, list := range [][]v1.ContainerStatus{got.InitContainerStatuses, got.ContainerStatuses} {
				for _, c := range list {
					if c.State.Waiting == nil && c.State.Terminated == nil {
						t.Errorf("%s has neither waiting nor terminated state: %+v", c.Name, c.State)
					}
				}
			}
		})
	}
}

func TestTerminated(t *testing.T) {
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}
	done := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: "file"}}}
	cases := []struct {
		name      string
		pod       *v1.Pod
		in        v1.PodStatus
		wantPhase v1.PodPhase
	}{
		{"never started: Failed, unknown", &v1.Pod{}, v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: waiting}}}, v1.PodFailed},
		{"succeeded stays", &v1.Pod{}, v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: done}}}, v1.PodSucceeded},
		{"static pod keeps its phase", static, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: waiting}}}, v1.PodRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Terminated(tc.pod, tc.in)
			if got.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.wantPhase)
			}
			for _, c := range got.ContainerStatuses {
				if c.State.Terminated == nil {
					t.Errorf("container %s not terminated: %+v", c.Name, c.State)
				}
			}
			if tc.in.ContainerStatuses[0].State.Waiting != nil {
				if tt := got.ContainerStatuses[0].State.Terminated; tt.Reason != "ContainerStatusUnknown" || tt.ExitCode != 137 {
					t.Errorf("unknown container = %+v", tt)
				}
			}
		})
	}
}
