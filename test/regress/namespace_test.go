package regress

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSecondDeleteOfATerminatingNamespaceAnswersWithIt: kube-apiserver
// answers a DELETE of a namespace that is already terminating, and still
// held by spec finalizers, with 200 and the namespace as it is (its
// namespace REST's Delete), not with a conflict; kubectl delete of a
// namespace twice, and controllers retrying a delete, rely on it.
func TestSecondDeleteOfATerminatingNamespaceAnswersWithIt(t *testing.T) {
	cs := clientset(t)
	ctx := t.Context()
	ns := namespace(t, "second-delete")
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A finalizer of our own keeps the namespace terminating after the
	// namespace controller has removed "kubernetes".
	got.Spec.Finalizers = append(got.Spec.Finalizers, "example.com/hold")
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			return
		}
		ns.Spec.Finalizers = nil
		_, _ = cs.CoreV1().Namespaces().Finalize(context.Background(), ns, metav1.UpdateOptions{})
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("first delete: %v", err)
	}
	before, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var status int
	body, err := cs.CoreV1().RESTClient().Delete().Resource("namespaces").Name(ns).Do(ctx).StatusCode(&status).Raw()
	if err != nil {
		t.Fatalf("second delete: %v (status %d)", err, status)
	}
	if status != 200 {
		t.Fatalf("second delete answered %d, want 200: %s", status, body)
	}
	after, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.Phase != v1.NamespaceTerminating || after.DeletionTimestamp == nil {
		t.Errorf("after the second delete: phase %q, deletionTimestamp %v; want Terminating and set", after.Status.Phase, after.DeletionTimestamp)
	}
	if !after.DeletionTimestamp.Equal(before.DeletionTimestamp) {
		t.Errorf("the second delete moved deletionTimestamp from %v to %v", before.DeletionTimestamp, after.DeletionTimestamp)
	}
}
