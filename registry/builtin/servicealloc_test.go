package builtin

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func storedService(name, ip string, nodePorts ...int32) v1.Service {
	svc := v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip}, IPFamilies: []v1.IPFamily{ipFamilyOf(ip)}}}
	for _, np := range nodePorts {
		svc.Spec.Type = v1.ServiceTypeNodePort
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Port: np - 30000, NodePort: np})
	}
	return svc
}

// TestServiceAllocationRepairRebuildsFromStoredServices checks the
// repair at start: what stored services hold is taken, what they hold
// twice or outside the ranges is reported, and nothing else stays taken
// (an allocation whose service was never written is free again).
func TestServiceAllocationRepairRebuildsFromStoredServices(t *testing.T) {
	tests := []struct {
		name         string
		stored       []v1.Service
		wantProblems []string
		// taken and free are checked after the repair.
		takenIPs, freeIPs     []string
		takenPorts, freePorts []int32
	}{
		{name: "stored IPs and ports are taken, others free",
			stored:   []v1.Service{storedService("a", "10.43.0.20", 30100), storedService("b", "10.43.5.5")},
			takenIPs: []string{"10.43.0.20", "10.43.5.5"}, freeIPs: []string{"10.43.0.21"},
			takenPorts: []int32{30100}, freePorts: []int32{30101}},
		{name: "an IP held twice is reported",
			stored:       []v1.Service{storedService("a", "10.43.0.20"), storedService("b", "10.43.0.20")},
			wantProblems: []string{"Cluster IP 10.43.0.20 was assigned to multiple services; please recreate service ns/b"},
			takenIPs:     []string{"10.43.0.20"}},
		{name: "an IP outside the ranges is reported",
			stored:       []v1.Service{storedService("a", "10.0.0.1")},
			wantProblems: []string{"Cluster IP 10.0.0.1 is not within any configured Service CIDR; please recreate service ns/a"}},
		{name: "a node port held twice is reported",
			stored:       []v1.Service{storedService("a", "10.43.0.20", 30100), storedService("b", "10.43.0.21", 30100)},
			wantProblems: []string{"the node port 30100 for service ns/b was assigned to multiple services; please recreate"}},
		{name: "headless and ExternalName hold nothing",
			stored: []v1.Service{storedService("h", v1.ClusterIPNone),
				{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "x.example.com"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewServiceAllocation(nil, "")
			if err != nil {
				t.Fatal(err)
			}
			// Taken before the repair: an allocation whose service was
			// never written, which the repair must free.
			lost := storedService("lost", "10.43.0.21", 30101)
			if _, err := a.Allocate(t.Context(), &lost, nil, false); err != nil {
				t.Fatal(err)
			}
			problems := a.Repair(tt.stored)
			if !slices.Equal(problems, tt.wantProblems) {
				t.Errorf("problems %q, want %q", problems, tt.wantProblems)
			}
			for _, ip := range tt.takenIPs {
				if r, addr := a.rangeOf(ip); r == nil || !r.Has(addr) {
					t.Errorf("%s is free", ip)
				}
			}
			for _, ip := range tt.freeIPs {
				if r, addr := a.rangeOf(ip); r == nil || r.Has(addr) {
					t.Errorf("%s is taken", ip)
				}
			}
			for _, p := range tt.takenPorts {
				if !a.ports.Has(int(p)) {
					t.Errorf("node port %d is free", p)
				}
			}
			for _, p := range tt.freePorts {
				if a.ports.Has(int(p)) {
					t.Errorf("node port %d is taken", p)
				}
			}
		})
	}
}

// TestServiceAllocationIsDualStackReady allocates on a dual-stack
// cluster: a PreferDualStack service gets an IP of each range, the
// primary first; a SingleStack one only the primary.
func TestServiceAllocationIsDualStackReady(t *testing.T) {
	a, err := NewServiceAllocation([]string{"10.43.0.0/16", "fd00:43::/112"}, "")
	if err != nil {
		t.Fatal(err)
	}
	strat := Services()
	a.Install(strat, nil)
	prefer, single := v1.IPFamilyPolicyPreferDualStack, v1.IPFamilyPolicySingleStack
	tests := []struct {
		name    string
		policy  *v1.IPFamilyPolicy
		wantFam []v1.IPFamily
	}{
		{name: "PreferDualStack gets both", policy: &prefer, wantFam: []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}},
		{name: "no policy is SingleStack", wantFam: []v1.IPFamily{v1.IPv4Protocol}},
		{name: "SingleStack gets the primary", policy: &single, wantFam: []v1.IPFamily{v1.IPv4Protocol}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
				Spec: v1.ServiceSpec{Selector: map[string]string{"a": "b"}, IPFamilyPolicy: tt.policy, Ports: []v1.ServicePort{{Port: 80}}}}
			strat.Default(svc)
			strat.PrepareForCreate(svc)
			if errs := strat.Validate(svc); len(errs) > 0 {
				t.Fatal(errs)
			}
			finish, err := strat.Allocate(t.Context(), svc, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			finish(true)
			if !slices.Equal(svc.Spec.IPFamilies, tt.wantFam) || len(svc.Spec.ClusterIPs) != len(tt.wantFam) {
				t.Fatalf("families %v IPs %v, want %v", svc.Spec.IPFamilies, svc.Spec.ClusterIPs, tt.wantFam)
			}
			for i, ip := range svc.Spec.ClusterIPs {
				if ipFamilyOf(ip) != tt.wantFam[i] || (i == 0 && ip != svc.Spec.ClusterIP) {
					t.Errorf("cluster IP %d %s of family %s", i, ip, tt.wantFam[i])
				}
			}
		})
	}
	if _, err := NewServiceAllocation([]string{"10.43.0.0/16", "10.44.0.0/16"}, ""); err == nil || !strings.Contains(err.Error(), "other IP family") {
		t.Errorf("two IPv4 ranges: %v", err)
	}
}

// BenchmarkServiceAllocation measures the in-memory part of a Service
// create's allocation (a cluster IP and a node port, committed) in ranges
// filling up to 1 000 Services; the IPAddress write is an etcd create of
// its own, measured by test/api's BenchmarkServiceCreate.
func BenchmarkServiceAllocation(b *testing.B) {
	a, err := NewServiceAllocation(nil, "")
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if i%1000 == 0 {
			a.Repair(nil) // empty ranges every 1 000 Services
		}
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort,
			IPFamilies: []v1.IPFamily{v1.IPv4Protocol}, Ports: []v1.ServicePort{{Port: 80}}}}
		finish, err := a.Allocate(b.Context(), svc, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		finish(true)
		i++
	}
}
