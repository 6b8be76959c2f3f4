package endpoint_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/endpoint"
)

func service(mod func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}
	if mod != nil {
		mod(s)
	}
	return s
}

func pod(name, ip string, mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

func unready(p *corev1.Pod)     { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }
func otherPort(p *corev1.Pod)   { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 }

// render is "ports: ready | not ready" for each subset.
func render(subsets []corev1.EndpointSubset) []string {
	var out []string
	for _, s := range subsets {
		r := ""
		for _, p := range s.Ports {
			r += fmt.Sprintf("%d ", p.Port)
		}
		r += ":"
		for _, a := range s.Addresses {
			r += " " + a.IP
		}
		r += " |"
		for _, a := range s.NotReadyAddresses {
			r += " " + a.IP
		}
		out = append(out, r)
	}
	return out
}

func TestSubsetsFromPods(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  func(*corev1.Service)
		pods []*corev1.Pod
		want []string
	}{
		{name: "ready and unready pods", pods: []*corev1.Pod{pod("b", "10.0.0.2", unready), pod("a", "10.0.0.1", nil)},
			want: []string{"8080 : 10.0.0.1 | 10.0.0.2"}},
		{name: "a terminating pod is left out", pods: []*corev1.Pod{pod("a", "10.0.0.1", terminating), pod("b", "10.0.0.2", nil)},
			want: []string{"8080 : 10.0.0.2 |"}},
		{name: "publishNotReadyAddresses keeps unready and terminating pods ready", svc: func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true },
			pods: []*corev1.Pod{pod("a", "10.0.0.1", terminating), pod("b", "10.0.0.2", unready)}, want: []string{"8080 : 10.0.0.1 10.0.0.2 |"}},
		{name: "pods resolving the port differently are two subsets", pods: []*corev1.Pod{pod("a", "10.0.0.1", nil), pod("b", "10.0.0.2", otherPort)},
			want: []string{"8080 : 10.0.0.1 |", "9090 : 10.0.0.2 |"}},
		{name: "a pod without the named port is left out", pods: []*corev1.Pod{pod("a", "10.0.0.1", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })}},
		{name: "a pod without an IP or finished is left out", pods: []*corev1.Pod{pod("a", "", nil), pod("b", "10.0.0.2", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })}},
		{name: "a headless Service without ports takes every pod", svc: func(s *corev1.Service) { s.Spec.Ports, s.Spec.ClusterIP = nil, corev1.ClusterIPNone },
			pods: []*corev1.Pod{pod("a", "10.0.0.1", nil)}, want: []string{": 10.0.0.1 |"}},
		{name: "IPv6 Service takes the IPv6 address", svc: func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
			pods: []*corev1.Pod{pod("a", "10.0.0.1", func(p *corev1.Pod) { p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::1"}) })},
			want: []string{"8080 : fd00::1 |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subsets, over := endpoint.Subsets(service(tc.svc), tc.pods)
			if got := render(subsets); fmt.Sprint(got) != fmt.Sprint(tc.want) || over {
				t.Errorf("subsets %q over %v, want %q", got, over, tc.want)
			}
		})
	}
}

func TestAddressCarriesTargetNodeAndHostname(t *testing.T) {
	subsets, _ := endpoint.Subsets(service(nil), []*corev1.Pod{pod("a", "10.0.0.1", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a0", "web" })})
	a := subsets[0].Addresses[0]
	if a.Hostname != "a0" || ptr.Deref(a.NodeName, "") != "n1" || a.TargetRef == nil || a.TargetRef.Name != "a" || a.TargetRef.UID != "uid-a" || a.TargetRef.Kind != "Pod" {
		t.Errorf("address %+v", a)
	}
}

func TestOverCapacityIsCutAndAnnotated(t *testing.T) {
	var pods []*corev1.Pod
	for i := range endpoint.MaxAddresses + 5 {
		pods = append(pods, pod(fmt.Sprint(i), fmt.Sprintf("10.%d.%d.1", i/250, i%250), nil))
	}
	ep := endpoint.Desired(service(nil), nil, pods)
	if n := len(ep.Subsets[0].Addresses); n != endpoint.MaxAddresses || ep.Annotations[corev1.EndpointsOverCapacity] != "truncated" {
		t.Errorf("%d addresses, annotations %v", n, ep.Annotations)
	}
	ep = endpoint.Desired(service(nil), ep, pods[:3])
	if _, ok := ep.Annotations[corev1.EndpointsOverCapacity]; ok || ep.Labels[endpoint.LabelManagedBy] != endpoint.ManagedBy {
		t.Errorf("annotations %v labels %v", ep.Annotations, ep.Labels)
	}
}

func TestMineUnlessAnotherManagerLabelledIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		ep   *corev1.Endpoints
		want bool
	}{
		{name: "absent", want: true},
		{name: "unlabelled", ep: &corev1.Endpoints{}, want: true},
		{name: "ours", ep: &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{endpoint.LabelManagedBy: endpoint.ManagedBy}}}, want: true},
		{name: "another manager's", ep: &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{endpoint.LabelManagedBy: "someone"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endpoint.Mine(tc.ep); got != tc.want {
				t.Errorf("Mine %v, want %v", got, tc.want)
			}
		})
	}
}
