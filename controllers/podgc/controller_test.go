package podgc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/podgc"
)

func TestTerminated(t *testing.T) {
	at := func(name string, sec int, phase v1.PodPhase) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(sec), 0))}, Status: v1.PodStatus{Phase: phase}}
	}
	pods := []*v1.Pod{at("new", 30, v1.PodSucceeded), at("running", 1, v1.PodRunning), at("old", 10, v1.PodFailed), at("b", 20, v1.PodSucceeded), at("a", 20, v1.PodSucceeded)}
	cases := []struct {
		threshold int
		want      []string
	}{
		{-1, nil}, {4, nil}, {3, []string{"old"}}, {1, []string{"old", "a", "b"}}, {0, []string{"old", "a", "b", "new"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.threshold), func(t *testing.T) {
			var got []string
			for _, p := range podgc.Terminated(pods, c.threshold) {
				got = append(got, p.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("Terminated(%d) = %v, want %v", c.threshold, got, c.want)
			}
		})
	}
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func gone(cs kubernetes.Interface, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

func TestPodGC(t *testing.T) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	nsObj, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	// Terminated pods count cluster-wide: leave none for a later run.
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	if _, err := cs.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gc-node"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), "gc-node", metav1.DeleteOptions{}) })
	create := func(name, node string, finalizers ...string) *v1.Pod {
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
			Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return p
	}
	for i := range 4 {
		p := create(fmt.Sprintf("done-%d", i), "gc-node")
		p.Status.Phase = v1.PodSucceeded
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An admin said this NotReady node is out of service.
	oos := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gc-oos"}, Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: v1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, oos, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), "gc-oos", metav1.DeleteOptions{}) })
	create("stuck", "gc-oos")
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("orphan", "ghost-node")
	create("kept", "gc-node")
	create("unscheduled", "", "example.com/hold")
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = cs.CoreV1().Pods(ns).Patch(context.Background(), "unscheduled", types.MergePatchType, patch, metav1.PatchOptions{})
	})
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "unscheduled", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	gc, err := podgc.New(podgc.Options{Client: cs, TerminatedThreshold: 2, Period: 50 * time.Millisecond, Quarantine: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { gc.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()
	started := time.Now()

	eventually(t, "oldest terminated pods over the threshold deleted", gone(cs, ns, "done-0"))
	eventually(t, "second oldest deleted", gone(cs, ns, "done-1"))
	eventually(t, "orphan deleted", gone(cs, ns, "orphan"))
	eventually(t, "terminating pod of an out-of-service node deleted", gone(cs, ns, "stuck"))
	if since := time.Since(started); since < 300*time.Millisecond {
		t.Fatalf("orphan deleted after %v, within the quarantine", since)
	}
	eventually(t, "unscheduled terminating pod marked Failed", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "unscheduled", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == v1.PodFailed, nil
	})
	if err := gc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// The unscheduled pod, now Failed, is terminated too: with the
	// threshold at 2, done-2 goes as well and the two newest stay.
	eventually(t, "done-2 deleted once the unscheduled pod failed", gone(cs, ns, "done-2"))
	if err := gc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"done-3", "unscheduled", "kept"} {
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("pod %s should stay: %v", name, err)
		}
	}
}
