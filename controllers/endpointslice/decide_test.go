package endpointslice_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/endpointslice"
)

func service(mod func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.0.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}
	if mod != nil {
		mod(s)
	}
	return s
}

func pod(name string, mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.1", PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}, {IP: "fd00::1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

func unready(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }

func TestEndpointConditionsFollowReadinessAndDeletion(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		svc                         func(*corev1.Service)
		pod                         func(*corev1.Pod)
		ready, serving, terminating bool
	}{
		{name: "ready pod", ready: true, serving: true},
		{name: "unready pod", pod: unready},
		{name: "ready pod being deleted is serving, not ready", pod: terminating, serving: true, terminating: true},
		{name: "unready pod being deleted", pod: func(p *corev1.Pod) { unready(p); terminating(p) }, terminating: true},
		{name: "publishNotReadyAddresses makes an unready pod ready", svc: func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }, pod: unready, ready: true},
		{name: "publishNotReadyAddresses makes a terminating pod ready", svc: func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }, pod: terminating, ready: true, serving: true, terminating: true},
		{name: "pod without a Ready condition", pod: func(p *corev1.Pod) { p.Status.Conditions = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, ok := endpointslice.Endpoint(service(tc.svc), pod("a", tc.pod), discoveryv1.AddressTypeIPv4)
			if !ok {
				t.Fatal("no endpoint")
			}
			c := ep.Conditions
			if *c.Ready != tc.ready || *c.Serving != tc.serving || *c.Terminating != tc.terminating {
				t.Errorf("ready %v serving %v terminating %v, want %v %v %v", *c.Ready, *c.Serving, *c.Terminating, tc.ready, tc.serving, tc.terminating)
			}
		})
	}
}

func TestEndpointCarriesAddressNodeTargetAndHostname(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pod      func(*corev1.Pod)
		at       discoveryv1.AddressType
		addrs    []string
		hostname string
		node     string
		none     bool
	}{
		{name: "IPv4 address of a dual-stack pod", at: discoveryv1.AddressTypeIPv4, addrs: []string{"10.1.0.1"}, node: "n1"},
		{name: "IPv6 address of a dual-stack pod", at: discoveryv1.AddressTypeIPv6, addrs: []string{"fd00::1"}, node: "n1"},
		{name: "no address of the family", pod: func(p *corev1.Pod) { p.Status.PodIPs = p.Status.PodIPs[:1] }, at: discoveryv1.AddressTypeIPv6, none: true},
		{name: "podIP alone", pod: func(p *corev1.Pod) { p.Status.PodIPs = nil }, at: discoveryv1.AddressTypeIPv4, addrs: []string{"10.1.0.1"}, node: "n1"},
		{name: "hostname when the subdomain is the Service", pod: func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a-0", "web" },
			at: discoveryv1.AddressTypeIPv4, addrs: []string{"10.1.0.1"}, hostname: "a-0", node: "n1"},
		{name: "no hostname when the subdomain is another Service", pod: func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a-0", "db" },
			at: discoveryv1.AddressTypeIPv4, addrs: []string{"10.1.0.1"}, node: "n1"},
		{name: "no nodeName when unscheduled", pod: func(p *corev1.Pod) { p.Spec.NodeName = "" }, at: discoveryv1.AddressTypeIPv4, addrs: []string{"10.1.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, ok := endpointslice.Endpoint(service(nil), pod("a", tc.pod), tc.at)
			if ok == tc.none {
				t.Fatalf("endpoint %v, want %v", ok, !tc.none)
			}
			if tc.none {
				return
			}
			if fmt.Sprint(ep.Addresses) != fmt.Sprint(tc.addrs) || ptr.Deref(ep.Hostname, "") != tc.hostname || ptr.Deref(ep.NodeName, "") != tc.node {
				t.Errorf("addresses %v hostname %q node %q, want %v %q %q", ep.Addresses, ptr.Deref(ep.Hostname, ""), ptr.Deref(ep.NodeName, ""), tc.addrs, tc.hostname, tc.node)
			}
			if r := ep.TargetRef; r == nil || r.Kind != "Pod" || r.Namespace != "ns" || r.Name != "a" || r.UID != "uid-a" {
				t.Errorf("targetRef %+v", r)
			}
		})
	}
}

