package endpointslice_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/endpointslice"
)

// start runs the controller (max endpoints a slice, 0 for 100) and
// returns a client and a new namespace.
func start(t *testing.T, max int) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	c, err := endpointslice.New(endpointslice.Options{Client: cs, MaxEndpointsPerSlice: max})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "eps-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return cs, ns.Name
}

// createPod creates a pod of app on node n1 and plays its kubelet:
// Running with an IP, Ready when ready.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, ip string, ready bool) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
	p, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	return setReady(t, cs, p, ready)
}

func setReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ready bool) *corev1.Pod {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	p, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// endpoints renders the Service's managed slices' endpoints, sorted:
// "name address port ready/serving/terminating".
func endpoints(ctx context.Context, cs kubernetes.Interface, ns, svc string) ([]string, []discoveryv1.EndpointSlice, error) {
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc + "," + discoveryv1.LabelManagedBy + "=" + endpointslice.ManagedBy})
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, s := range list.Items {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprint(ptr.Deref(p.Port, 0)))
		}
		for _, e := range s.Endpoints {
			c := e.Conditions
			out = append(out, fmt.Sprintf("%s %s %s %v/%v/%v", e.TargetRef.Name, strings.Join(e.Addresses, ","), strings.Join(ports, ","),
				ptr.Deref(c.Ready, false), ptr.Deref(c.Serving, false), ptr.Deref(c.Terminating, false)))
		}
	}
	slices.Sort(out)
	return out, list.Items, nil
}

func waitEndpoints(t *testing.T, cs kubernetes.Interface, ns, svc string, want ...string) []discoveryv1.EndpointSlice {
	t.Helper()
	var got []string
	var items []discoveryv1.EndpointSlice
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		got, items, err = endpoints(ctx, cs, ns, svc)
		// A Service the controller synced has a slice, empty or not.
		return err == nil && len(items) > 0 && slices.Equal(got, want), err
	})
	if err != nil {
		t.Fatalf("endpoints of %s: %v; got %q, want %q", svc, err, got, want)
	}
	return items
}

// A Service's slice follows its pods: listed once they have an IP, ready
// as their Ready condition, terminating once deleted, gone once removed;
// it is owned by the Service.
func TestSliceFollowsTheServicesPods(t *testing.T) {
	cs, ns := start(t, 0)
	ctx := context.Background()
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No pods: one empty slice, as upstream.
	items := waitEndpoints(t, cs, ns, "web")
	if len(items) != 1 {
		t.Fatalf("%d slices of a Service without pods, want 1", len(items))
	}
	a := createPod(t, cs, ns, "a", "10.1.0.1", true)
	createPod(t, cs, ns, "b", "10.1.0.2", false)
	items = waitEndpoints(t, cs, ns, "web", "a 10.1.0.1 8080 true/true/false", "b 10.1.0.2 8080 false/false/false")
	for _, s := range items {
		if ref := metav1.GetControllerOf(&s); ref == nil || ref.Kind != "Service" || ref.UID != svc.UID {
			t.Errorf("slice %s is controlled by %+v, want the Service", s.Name, ref)
		}
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Errorf("slice %s address type %s", s.Name, s.AddressType)
		}
	}

	setReady(t, cs, a, false)
	waitEndpoints(t, cs, ns, "web", "a 10.1.0.1 8080 false/false/false", "b 10.1.0.2 8080 false/false/false")
	a, err = cs.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, cs, a, true)
	waitEndpoints(t, cs, ns, "web", "a 10.1.0.1 8080 true/true/false", "b 10.1.0.2 8080 false/false/false")

	// A graceful delete of a pod on a node leaves it terminating: serving,
	// not ready.
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, ns, "web", "a 10.1.0.1 8080 false/true/true", "b 10.1.0.2 8080 false/false/false")
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, ns, "web", "b 10.1.0.2 8080 false/false/false")

	// A pod whose labels stop matching leaves too.
	b, err := cs.CoreV1().Pods(ns).Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"app": "other"}
	if _, err := cs.CoreV1().Pods(ns).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, ns, "web")
}

// A Service's pods fill slices of at most --max-endpoints-per-slice
// endpoints (10 here, for a short test; the decision's test shows 100);
// a slice deleted behind the controller's back is made again.
func TestSlicesHoldAtMostMaxEndpoints(t *testing.T) {
	cs, ns := start(t, 10)
	ctx := context.Background()
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8000)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("p%03d", i)
		ip := fmt.Sprintf("10.2.%d.%d", i/200, i%200+1)
		createPod(t, cs, ns, name, ip, true)
		want = append(want, fmt.Sprintf("%s %s 8000 true/true/false", name, ip))
	}
	slices.Sort(want)
	items := waitEndpoints(t, cs, ns, "big", want...)
	var sizes []int
	for _, s := range items {
		sizes = append(sizes, len(s.Endpoints))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{5, 10, 10}) {
		t.Errorf("slice sizes %v, want [5 10 10]", sizes)
	}
	if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, ns, "big", want...)
}

// A Service without a selector keeps the slices its user writes.
func TestServiceWithoutSelectorIsLeftAlone(t *testing.T) {
	cs, ns := start(t, 0)
	ctx := context.Background()
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "manual"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A selector-bearing Service created after it shows the controller
	// has seen both.
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, ns, "web")
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=manual"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d slices of a Service without a selector, want 0", len(list.Items))
	}
}
