package endpointslicemirroring

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/controllers/endpointslice"
)

func TestMirrorsOnlySelectorlessServicesOwnEndpoints(t *testing.T) {
	ep := func(labels, annotations map[string]string) *corev1.Endpoints {
		return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: labels, Annotations: annotations}}
	}
	plain := &corev1.Service{}
	selector := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
	for _, tc := range []struct {
		name string
		ep   *corev1.Endpoints
		svc  *corev1.Service
		want bool
	}{
		{"a Service without selector and its Endpoints", ep(nil, nil), plain, true},
		{"no Service", ep(nil, nil), nil, false},
		{"no Endpoints", nil, plain, false},
		{"a Service with a selector", ep(nil, nil), selector, false},
		{"skip-mirror true", ep(map[string]string{discoveryv1.LabelSkipMirror: "true"}, nil), plain, false},
		{"skip-mirror other than true", ep(map[string]string{discoveryv1.LabelSkipMirror: "yes"}, nil), plain, true},
		{"a leader election lock", ep(nil, map[string]string{leaderAnnotation: "{}"}), plain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mirrors(tc.ep, tc.svc); got != tc.want {
				t.Errorf("Mirrors = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDesiredGroupsSubsetsByAddressTypeAndPorts(t *testing.T) {
	port := func(name string, n int32) corev1.EndpointPort { return corev1.EndpointPort{Name: name, Port: n} }
	addr := func(ip string) corev1.EndpointAddress { return corev1.EndpointAddress{IP: ip} }
	sport := func(name string, n int32) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: ptr(name), Port: ptr(n), Protocol: ptr(corev1.ProtocolTCP)}
	}
	ready := func(ip string, r bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(r)}}
	}
	for _, tc := range []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    []endpointslice.Group
	}{
		{
			name:    "one subset: ready and not ready addresses, protocol defaulted to TCP",
			subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{port("", 80)}, Addresses: []corev1.EndpointAddress{addr("10.1.2.3")}, NotReadyAddresses: []corev1.EndpointAddress{addr("10.1.2.4")}}},
			want:    []endpointslice.Group{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{sport("", 80)}, Endpoints: []discoveryv1.Endpoint{ready("10.1.2.3", true), ready("10.1.2.4", false)}}},
		},
		{
			name: "subsets with the same ports in another order share a group; an address twice is listed once, ready if any copy is",
			subsets: []corev1.EndpointSubset{
				{Ports: []corev1.EndpointPort{port("a", 80), port("b", 81)}, NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.1")}},
				{Ports: []corev1.EndpointPort{port("b", 81), port("a", 80)}, Addresses: []corev1.EndpointAddress{addr("10.0.0.1"), addr("10.0.0.2")}},
			},
			want: []endpointslice.Group{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{sport("a", 80), sport("b", 81)},
				Endpoints: []discoveryv1.Endpoint{ready("10.0.0.1", true), ready("10.0.0.2", true)}}},
		},
		{
			name: "the same address with other ports is another group's too; IPv6 apart, in canonical form; a name is no IP",
			subsets: []corev1.EndpointSubset{
				{Ports: []corev1.EndpointPort{port("", 80)}, Addresses: []corev1.EndpointAddress{addr("10.0.0.1"), addr("fd00:0::1"), addr("web.example")}},
				{Ports: []corev1.EndpointPort{port("", 443)}, Addresses: []corev1.EndpointAddress{addr("10.0.0.1")}},
			},
			want: []endpointslice.Group{
				{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{sport("", 443)}, Endpoints: []discoveryv1.Endpoint{ready("10.0.0.1", true)}},
				{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{sport("", 80)}, Endpoints: []discoveryv1.Endpoint{ready("10.0.0.1", true)}},
				{AddressType: discoveryv1.AddressTypeIPv6, Ports: []discoveryv1.EndpointPort{sport("", 80)}, Endpoints: []discoveryv1.Endpoint{ready("fd00::1", true)}},
			},
		},
		{name: "no address, no group", subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{port("", 80)}}}, want: []endpointslice.Group{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Desired(&corev1.Endpoints{Subsets: tc.subsets})
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("Desired =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestDesiredMirrorsAtMostMaxEndpointsPerSubsetReadyFirst(t *testing.T) {
	ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Port: 80}}, NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.9.0.1"}}}
	for i := range MaxEndpointsPerSubset {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: fmt.Sprintf("10.0.%d.%d", i/256, i%256)})
	}
	g := Desired(&corev1.Endpoints{Subsets: []corev1.EndpointSubset{ss}})
	if len(g) != 1 || len(g[0].Endpoints) != MaxEndpointsPerSubset {
		t.Fatalf("got %d groups, the first of %d endpoints; want 1 of %d", len(g), len(g[0].Endpoints), MaxEndpointsPerSubset)
	}
	for _, e := range g[0].Endpoints {
		if !*e.Conditions.Ready {
			t.Fatalf("not-ready %s mirrored while ready addresses were left out", e.Addresses[0])
		}
	}
}

func TestReconcileUpdatesInPlaceAndDeletesWhatIsLeftOver(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1",
		Labels:      map[string]string{"team": "a"},
		Annotations: map[string]string{"note": "x", corev1.EndpointsLastChangeTriggerTime: "t"}},
		Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}, Addresses: []corev1.EndpointAddress{{IP: "10.2.3.4"}}}}}
	groups := Desired(ep)
	first := Reconcile(ep, groups, nil)
	if len(first.Create) != 1 || len(first.Update)+len(first.Delete) != 0 {
		t.Fatalf("first plan %+v, want one creation", first)
	}
	s := first.Create[0]
	if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels["team"] != "a" {
		t.Errorf("labels %v", s.Labels)
	}
	if _, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok || s.Annotations["note"] != "x" {
		t.Errorf("annotations %v: the Endpoints' without the trigger time", s.Annotations)
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.Kind != "Endpoints" || ref.UID != "u1" {
		t.Errorf("controller %+v, want the Endpoints", ref)
	}
	s.Name = "web-abcde"
	if p := Reconcile(ep, groups, []*discoveryv1.EndpointSlice{s}); len(p.Create)+len(p.Update)+len(p.Delete) != 0 {
		t.Errorf("a slice already right: plan %+v, want nothing", p)
	}
	moved := ep.DeepCopy()
	moved.Subsets[0].Addresses[0].IP = "10.3.4.5"
	if p := Reconcile(moved, Desired(moved), []*discoveryv1.EndpointSlice{s}); len(p.Update) != 1 || p.Update[0].Name != "web-abcde" || p.Update[0].Endpoints[0].Addresses[0] != "10.3.4.5" || len(p.Create)+len(p.Delete) != 0 {
		t.Errorf("a changed address: plan %+v, want the slice updated in place", p)
	}
	if p := Reconcile(ep, nil, []*discoveryv1.EndpointSlice{s}); len(p.Delete) != 1 || len(p.Create)+len(p.Update) != 0 {
		t.Errorf("no address left: plan %+v, want the slice deleted", p)
	}
}
