package clusterdns_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var (
	srv *kite.Server
	cs  *kubernetes.Clientset
)

// upstreamIP is what the test's upstream resolver answers for every A
// query: names outside the zone never leave 127.0.0.1.
const upstreamIP = "192.0.2.1"

func TestMain(m *testing.M) {
	up, err := startUpstream()
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
	kitetest.MainWith(m, kite.Options{ClusterDNS: kite.ClusterDNSOptions{Addr: "127.0.0.1:0", Upstreams: []string{up}, MetricsAddr: "127.0.0.1:0"}}, func(s *kite.Server) {
		srv = s
		var err error
		if cs, err = kubernetes.NewForConfig(s.RESTConfig()); err != nil {
			panic(err)
		}
	})
}

// startUpstream is a resolver on 127.0.0.1 that answers every A query
// with upstreamIP. It serves until the process exits (its goroutine waits
// in the poller, which kitetest's leak check allows).
func startUpstream() (string, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		if q := r.Question[0]; q.Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP(upstreamIP)}}
		}
		w.WriteMsg(m)
	})}
	go s.ActivateAndServe()
	return pc.LocalAddr().String(), nil
}

// query asks the cluster DNS over net ("udp" or "tcp").
func query(t testing.TB, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, srv.ClusterDNSAddr())
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return r
}

// answers are a response's rcode and answer records, "TYPE data" each,
// sorted.
func answers(r *dns.Msg) string {
	var out []string
	for _, rr := range r.Answer {
		f := strings.Fields(rr.String())
		out = append(out, strings.Join(f[3:], " "))
	}
	slices.Sort(out)
	return dns.RcodeToString[r.Rcode] + " " + strings.Join(out, ", ")
}

// expect waits until name's answer of qtype over UDP and TCP is want
// (the server follows the API through watches).
func expect(t *testing.T, name string, qtype uint16, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, network := range []string{"udp", "tcp"} {
		for {
			got := answers(query(t, network, name, qtype))
			if got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s over %s = %q, want %q", name, dns.TypeToString[qtype], network, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dns-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func createService(t *testing.T, ns string, svc *v1.Service) *v1.Service {
	t.Helper()
	svc, err := cs.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func reverse(ip string) string {
	r, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(err)
	}
	return r
}

// The DNS server of a running Kite answers the names of the Services
// created through the API, and follows their changes.
func TestServerAnswersTheClustersNames(t *testing.T) {
	ns := namespace(t)
	zone := "." + ns + ".svc.cluster.local."
	web := createService(t, ns, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{
		Ports: []v1.ServicePort{{Name: "http", Port: 80}, {Name: "metrics", Port: 9090, Protocol: v1.ProtocolUDP}}}})
	createService(t, ns, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone,
		Ports: []v1.ServicePort{{Name: "mysql", Port: 3306}}}})
	_, err := cs.DiscoveryV1().EndpointSlices(ns).Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "db-1", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.42.7.5"}, Hostname: ptr.To("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.42.7.6"}, Hostname: ptr.To("db-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("mysql"), Port: ptr.To[int32](3306), Protocol: ptr.To(v1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createService(t, ns, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "upstream.test"}})

	ip := web.Spec.ClusterIP
	expect(t, "web"+zone, dns.TypeA, "NOERROR A "+ip)
	expect(t, "web"+zone, dns.TypeAAAA, "NOERROR ")
	expect(t, "_http._tcp.web"+zone, dns.TypeSRV, "NOERROR SRV 0 100 80 web"+zone)
	expect(t, "_metrics._udp.web"+zone, dns.TypeSRV, "NOERROR SRV 0 100 9090 web"+zone)
	expect(t, reverse(ip), dns.TypePTR, "NOERROR PTR web"+zone)
	expect(t, "db"+zone, dns.TypeA, "NOERROR A 10.42.7.5")
	expect(t, "db-0.db"+zone, dns.TypeA, "NOERROR A 10.42.7.5")
	expect(t, "db-1.db"+zone, dns.TypeA, "NXDOMAIN ")
	expect(t, "_mysql._tcp.db"+zone, dns.TypeSRV, "NOERROR SRV 0 100 3306 db-0.db"+zone)
	expect(t, reverse("10.42.7.5"), dns.TypePTR, "NOERROR PTR db-0.db"+zone)
	// An ExternalName's CNAME, with the target's address from upstream.
	expect(t, "ext"+zone, dns.TypeA, "NOERROR A "+upstreamIP+", CNAME upstream.test.")
	expect(t, "10-42-7-9."+ns+".pod.cluster.local.", dns.TypeA, "NOERROR A 10.42.7.9")
	expect(t, "nope"+zone, dns.TypeA, "NXDOMAIN ")
	expect(t, "upstream.test.", dns.TypeA, "NOERROR A "+upstreamIP)

	if err := cs.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "web"+zone, dns.TypeA, "NXDOMAIN ")
	if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(t.Context(), "db-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "db"+zone, dns.TypeA, "NXDOMAIN ")
}

