package api_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPodBindingStatusAndGracefulDeletion(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, testPod("bound"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Target: v1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("second bind: got %v, want Conflict", err)
	}
	bound, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil || bound.Spec.NodeName != "node-1" {
		t.Fatalf("after bind: %v, nodeName %q", err, bound.Spec.NodeName)
	}

	// A status write changes status only; a spec change through it is ignored.
	bound.Status.Phase = v1.PodRunning
	bound.Spec.ActiveDeadlineSeconds = new(int64(5))
	running, err := pods.UpdateStatus(ctx, bound, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if running.Status.Phase != v1.PodRunning || running.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("status update: phase %q, activeDeadlineSeconds %v; want Running and spec untouched", running.Status.Phase, running.Spec.ActiveDeadlineSeconds)
	}
	// A main-resource update cannot change status.
	running.Status.Phase = v1.PodFailed
	running.Labels["x"] = "y"
	upd, err := pods.Update(ctx, running, metav1.UpdateOptions{})
	if err != nil || upd.Status.Phase != v1.PodRunning {
		t.Fatalf("update: %v, phase %q; want status kept Running", err, upd.Status.Phase)
	}

	// A bound pod is deleted gracefully: it stays with a deletionTimestamp.
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("graceful delete: %v", err)
	}
	terminating, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bound pod gone after graceful delete: %v", err)
	}
	if terminating.DeletionTimestamp == nil || terminating.DeletionGracePeriodSeconds == nil || *terminating.DeletionGracePeriodSeconds != 30 {
		t.Errorf("graceful delete: deletionTimestamp %v, grace %v; want set and 30", terminating.DeletionTimestamp, terminating.DeletionGracePeriodSeconds)
	}
	// Grace 0 (the node confirming the stop) removes it.
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
		t.Fatalf("delete with grace 0: %v", err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after grace-0 delete: got %v, want NotFound", err)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()

	_, err := client.CoreV1().ConfigMaps("no-such-namespace").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: got %v, want NotFound", err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete namespace default: got %v, want Forbidden", err)
	}

	ns := newNamespace(t, client)
	for i, name := range []string{"a", "b"} {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("configmap %d: %v", i, err)
		}
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	got, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		if got.Status.Phase != v1.NamespaceTerminating {
			t.Errorf("deleted namespace phase %q, want Terminating", got.Status.Phase)
		}
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
			t.Errorf("create in a terminating namespace: got %v, want Forbidden", err)
		}
	}
	eventually(t, "namespace "+ns+" to be removed", func() (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(cms.Items) != 0 {
		t.Errorf("configmaps left in the removed namespace: %v, %d", err, len(cms.Items))
	}
}

func TestNewNamespaceGetsDefaultServiceAccount(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	eventually(t, "service account default in "+ns, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, err
	})
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system has no default service account: %v", err)
	}
}
