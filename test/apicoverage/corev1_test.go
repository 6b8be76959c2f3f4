package apicoverage_test

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// unboundPod creates a pod that no scheduler binds (the shared server runs
// none) in a namespace of its own.
func unboundPod(t *testing.T, cs kubernetes.Interface) *corev1.Pod {
	t.Helper()
	ns := newNamespace(t)
	// The pod's service account must exist for its admission; the
	// controller makes it too, so either create wins.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestBindingsBindThePodTheirNameNames: POST
// /api/v1/namespaces/<ns>/bindings binds the pod named by the Binding's
// metadata.name, as upstream's LegacyBindingREST (kube-scheduler's old
// path): the pod gets the node and PodScheduled; a second binding is 409,
// a Binding without a name 400, one of a missing pod 404, and the
// resource takes no other verb (405).
func TestBindingsBindThePodTheirNameNames(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(config(t))
	pod := unboundPod(t, cs)
	bind := func(name, node string) error {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		return cs.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("bindings").Body(b).Do(t.Context()).Error()
	}
	if err := bind(pod.Name, "node-a"); err != nil {
		t.Fatalf("bind: %v", err)
	}
	got, err := cs.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "node-a" {
		t.Errorf("spec.nodeName %q, want node-a", got.Spec.NodeName)
	}
	scheduled := false
	for _, c := range got.Status.Conditions {
		scheduled = scheduled || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue)
	}
	if !scheduled {
		t.Errorf("conditions %v, want PodScheduled=True", got.Status.Conditions)
	}

	for _, tc := range []struct {
		name, binding string
		is            func(error) bool
		message       string
	}{
		{"a pod bound already", pod.Name, apierrors.IsConflict, `pod web is already assigned to node "node-a"`},
		{"no name", "", apierrors.IsBadRequest, "Name parameter required."},
		{"a missing pod", "missing", apierrors.IsNotFound, `pods "missing" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := bind(tc.binding, "node-b")
			if !tc.is(err) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("bind: %v, want %q", err, tc.message)
			}
		})
	}
	t.Run("no other verb", func(t *testing.T) {
		err := cs.CoreV1().RESTClient().Get().Namespace(pod.Namespace).Resource("bindings").Do(t.Context()).Error()
		if !apierrors.IsMethodNotSupported(err) {
			t.Errorf("list bindings: %v, want 405", err)
		}
	})
}

// TestComponentStatusesAsUpstream: componentstatuses (cs) lists the
// scheduler, the controller manager and etcd-0 as kube-apiserver does,
// healthy as the server knows them (etcd answers; the shared server runs
// controllers but no scheduler, which is then asked at kube-scheduler's
// port, as upstream asks it), with upstream's deprecation warning and
// columns; get and list only.
func TestComponentStatusesAsUpstream(t *testing.T) {
	out := kubectl(t, "get", "cs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "Warning: v1 ComponentStatus is deprecated in v1.19+" || strings.Join(strings.Fields(lines[1]), " ") != "NAME STATUS MESSAGE ERROR" {
		t.Fatalf("kubectl get cs:\n%s\nwant the deprecation warning, upstream's header and 3 rows", out)
	}
	rows := map[string]string{}
	for _, l := range lines[2:] {
		name, rest, _ := strings.Cut(l, " ")
		rows[name] = strings.Join(strings.Fields(rest), " ")
	}
	for name, want := range map[string]string{"etcd-0": "Healthy ok", "controller-manager": "Healthy ok"} {
		if rows[name] != want {
			t.Errorf("kubectl get cs: %s is %q, want %q\n%s", name, rows[name], want, out)
		}
	}
	if _, ok := rows["scheduler"]; !ok {
		t.Errorf("kubectl get cs: no scheduler row\n%s", out)
	}

	cs := kubernetes.NewForConfigOrDie(config(t))
	etcd, err := cs.CoreV1().ComponentStatuses().Get(t.Context(), "etcd-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(etcd.Conditions) != 1 || etcd.Conditions[0].Type != corev1.ComponentHealthy || etcd.Conditions[0].Status != corev1.ConditionTrue || etcd.Conditions[0].Message != "ok" {
		t.Errorf("etcd-0 conditions %+v, want Healthy True ok", etcd.Conditions)
	}
	list, err := cs.CoreV1().ComponentStatuses().List(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=etcd-0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "etcd-0" {
		t.Errorf("list with metadata.name=etcd-0: %v", list.Items)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		is   func(error) bool
	}{
		{"get of an unknown component", func() error {
			_, err := cs.CoreV1().ComponentStatuses().Get(t.Context(), "nope", metav1.GetOptions{})
			return err
		}, apierrors.IsNotFound},
		{"create", func() error {
			_, err := cs.CoreV1().ComponentStatuses().Create(t.Context(), &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}, apierrors.IsMethodNotSupported},
		{"delete", func() error {
			return cs.CoreV1().ComponentStatuses().Delete(t.Context(), "etcd-0", metav1.DeleteOptions{})
		}, apierrors.IsMethodNotSupported},
		{"watch", func() error {
			w, err := cs.CoreV1().ComponentStatuses().Watch(t.Context(), metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}, apierrors.IsMethodNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !tc.is(err) {
				t.Errorf("%s: %v", tc.name, err)
			}
		})
	}
}

// TestNamespacesTakeNoDeleteCollection: upstream's namespace storage has
// no deletecollection, so DELETE /api/v1/namespaces is 405
// MethodNotAllowed and deletes nothing.
func TestNamespacesTakeNoDeleteCollection(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t)
	// client-go has no DeleteCollection of namespaces: the request itself.
	err := cs.CoreV1().RESTClient().Delete().Resource("namespaces").Param("labelSelector", "none=none").Do(t.Context()).Error()
	var status *apierrors.StatusError
	if !apierrors.IsMethodNotSupported(err) || !asStatusError(err, &status) || status.ErrStatus.Code != http.StatusMethodNotAllowed {
		t.Fatalf("deletecollection of namespaces: %v, want 405 MethodNotAllowed", err)
	}
	if got, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("namespace %s after the refused deletecollection: %v %v", ns, got, err)
	}
}

func asStatusError(err error, into **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*into = s
	return ok
}