// An answer too large for a UDP datagram is truncated (TC), and whole
// over TCP, as a resolver then retries.
func TestLargeAnswersAreTruncatedOverUDP(t *testing.T) {
	ns := namespace(t)
	createService(t, ns, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "many"}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}})
	var eps []discoveryv1.Endpoint
	for i := range 100 {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.42.8.%d", i+1)}})
	}
	_, err := cs.DiscoveryV1().EndpointSlices(ns).Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "many-1", Labels: map[string]string{discoveryv1.LabelServiceName: "many"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "many." + ns + ".svc.cluster.local."
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for len(query(t, "tcp", name, dns.TypeA).Answer) != 100 {
		if ctx.Err() != nil {
			t.Fatal("the 100 endpoints never came over TCP")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := query(t, "udp", name, dns.TypeA)
	if !r.Truncated || len(r.Answer) >= 100 {
		t.Errorf("over UDP: truncated %v with %d answers, want truncated with fewer than 100", r.Truncated, len(r.Answer))
	}
}

// Kite makes kube-system/kube-dns at the tenth address of the service
// range, without a selector, its EndpointSlice at the DNS server.
func TestKubeDNSService(t *testing.T) {
	svc, err := cs.CoreV1().Services("kube-system").Get(t.Context(), "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s %d/%s", p.Name, p.Port, p.Protocol))
	}
	if svc.Spec.ClusterIP != "10.43.0.10" || svc.Labels["k8s-app"] != "kube-dns" || svc.Spec.Selector != nil ||
		strings.Join(ports, ", ") != "dns 53/UDP, dns-tcp 53/TCP, metrics 9153/TCP" {
		t.Errorf("kube-dns: clusterIP %s, labels %v, selector %v, ports %v", svc.Spec.ClusterIP, svc.Labels, svc.Spec.Selector, ports)
	}
	slice, err := cs.DiscoveryV1().EndpointSlices("kube-system").Get(t.Context(), "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The server listens on 127.0.0.1, which may not be an endpoint (the
	// validation of EndpointSlices): the slice has its ports, no endpoint.
	_, port, _ := net.SplitHostPort(srv.ClusterDNSAddr())
	if len(slice.Endpoints) != 0 || len(slice.Ports) != 2 || fmt.Sprint(*slice.Ports[0].Port) != port ||
		slice.Labels[discoveryv1.LabelServiceName] != "kube-dns" || slice.Labels[discoveryv1.LabelManagedBy] != "kite" {
		t.Errorf("kube-dns EndpointSlice: %+v, want ports %s and no endpoint", slice, port)
	}
	expect(t, "kube-dns.kube-system.svc.cluster.local.", dns.TypeA, "NOERROR A 10.43.0.10")
}

// BenchmarkQueryService measures the answers a second to a Service's
// A query over UDP on 127.0.0.1, one connection per goroutine.
func BenchmarkQueryService(b *testing.B) {
	const name = "kubernetes.default.svc.cluster.local."
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	// Each query's round trip, for the percentiles (issue 28's goal is a
	// p99, which ns/op of parallel clients does not tell).
	var mu sync.Mutex
	var took []time.Duration
	b.RunParallel(func(pb *testing.PB) {
		c := &dns.Client{Timeout: 2 * time.Second}
		conn, err := c.Dial(srv.ClusterDNSAddr())
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		var mine []time.Duration
		defer func() {
			mu.Lock()
			took = append(took, mine...)
			mu.Unlock()
		}()
		for pb.Next() {
			t0 := time.Now()
			r, _, err := c.ExchangeWithConn(m, conn)
			mine = append(mine, time.Since(t0))
			if err != nil || len(r.Answer) != 1 {
				b.Errorf("%s: %v %v", name, r, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	slices.Sort(took)
	if len(took) > 0 {
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "ms-p99")
	}
}
