package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// In the shared Kite (every controller, the garbage collector among
// them) a Service gets its EndpointSlice from the EndpointSlice
// controller, and deleting the Service takes the slice with it through
// its owner reference.
func TestServiceDeletedTakesItsEndpointSlices(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "eps-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	if _, err := cs.CoreV1().Services(ns.Name).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices := func() int {
		list, err := cs.DiscoveryV1().EndpointSlices(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) { return slices() == 1, nil }); err != nil {
		t.Fatalf("the Service's slice never came: %v", err)
	}
	if err := cs.CoreV1().Services(ns.Name).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) { return slices() == 0, nil }); err != nil {
		t.Fatalf("%d slices left after the Service was deleted: %v", slices(), err)
	}
}
