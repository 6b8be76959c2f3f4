package namespace_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

// The embedded default runs the namespace controller.
func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

// A deleted namespace is emptied of every namespaced resource discovery
// lists, then finalized and removed; a pod bound to a node holds it until
// the pod is gone.
func TestDeletedNamespaceIsEmptiedThenRemoved(t *testing.T) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "del-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns.Name).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Spec: v1.PodSpec{NodeName: "somewhere", Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll := func(what string, f func(ctx context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, f); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("configmap and secret deleted", func(ctx context.Context) (bool, error) {
		cms, err := cs.CoreV1().ConfigMaps(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		secrets, err := cs.CoreV1().Secrets(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(cms.Items) == 0 && len(secrets.Items) == 0, nil
	})
	poll("bound pod terminating", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns.Name).Get(ctx, "bound", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1.NamespaceTerminating {
		t.Fatalf("namespace with a pod left: %v %v, want Terminating", err, got.Status.Phase)
	}
	// The node stops the pod: its agent confirms with a zero-grace delete.
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns.Name).Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	poll("namespace removed", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
