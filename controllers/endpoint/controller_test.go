package endpoint_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/endpoint"
)

func start(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	c, err := endpoint.New(endpoint.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ep-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return cs, ns.Name
}

// createPod creates a pod of app web and plays its kubelet.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, ip string, ready bool) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
	p, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, cs, p, ip, ready)
}

func setReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ip string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAddresses waits until the Endpoints hold ready and not-ready
// addresses ("ip:port"); absent means the object must not exist.
func waitAddresses(t *testing.T, cs kubernetes.Interface, ns, name string, absent bool, ready, notReady []string) {
	t.Helper()
	var got [2][]string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		ep, err := cs.CoreV1().Endpoints(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return absent, nil
		}
		if err != nil || absent {
			return false, err
		}
		got = [2][]string{}
		for _, s := range ep.Subsets {
			for _, p := range s.Ports {
				for _, a := range s.Addresses {
					got[0] = append(got[0], fmt.Sprintf("%s:%d", a.IP, p.Port))
				}
				for _, a := range s.NotReadyAddresses {
					got[1] = append(got[1], fmt.Sprintf("%s:%d", a.IP, p.Port))
				}
			}
		}
		return slices.Equal(got[0], ready) && slices.Equal(got[1], notReady) && ep.Labels[endpoint.LabelManagedBy] == endpoint.ManagedBy, nil
	})
	if err != nil {
		t.Fatalf("Endpoints %s: %v; got %q, want ready %q not ready %q (absent %v)", name, err, got, ready, notReady, absent)
	}
}

// A Service's Endpoints follow its pods' readiness and go with the
// Service; Endpoints another manager labelled are left alone.
func TestEndpointsFollowTheServicesPods(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, cs, ns, "a", "10.1.0.1", true)
	createPod(t, cs, ns, "b", "10.1.0.2", false)
	waitAddresses(t, cs, ns, "web", false, []string{"10.1.0.1:8080"}, []string{"10.1.0.2:8080"})

	b, err := cs.CoreV1().Pods(ns).Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, cs, b, "10.1.0.2", true)
	waitAddresses(t, cs, ns, "web", false, []string{"10.1.0.1:8080", "10.1.0.2:8080"}, nil)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAddresses(t, cs, ns, "web", false, []string{"10.1.0.2:8080"}, nil)

	if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAddresses(t, cs, ns, "web", true, nil, nil)

	// Endpoints of another manager, with a Service selecting pods: left
	// as they are.
	other := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Labels: map[string]string{endpoint.LabelManagedBy: "someone-else"}},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.9.9.9"}}, Ports: []corev1.EndpointPort{{Port: 1}}}}}
	if _, err := cs.CoreV1().Endpoints(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc.Name = "theirs"
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc.Name = "mine"
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the later Service is synced, the earlier one has been seen.
	waitAddresses(t, cs, ns, "mine", false, []string{"10.1.0.2:8080"}, nil)
	got, err := cs.CoreV1().Endpoints(ns).Get(ctx, "theirs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Subsets) != 1 || got.Subsets[0].Addresses[0].IP != "10.9.9.9" {
		t.Errorf("another manager's Endpoints were changed: %+v", got.Subsets)
	}
}

// Endpoints written by hand with no Service of their name are the
// writer's own: updating them must not make the controller delete them as
// a gone Service's (the conformance "lifecycle of an Endpoint" test
// creates, updates, then patches such an object). A Service's own
// Endpoints changed by hand are still put back.
func TestEndpointsWithoutAServiceSurviveAnUpdate(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	own := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "testservice", Labels: map[string]string{"test-endpoint-static": "true"}},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.24"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: 80}}}}}
	own, err := cs.CoreV1().Endpoints(ns).Create(ctx, own, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, cs, ns, "a", "10.1.0.1", true)
	waitAddresses(t, cs, ns, "web", false, []string{"10.1.0.1:8080"}, nil)

	own.Labels["test-service"] = "updated"
	if _, err := cs.CoreV1().Endpoints(ns).Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// After the update, on the same watch, the Service's Endpoints are
	// emptied by hand; once the controller has put them back it has
	// handled the update before.
	web, err := cs.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Subsets = nil
	if _, err := cs.CoreV1().Endpoints(ns).Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAddresses(t, cs, ns, "web", false, []string{"10.1.0.1:8080"}, nil)
	got, err := cs.CoreV1().Endpoints(ns).Get(ctx, "testservice", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Endpoints without a Service after an update: %v", err)
	}
	if got.Labels["test-service"] != "updated" || len(got.Subsets) != 1 {
		t.Errorf("the Endpoints without a Service were changed: %+v", got)
	}
}