func TestPodsInEndpointsHaveAnIPAndAreNotFinished(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  func(*corev1.Pod)
		want bool
	}{
		{name: "running with an IP", want: true},
		{name: "being deleted", pod: terminating, want: true},
		{name: "no IP", pod: func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }},
		{name: "succeeded", pod: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }},
		{name: "failed", pod: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endpointslice.InEndpoints(pod("a", tc.pod)); got != tc.want {
				t.Errorf("InEndpoints %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTargetPortsResolvePerPod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target intstr.IntOrString
		proto  corev1.Protocol
		want   int32
		err    bool
	}{
		{name: "named port", target: intstr.FromString("http"), want: 8080},
		{name: "named port of another protocol", target: intstr.FromString("http"), proto: corev1.ProtocolUDP, err: true},
		{name: "unknown name", target: intstr.FromString("grpc"), err: true},
		{name: "number", target: intstr.FromInt32(9000), want: 9000},
		{name: "zero is the port", want: 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := tc.proto
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			got, err := endpointslice.FindPort(pod("a", nil), &corev1.ServicePort{Port: 80, Protocol: proto, TargetPort: tc.target})
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("FindPort %d, %v; want %d, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// Pods resolving a named port differently land in different slices; a
// pod that cannot resolve it is an endpoint without that port.
func TestDesiredGroupsByAddressTypeAndPorts(t *testing.T) {
	other := func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 }
	noPort := func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }
	svc := service(func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	groups := endpointslice.Desired(svc, []*corev1.Pod{pod("b", nil), pod("a", nil), pod("c", other), pod("d", noPort),
		pod("e", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })})
	var got []string
	for _, g := range groups {
		s := string(g.AddressType)
		for _, p := range g.Ports {
			s += fmt.Sprintf(":%d", *p.Port)
		}
		for _, e := range g.Endpoints {
			s += " " + e.TargetRef.Name
		}
		got = append(got, s)
	}
	want := []string{"IPv4 d", "IPv4:8080 a b", "IPv4:9090 c", "IPv6 d", "IPv6:8080 a b", "IPv6:9090 c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("groups %q, want %q", got, want)
	}
}

func manyPods(n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, pod(fmt.Sprintf("p%03d", i), func(p *corev1.Pod) { p.Status.PodIPs = p.Status.PodIPs[:1] }))
	}
	return pods
}

// existing makes the slices a plan's creations would have become.
func existing(plan endpointslice.Plan) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i, s := range plan.Create {
		s = s.DeepCopy()
		s.Name = fmt.Sprintf("web-%d", i)
		s.UID = types.UID("slice-" + s.Name)
		out = append(out, s)
	}
	return out
}

func TestReconcilePlansSlicesOfAtMostMaxEndpoints(t *testing.T) {
	svc := service(nil)
	first := endpointslice.Reconcile(svc, endpointslice.Desired(svc, manyPods(250)), nil, 100)
	for _, tc := range []struct {
		name                    string
		existing                []*discoveryv1.EndpointSlice
		pods                    []*corev1.Pod
		svc                     *corev1.Service
		create, update, deletes int
		sizes                   []int
	}{
		{name: "250 endpoints are three slices", pods: manyPods(250), create: 3, sizes: []int{100, 100, 50}},
		{name: "no endpoints is one empty slice", create: 1, sizes: []int{0}},
		{name: "nothing changed writes nothing", existing: existing(first), pods: manyPods(250)},
		{name: "fewer endpoints update one slice and delete one", existing: existing(first), pods: manyPods(150), update: 1, deletes: 1},
		{name: "a pod turning unready updates its slice", existing: existing(first),
			pods: append(manyPods(249), pod("p249", func(p *corev1.Pod) { p.Status.PodIPs = p.Status.PodIPs[:1]; unready(p) })), update: 1},
		{name: "a Service label change updates every slice", existing: existing(first), pods: manyPods(250),
			svc: service(func(s *corev1.Service) { s.Labels["team"] = "b" }), update: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.svc
			if s == nil {
				s = svc
			}
			plan := endpointslice.Reconcile(s, endpointslice.Desired(s, tc.pods), tc.existing, 100)
			if len(plan.Create) != tc.create || len(plan.Update) != tc.update || len(plan.Delete) != tc.deletes {
				t.Fatalf("create %d update %d delete %d, want %d %d %d", len(plan.Create), len(plan.Update), len(plan.Delete), tc.create, tc.update, tc.deletes)
			}
			for i, want := range tc.sizes {
				if got := len(plan.Create[i].Endpoints); got != want {
					t.Errorf("slice %d has %d endpoints, want %d", i, got, want)
				}
			}
			for _, sl := range append(plan.Create, plan.Update...) {
				if sl.Labels[discoveryv1.LabelServiceName] != "web" || sl.Labels[discoveryv1.LabelManagedBy] != endpointslice.ManagedBy || sl.Labels["team"] != s.Labels["team"] {
					t.Errorf("labels %v", sl.Labels)
				}
				if ref := metav1.GetControllerOf(sl); ref == nil || ref.Kind != "Service" || ref.UID != "svc-uid" || ref.Name != "web" {
					t.Errorf("owner %+v", ref)
				}
			}
		})
	}
}

func TestManagedServicesHaveASelectorAndAreNotExternalName(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  func(*corev1.Service)
		want bool
	}{
		{name: "selector", want: true},
		{name: "no selector", svc: func(s *corev1.Service) { s.Spec.Selector = nil }},
		{name: "ExternalName", svc: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endpointslice.Managed(service(tc.svc)); got != tc.want {
				t.Errorf("Managed %v, want %v", got, tc.want)
			}
		})
	}
}
