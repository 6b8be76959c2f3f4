package clusterdns

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// testIndex is a cluster of: default/kubernetes (10.43.0.1, https 443);
// web/front, dual-stack (10.43.0.20, fd00::20; http 80/TCP, dns 53/UDP
// and an unnamed port); web/db, headless, with db-0 (10.42.0.5) ready,
// an endpoint without hostname (10.42.0.6) ready, db-2 (10.42.0.7) not
// ready, port mysql 3306; web/none, headless, with only a not-ready
// endpoint; web/ext, ExternalName example.com; web/alias, ExternalName
// front.web.svc.cluster.local.
func testIndex() *Index {
	x := NewIndex("cluster.local")
	svc := func(ns, name string, spec v1.ServiceSpec) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	x.SetService(svc("default", "kubernetes", v1.ServiceSpec{ClusterIP: "10.43.0.1", ClusterIPs: []string{"10.43.0.1"},
		Ports: []v1.ServicePort{{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}}}))
	x.SetService(svc("web", "front", v1.ServiceSpec{ClusterIP: "10.43.0.20", ClusterIPs: []string{"10.43.0.20", "fd00::20"},
		Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}, {Port: 8080}}}))
	x.SetService(svc("web", "db", v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}))
	x.SetService(svc("web", "none", v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}))
	x.SetService(svc("web", "ext", v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.com"}))
	x.SetService(svc("web", "alias", v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "front.web.svc.cluster.local"}))
	ep := func(ip, host string, ready bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
		if host != "" {
			e.Hostname = &host
		}
		return e
	}
	slice := func(svc, name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("mysql"), Port: ptr.To[int32](3306), Protocol: ptr.To(v1.ProtocolTCP)}}}
	}
	x.SetSlice(slice("db", "db-abc", ep("10.42.0.5", "db-0", true), ep("10.42.0.6", "", true), ep("10.42.0.7", "db-2", false)))
	x.SetSlice(slice("none", "none-abc", ep("10.42.0.9", "", false)))
	return x
}

// show is an answer's records without TTL and class: "name TYPE data".
func show(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		f := strings.Fields(rr.String())
		out = append(out, f[0]+" "+strings.Join(f[3:], " "))
	}
	slices.Sort(out)
	return out
}

