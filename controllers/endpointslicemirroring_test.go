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

	"github.com/kite-project/kite/controllers/endpointslicemirroring"
)

// In the shared Kite, the Endpoints a user writes for a Service without a
// selector are mirrored into an EndpointSlice (which the proxy and the
// cluster DNS read), updated in place when the Endpoints change, and
// deleted with them: the conformance test "EndpointSliceMirroring should
// mirror a custom Endpoints resource through create update and delete".
func TestEndpointsOfASelectorlessServiceAreMirroredIntoASlice(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mirror-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	if _, err := cs.CoreV1().Services(ns.Name).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "example", Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "custom"}, Subsets: []corev1.EndpointSubset{{
		Ports: []corev1.EndpointPort{{Port: 80}}, Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3"}}}}}
	if ep, err = cs.CoreV1().Endpoints(ns.Name).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// mirrored waits until the Service's slices are exactly one per
	// address given, each the mirroring controller's, on port 80.
	mirrored := func(what string, addrs ...string) {
		t.Helper()
		var last []discoveryv1.EndpointSlice
		err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
			list, err := cs.DiscoveryV1().EndpointSlices(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=custom"})
			if err != nil {
				return false, err
			}
			last = list.Items
			if len(last) != len(addrs) {
				return false, nil
			}
			for i, s := range last {
				if s.Labels[discoveryv1.LabelManagedBy] != endpointslicemirroring.ManagedBy || len(s.Ports) != 1 || *s.Ports[0].Port != 80 ||
					len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != addrs[i] {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: slices %+v, want one per %v: %v", what, last, addrs, err)
		}
	}
	mirrored("created", "10.1.2.3")
	ep.Subsets[0].Addresses[0].IP = "10.2.3.4"
	if _, err := cs.CoreV1().Endpoints(ns.Name).Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mirrored("updated", "10.2.3.4")
	if err := cs.CoreV1().Endpoints(ns.Name).Delete(ctx, "custom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mirrored("deleted")
}
