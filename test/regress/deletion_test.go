package regress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// fakeNode is the node the tests' pods are bound to; no agent runs it,
// terminatePods plays the part of its kubelet that deletes pods.
const fakeNode = "regress-node"

// holdFinalizer is the tests' own finalizer on pods.
const holdFinalizer = "example.com/hold"

// terminatePods plays, for each pod of namespace being deleted, the
// kubelet's last act (once its containers would be stopped, it deletes
// the pod with grace 0 and its UID as precondition, once per pod) and
// then that of holdFinalizer's owner, which releases the terminated pod
// as the Job controller releases its tracking finalizer. It stops with
// the test.
func terminatePods(t *testing.T, namespace string) {
	t.Helper()
	cs := clientset(t)
	pods := cs.CoreV1().Pods(namespace)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	terminate := func(pod *v1.Pod) error {
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil {
			return fmt.Errorf("kubelet's delete of %s: %w", pod.Name, err)
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil || cur.UID != pod.UID || !slices.Contains(cur.Finalizers, holdFinalizer) {
				return err
			}
			cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == holdFinalizer })
			_, err = pods.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	wg.Go(func() {
		done := map[types.UID]bool{}
		for ctx.Err() == nil {
			w, err := pods.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				pod, ok := ev.Object.(*v1.Pod)
				if !ok || ev.Type == watch.Deleted || pod.DeletionTimestamp == nil || done[pod.UID] {
					continue
				}
				done[pod.UID] = true
				if err := terminate(pod); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
					t.Errorf("terminate pod: %v", err)
				}
			}
			w.Stop()
		}
	})
}

// TestPodWithFinalizerGoesOnceTheFinalizerIsRemoved is issue 20's story:
// a pod with a finalizer and a grace period is deleted, the kubelet's
// final delete with grace 0 lowers its grace period (the finalizer keeps
// it), and removing the finalizer with a JSON patch deletes it.
func TestPodWithFinalizerGoesOnceTheFinalizerIsRemoved(t *testing.T) {
	ns := namespace(t, "regress-pod-finalizer")
	mustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: held
  namespace: %s
  finalizers: [%s]
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: busybox
`, ns, holdFinalizer, fakeNode), "create", "-f", "-")
	mustKubectl(t, "", "-n", ns, "delete", "pod", "held", "--wait=false")

	cs := clientset(t)
	pod, err := cs.CoreV1().Pods(ns).Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := pod.DeletionGracePeriodSeconds; pod.DeletionTimestamp == nil || g == nil || *g != 2 {
		t.Fatalf("after kubectl delete: deletionTimestamp %v, grace %v; want set, 2", pod.DeletionTimestamp, ptrValue(g))
	}
	// The kubelet's final delete.
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "held", metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
		t.Fatalf("delete with grace 0: %v", err)
	}
	pod, err = cs.CoreV1().Pods(ns).Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the grace 0 delete: %v, want the pod kept by its finalizer", err)
	}
	if g := pod.DeletionGracePeriodSeconds; g == nil || *g != 0 {
		t.Fatalf("after the grace 0 delete: grace %v, want 0", ptrValue(g))
	}

	mustKubectl(t, "", "-n", ns, "patch", "pod", "held", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the finalizer's removal: %v, want NotFound", err)
	}
}

// TestForegroundDeletionOfReplicaSetEnds deletes a ReplicaSet whose pods
// carry a finalizer with kubectl --cascade=foreground: the garbage
// collector deletes the pods in the foreground too (each gets the
// foregroundDeletion finalizer and its grace period), the kubelet's grace
// 0 delete lowers the grace period, and once both finalizers are removed
// (in either order) each pod goes, and then the ReplicaSet.
func TestForegroundDeletionOfReplicaSetEnds(t *testing.T) {
	ns := namespace(t, "regress-rs-foreground")
	terminatePods(t, ns)
	mustKubectl(t, fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: fg
  namespace: %s
spec:
  replicas: 2
  selector:
    matchLabels: {app: fg}
  template:
    metadata:
      labels: {app: fg}
      finalizers: [%s]
    spec:
      nodeName: %s
      terminationGracePeriodSeconds: 30
      containers:
      - name: c
        image: busybox
`, ns, holdFinalizer, fakeNode), "create", "-f", "-")
	cs := clientset(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods after 30 s, want 2", len(pods.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	if out, err := kubectl(t, "", "-n", ns, "delete", "rs", "fg", "--cascade=foreground", "--timeout=45s"); err != nil {
		pods, _ := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		var left []string
		for _, p := range pods.Items {
			left = append(left, fmt.Sprintf("%s finalizers=%v grace=%v", p.Name, p.Finalizers, ptrValue(p.DeletionGracePeriodSeconds)))
		}
		t.Fatalf("kubectl delete rs --cascade=foreground: %v\n%s\npods left: %s", err, out, strings.Join(left, "; "))
	}
	t.Logf("foreground deletion took %v", time.Since(start))
	if _, err := cs.AppsV1().ReplicaSets(ns).Get(t.Context(), "fg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("replicaset after kubectl's wait: %v, want NotFound", err)
	}
	if pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods after the foreground deletion: %v %v, want none", pods, err)
	}
}
