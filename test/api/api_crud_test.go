package api_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func newNamespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func TestPodCRUDWithTypedClient(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)

	created, err := pods.Create(ctx, testPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Generation != 1 {
		t.Errorf("created pod lacks system fields: uid=%q rv=%q ts=%v gen=%d", created.UID, created.ResourceVersion, created.CreationTimestamp, created.Generation)
	}
	if created.Status.Phase != v1.PodPending || created.Spec.RestartPolicy != v1.RestartPolicyAlways {
		t.Errorf("created pod not defaulted: phase=%q restartPolicy=%q", created.Status.Phase, created.Spec.RestartPolicy)
	}
	if len(created.ManagedFields) == 0 {
		t.Errorf("created pod has no managedFields")
	}

	got, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v (uid %v, want %v)", err, got.UID, created.UID)
	}

	got.Labels["tier"] = "front"
	updated, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.ResourceVersion == got.ResourceVersion {
		t.Errorf("update did not change resourceVersion")
	}
	// A stale resourceVersion is a conflict.
	got.Labels["tier"] = "back"
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: got %v, want Conflict", err)
	}

	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "tier=front"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list by label: %v, %d items", err, len(list.Items))
	}

	if _, err := pods.Create(ctx, testPod("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: got %v, want AlreadyExists", err)
	}
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete (unbound pod goes at once): got %v, want NotFound", err)
	}
}

func configMap(name string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}