func TestLookup(t *testing.T) {
	x := testIndex()
	const soa = "soa"
	for _, tc := range []struct {
		name  string
		qname string
		qtype uint16
		rcode int
		want  []string // the answer; soa: an empty answer with the SOA in authority
		extra []string
	}{
		{name: "a ClusterIP Service's A", qname: "front.web.svc.cluster.local.", qtype: dns.TypeA,
			want: []string{"front.web.svc.cluster.local. A 10.43.0.20"}},
		{name: "names compare without case, the owner keeps the question's", qname: "Front.WEB.svc.Cluster.Local.", qtype: dns.TypeA,
			want: []string{"Front.WEB.svc.Cluster.Local. A 10.43.0.20"}},
		{name: "a dual-stack Service's AAAA", qname: "front.web.svc.cluster.local.", qtype: dns.TypeAAAA,
			want: []string{"front.web.svc.cluster.local. AAAA fd00::20"}},
		{name: "an IPv4 Service's AAAA is NODATA", qname: "kubernetes.default.svc.cluster.local.", qtype: dns.TypeAAAA, want: []string{soa}},
		{name: "a Service's MX is NODATA", qname: "kubernetes.default.svc.cluster.local.", qtype: dns.TypeMX, want: []string{soa}},
		{name: "a Service that does not exist is NXDOMAIN", qname: "nope.web.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},
		{name: "a namespace with Services is NODATA", qname: "web.svc.cluster.local.", qtype: dns.TypeA, want: []string{soa}},
		{name: "a namespace without is NXDOMAIN", qname: "empty.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},
		{name: "svc.<zone> is NODATA", qname: "svc.cluster.local.", qtype: dns.TypeA, want: []string{soa}},
		{name: "the apex has the SOA", qname: "cluster.local.", qtype: dns.TypeSOA, want: []string{"cluster.local. SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"}},
		{name: "another name of the zone is NXDOMAIN", qname: "foo.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},
		{name: "a name under a Service's that is no endpoint is NXDOMAIN", qname: "x.front.web.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},
		{name: "dns-version", qname: "dns-version.cluster.local.", qtype: dns.TypeTXT, want: []string{`dns-version.cluster.local. TXT "1.1.0"`}},

		{name: "a headless Service's ready endpoints", qname: "db.web.svc.cluster.local.", qtype: dns.TypeA,
			want: []string{"db.web.svc.cluster.local. A 10.42.0.5", "db.web.svc.cluster.local. A 10.42.0.6"}},
		{name: "a headless Service without a ready endpoint is NXDOMAIN", qname: "none.web.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},
		{name: "an endpoint by its hostname", qname: "db-0.db.web.svc.cluster.local.", qtype: dns.TypeA,
			want: []string{"db-0.db.web.svc.cluster.local. A 10.42.0.5"}},
		{name: "an endpoint without hostname by its dashed address", qname: "10-42-0-6.db.web.svc.cluster.local.", qtype: dns.TypeA,
			want: []string{"10-42-0-6.db.web.svc.cluster.local. A 10.42.0.6"}},
		{name: "a not-ready endpoint's name is NXDOMAIN", qname: "db-2.db.web.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},

		{name: "SRV of a ClusterIP Service's named port", qname: "_http._tcp.front.web.svc.cluster.local.", qtype: dns.TypeSRV,
			want:  []string{"_http._tcp.front.web.svc.cluster.local. SRV 0 100 80 front.web.svc.cluster.local."},
			extra: []string{"front.web.svc.cluster.local. A 10.43.0.20", "front.web.svc.cluster.local. AAAA fd00::20"}},
		{name: "SRV of a UDP port", qname: "_dns._udp.front.web.svc.cluster.local.", qtype: dns.TypeSRV,
			want:  []string{"_dns._udp.front.web.svc.cluster.local. SRV 0 100 53 front.web.svc.cluster.local."},
			extra: []string{"front.web.svc.cluster.local. A 10.43.0.20", "front.web.svc.cluster.local. AAAA fd00::20"}},
		{name: "SRV of the wrong protocol is NXDOMAIN", qname: "_http._udp.front.web.svc.cluster.local.", qtype: dns.TypeSRV, rcode: dns.RcodeNameError, want: []string{soa}},
		{name: "SRV of a headless Service: one per ready endpoint", qname: "_mysql._tcp.db.web.svc.cluster.local.", qtype: dns.TypeSRV,
			want: []string{"_mysql._tcp.db.web.svc.cluster.local. SRV 0 50 3306 10-42-0-6.db.web.svc.cluster.local.",
				"_mysql._tcp.db.web.svc.cluster.local. SRV 0 50 3306 db-0.db.web.svc.cluster.local."},
			extra: []string{"10-42-0-6.db.web.svc.cluster.local. A 10.42.0.6", "db-0.db.web.svc.cluster.local. A 10.42.0.5"}},
		{name: "_<proto>.<svc> is NODATA", qname: "_tcp.front.web.svc.cluster.local.", qtype: dns.TypeSRV, want: []string{soa}},

		{name: "ExternalName is a CNAME for any type", qname: "ext.web.svc.cluster.local.", qtype: dns.TypeA,
			want: []string{"ext.web.svc.cluster.local. CNAME example.com."}},
		{name: "a pod's A", qname: "10-42-0-5.web.pod.cluster.local.", qtype: dns.TypeA, want: []string{"10-42-0-5.web.pod.cluster.local. A 10.42.0.5"}},
		{name: "a pod's IPv6 AAAA", qname: "fd00--5.web.pod.cluster.local.", qtype: dns.TypeAAAA, want: []string{"fd00--5.web.pod.cluster.local. AAAA fd00::5"}},
		{name: "a pod name that is no address is NXDOMAIN", qname: "web-1.web.pod.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, want: []string{soa}},

		{name: "PTR of a cluster IP", qname: "20.0.43.10.in-addr.arpa.", qtype: dns.TypePTR, want: []string{"20.0.43.10.in-addr.arpa. PTR front.web.svc.cluster.local."}},
		{name: "PTR of an IPv6 cluster IP", qname: "0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", qtype: dns.TypePTR,
			want: []string{"0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa. PTR front.web.svc.cluster.local."}},
		{name: "PTR of a headless endpoint", qname: "5.0.42.10.in-addr.arpa.", qtype: dns.TypePTR, want: []string{"5.0.42.10.in-addr.arpa. PTR db-0.db.web.svc.cluster.local."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ours := x.Lookup(dns.Question{Name: tc.qname, Qtype: tc.qtype, Qclass: dns.ClassINET})
			if !ours {
				t.Fatalf("Lookup(%s) is not the index's", tc.qname)
			}
			if a.Rcode != tc.rcode {
				t.Errorf("rcode = %s, want %s", dns.RcodeToString[a.Rcode], dns.RcodeToString[tc.rcode])
			}
			got := show(a.Answer)
			if len(a.Ns) == 1 && len(a.Answer) == 0 {
				if _, ok := a.Ns[0].(*dns.SOA); ok {
					got = []string{soa}
				}
			}
			if tc.qtype == dns.TypeSOA {
				a.Answer[0].(*dns.SOA).Serial = 1
				got = show(a.Answer)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.extra, show(a.Extra)); d != "" {
				t.Errorf("extra (-want +got):\n%s", d)
			}
		})
	}
}

// Names outside the zone, and reverse names of addresses the index does
// not have, are not the index's: the server forwards them.
func TestLookupLeavesOtherNames(t *testing.T) {
	x := testIndex()
	for _, q := range []dns.Question{
		{Name: "example.com.", Qtype: dns.TypeA},
		{Name: "cluster.local.example.com.", Qtype: dns.TypeA},
		{Name: "1.1.168.192.in-addr.arpa.", Qtype: dns.TypePTR},
		{Name: "20.0.43.10.in-addr.arpa.", Qtype: dns.TypeA},
	} {
		if a, ours := x.Lookup(q); ours {
			t.Errorf("Lookup(%s %s) = %v, want it left to the upstreams", q.Name, dns.TypeToString[q.Qtype], a)
		}
	}
}

// A Service deleted and an endpoint that stops being ready leave the
// answers and the reverse names.
func TestIndexUpdates(t *testing.T) {
	x := testIndex()
	a := func(name string) int {
		ans, _ := x.Lookup(dns.Question{Name: name, Qtype: dns.TypeA})
		return ans.Rcode
	}
	x.DeleteService(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "front"}})
	if rc := a("front.web.svc.cluster.local."); rc != dns.RcodeNameError {
		t.Errorf("deleted Service: rcode %s, want NXDOMAIN", dns.RcodeToString[rc])
	}
	if _, ours := x.Lookup(dns.Question{Name: "20.0.43.10.in-addr.arpa.", Qtype: dns.TypePTR}); ours {
		t.Error("the deleted Service's cluster IP still has a PTR")
	}
	x.SetSlice(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "db-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.5"}, Hostname: ptr.To("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}}})
	if rc := a("db.web.svc.cluster.local."); rc != dns.RcodeNameError {
		t.Errorf("headless Service without ready endpoints: rcode %s, want NXDOMAIN", dns.RcodeToString[rc])
	}
	if _, ours := x.Lookup(dns.Question{Name: "5.0.42.10.in-addr.arpa.", Qtype: dns.TypePTR}); ours {
		t.Error("the endpoint that is no longer ready still has a PTR")
	}
}

func TestServiceIP(t *testing.T) {
	for cidr, want := range map[string]string{"10.96.0.0/12": "10.96.0.10", "10.43.0.0/16": "10.43.0.10", "fd00:43::/112": "fd00:43::a", "10.0.0.248/29": ""} {
		got, err := ServiceIP(cidr)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ServiceIP(%s) = %q, %v; want %q", cidr, got, err, want)
		}
	}
}
