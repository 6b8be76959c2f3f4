package containerconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The cases of the kubelet's TestGetPodDNS, TestGetPodDNSCustom and
// TestFormDNSSearchFitsLimits, against a node whose resolv.conf names
// 10.0.0.2 and searches host.example, with cluster DNS 10.43.0.10 in
// domain cluster.local.
func TestPodDNS(t *testing.T) {
	host := &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"host.example"}, Options: []string{"edns0"}}
	cluster := Inputs{HostDNS: host, ClusterDNS: []string{"10.43.0.10"}, ClusterDomain: "cluster.local"}
	clusterSearch := []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	three := "3"
	custom := &v1.PodDNSConfig{Nameservers: []string{"10.0.0.11"}, Searches: []string{"my.domain"},
		Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}}}
	var many []string
	for i := range 33 {
		many = append(many, fmt.Sprint(i+4))
	}
	long := []string{strings.Repeat("a", 128)}
	for i := range 15 {
		long = append(long, strings.Repeat(string(rune('b'+i)), 127)) // distinct: searches are merged without duplicates
	}
	for _, tc := range []struct {
		name        string
		policy      v1.DNSPolicy
		hostNetwork bool
		config      *v1.PodDNSConfig
		in          Inputs
		want        *runtimeapi.DNSConfig
		warnings    []string
	}{
		{name: "ClusterFirst: the cluster DNS alone, the cluster's searches then the host's, ndots:5", policy: v1.DNSClusterFirst, in: cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: append(clusterSearch, "host.example"), Options: []string{"ndots:5"}}},
		{name: "an empty policy is ClusterFirst", in: cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: append(clusterSearch, "host.example"), Options: []string{"ndots:5"}}},
		{name: "ClusterFirst on the host network is Default", policy: v1.DNSClusterFirst, hostNetwork: true, in: cluster, want: host},
		{name: "ClusterFirstWithHostNet on the host network", policy: v1.DNSClusterFirstWithHostNet, hostNetwork: true, in: cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: append(clusterSearch, "host.example"), Options: []string{"ndots:5"}}},
		{name: "Default: the host's", policy: v1.DNSDefault, in: cluster, want: host},
		{name: "None without dnsConfig: nothing", policy: v1.DNSNone, in: cluster, want: &runtimeapi.DNSConfig{}},
		{name: "None takes the pod's dnsConfig alone", policy: v1.DNSNone, config: custom, in: cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.11"}, Searches: []string{"my.domain"}, Options: []string{"ndots:3", "debug"}}},
		{name: "ClusterFirst merges the pod's dnsConfig", policy: v1.DNSClusterFirst, config: custom, in: cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10", "10.0.0.11"}, Searches: append(clusterSearch, "host.example", "my.domain"), Options: []string{"ndots:3", "debug"}}},
		{name: "Default merges the pod's dnsConfig", policy: v1.DNSDefault, config: custom, in: cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.11"}, Searches: []string{"host.example", "my.domain"}, Options: []string{"edns0", "ndots:3", "debug"}}},
		{name: "ClusterFirst without a cluster DNS is Default, with an event", policy: v1.DNSClusterFirst, in: Inputs{HostDNS: host},
			want:     host,
			warnings: []string{`MissingClusterDNS: pod: "p_ns1(uid-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`}},
		{name: "a host search already in the cluster's counts once", policy: v1.DNSClusterFirst,
			in:   Inputs{HostDNS: &runtimeapi.DNSConfig{Searches: []string{"cluster.local", "x"}}, ClusterDNS: []string{"10.43.0.10"}, ClusterDomain: "cluster.local"},
			want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: append(clusterSearch, "x"), Options: []string{"ndots:5"}}},
		{name: "more than 3 nameservers are cut", policy: v1.DNSNone, config: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}},
			want:     &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3"}},
			warnings: []string{"DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 1.1.1.1 1.1.1.2 1.1.1.3"}},
		{name: "32 searches are kept", policy: v1.DNSNone, config: &v1.PodDNSConfig{Searches: many[:32]},
			want: &runtimeapi.DNSConfig{Searches: many[:32]}},
		{name: "the 33rd search is cut", policy: v1.DNSNone, config: &v1.PodDNSConfig{Searches: many},
			want:     &runtimeapi.DNSConfig{Searches: many[:32]},
			warnings: []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(many[:32], " ")}},
		{name: "a search longer than a domain is left out", policy: v1.DNSNone, config: &v1.PodDNSConfig{Searches: []string{"a", strings.Repeat("b", 256), "c"}},
			want:     &runtimeapi.DNSConfig{Searches: []string{"a", "c"}},
			warnings: []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: a c"}},
		{name: "a line of 2048 characters is kept", policy: v1.DNSNone, config: &v1.PodDNSConfig{Searches: long},
			want: &runtimeapi.DNSConfig{Searches: long}},
		{name: "a line of 2050 characters loses its last searches", policy: v1.DNSNone, config: &v1.PodDNSConfig{Searches: append(long[:len(long):len(long)], "b")},
			want:     &runtimeapi.DNSConfig{Searches: long},
			warnings: []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(long, " ")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns1", UID: "uid-1"},
				Spec: v1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.config}}
			got, warnings := PodDNS(pod, tc.in)
			if d := cmp.Diff(tc.want, got, protocmp.Transform()); d != "" {
				t.Errorf("PodDNS (-want +got):\n%s", d)
			}
			var shown []string
			for _, w := range warnings {
				shown = append(shown, w.Reason+": "+w.Message)
			}
			if d := cmp.Diff(tc.warnings, shown); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}
