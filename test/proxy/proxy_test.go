package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/agent/proxy"
)

// node is a node namespace joined to two backend namespaces, b1 and b2,
// each with a server on :8080 that answers its name.
type node struct {
	ns, b1, b2 string
	// ip is the node's address (its link to b1), the node port address.
	ip string
}

const (
	proxyNode = "proxy-node"
	b1IP      = "10.99.1.2"
	b2IP      = "10.99.2.2"
)

func newNode(t *testing.T) *node {
	t.Helper()
	n := &node{ns: newNetns(t, "node"), b1: newNetns(t, "b1"), b2: newNetns(t, "b2"), ip: "10.99.1.1"}
	link(t, n.ns, "to-b1", n.ip, n.b1, "eth0", b1IP)
	link(t, n.ns, "to-b2", "10.99.2.1", n.b2, "eth0", b2IP)
	run(t, "ip", "-n", n.b1, "route", "add", "default", "via", n.ip)
	run(t, "ip", "-n", n.b2, "route", "add", "default", "via", "10.99.2.1")
	// The node routes cluster IPs somewhere, as a host's default route
	// does, and forwards (node ports reached from b2); both only inside
	// its own namespace.
	run(t, "ip", "-n", n.ns, "route", "add", "default", "via", b1IP)
	run(t, "ip", "netns", "exec", n.ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	serve(t, n.b1, ":8080", "b1")
	serve(t, n.b2, ":8080", "b2")
	return n
}

// syncs records the proxy's applies.
type syncs struct {
	mu   sync.Mutex
	last []applied
	more chan struct{}
}

type applied struct {
	at     time.Time
	script string
	err    error
}

func newSyncs() *syncs { return &syncs{more: make(chan struct{}, 1)} }

func (s *syncs) observe(r proxy.SyncResult) {
	s.mu.Lock()
	// The whole state the tables hold, whatever the sync wrote.
	s.last = append(s.last, applied{time.Now(), proxy.Render(r.Rules), r.Err})
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// after waits for the first apply after since whose rules (as a whole
// script) satisfy ok,
// and returns when it was done.
func (s *syncs) after(t *testing.T, since time.Time, ok func(script string) bool) time.Time {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		for _, a := range s.last {
			if a.err != nil {
				s.mu.Unlock()
				t.Fatalf("apply failed: %v", a.err)
			}
			if a.at.After(since) && ok(a.script) {
				s.mu.Unlock()
				return a.at
			}
		}
		s.mu.Unlock()
		select {
		case <-s.more:
		case <-timeout:
			t.Fatal("no apply of the expected rules within 10s")
		}
	}
}

// startProxy runs the proxy runner with its rules in n's namespace; the
// returned stop ends it and waits.
func startProxy(t *testing.T, n *node, s *syncs) (stop func()) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	p, err := proxy.New(proxy.Options{
		Client:      cs,
		NodeName:    proxyNode,
		NodePortIPs: []netip.Addr{netip.MustParseAddr(n.ip)},
		// The backends stand for this node's pods: their range is the
		// cluster's, and their endpoints are local.
		ClusterCIDRs:  []netip.Prefix{netip.MustParsePrefix("10.99.0.0/16")},
		MinSyncPeriod: 10 * time.Millisecond,
		NFT:           []string{"ip", "netns", "exec", n.ns, "nft"},
		OnSync:        s.observe,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// endpoints is the Service's EndpointSlice with b1 and b2 at the
// readiness given.
func endpoints(ns, svc string, b1Ready, b2Ready bool) *discovery.EndpointSlice {
	ep := func(ip string, ready bool) discovery.Endpoint {
		return discovery.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(proxyNode),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)}}
	}
	return &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-1", Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(v1.ProtocolTCP)}},
		Endpoints:   []discovery.Endpoint{ep(b1IP, b1Ready), ep(b2IP, b2Ready)},
	}
}

// answers asks addr n times from namespace ns and counts the answers.
func answers(t *testing.T, ns, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		name, err := ask(ns, addr)
		if err != nil {
			t.Fatalf("connect to %s from %s: %v", addr, ns, err)
		}
		got[name]++
	}
	return got
}

// TestServiceProxyRoutesToReadyEndpoints runs the proxy runner against
// the API with its rules in a node namespace, and checks the traffic: a
// cluster IP and a node port reach both ready backends, a backend that
// goes not ready gets no new connection, a Service without ready
// endpoints refuses connections, and the tables go with the proxy.
func TestServiceProxyRoutesToReadyEndpoints(t *testing.T) {
	needNetns(t)
	ctx := t.Context()
	n := newNode(t)
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "proxy-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns.Name).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{
		Type:  v1.ServiceTypeNodePort,
		Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	epSlices := cs.DiscoveryV1().EndpointSlices(ns.Name)
	if _, err := epSlices.Create(ctx, endpoints(ns.Name, "web", true, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clusterIP := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	nodePort := net.JoinHostPort(n.ip, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	s := newSyncs()
	start := time.Now()
	stop := startProxy(t, n, s)
	s.after(t, start, func(script string) bool {
		return strings.Contains(script, svc.Spec.ClusterIP+" . tcp . 80 : goto service-")
	})

	t.Run("a cluster IP reaches every ready endpoint from the node", func(t *testing.T) {
		if got := answers(t, n.ns, clusterIP, 24); got["b1"] == 0 || got["b2"] == 0 {
			t.Errorf("answers over 24 connections = %v, want both backends", got)
		}
	})
	t.Run("a node port reaches every ready endpoint from another host", func(t *testing.T) {
		if got := answers(t, n.b2, nodePort, 24); got["b1"] == 0 || got["b2"] == 0 {
			t.Errorf("answers over 24 connections = %v, want both backends", got)
		}
	})
	t.Run("a pod reaches itself and the others through its Service", func(t *testing.T) {
		// b1's own connections that land on b1 come back only if they are
		// masqueraded (hairpin): b1 drops a packet from its own address.
		if got := answers(t, n.b1, clusterIP, 24); got["b1"] == 0 || got["b2"] == 0 {
			t.Errorf("answers over 24 connections from b1 = %v, want both backends", got)
		}
	})
	t.Run("a port the cluster IP does not serve is refused", func(t *testing.T) {
		if _, err := ask(n.ns, net.JoinHostPort(svc.Spec.ClusterIP, "81")); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("connect to port 81: %v, want connection refused", err)
		}
	})

	// The time from an EndpointSlice's update to the rules applied on the
	// node, the API write and watch included.
	var latencies []time.Duration
	setReady := func(b1, b2 bool, ok func(string) bool) {
		t.Helper()
		cur, err := epSlices.Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := endpoints(ns.Name, "web", b1, b2)
		cur.Endpoints = want.Endpoints
		t0 := time.Now()
		if _, err := epSlices.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		latencies = append(latencies, s.after(t, t0, ok).Sub(t0))
	}
	onlyB1 := func(script string) bool {
		return strings.Contains(script, "dnat to "+b1IP+":8080") && !strings.Contains(script, b2IP)
	}
	both := func(script string) bool {
		return strings.Contains(script, b1IP+" . 8080") && strings.Contains(script, b2IP+" . 8080")
	}

	t.Run("an endpoint that goes not ready gets no new connection", func(t *testing.T) {
		setReady(true, false, onlyB1)
		if got := answers(t, n.ns, clusterIP, 12); got["b2"] != 0 {
			t.Errorf("answers = %v, want b1 only", got)
		}
		if got := answers(t, n.b2, nodePort, 12); got["b2"] != 0 {
			t.Errorf("node port answers = %v, want b1 only", got)
		}
	})
	t.Run("a Service without ready endpoints refuses connections", func(t *testing.T) {
		setReady(false, false, func(script string) bool {
			return strings.Contains(script, svc.Spec.ClusterIP+" . tcp . 80 : goto reject-chain")
		})
		if _, err := ask(n.ns, clusterIP); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("connect to the cluster IP: %v, want connection refused", err)
		}
		if _, err := ask(n.b2, nodePort); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("connect to the node port: %v, want connection refused", err)
		}
	})
	t.Run("endpoints that come back get traffic again", func(t *testing.T) {
		setReady(true, true, both)
		if got := answers(t, n.ns, clusterIP, 24); got["b1"] == 0 || got["b2"] == 0 {
			t.Errorf("answers = %v, want both backends", got)
		}
	})
	// More samples of the latency, without traffic between them.
	for i := range 10 {
		if i%2 == 0 {
			setReady(true, false, onlyB1)
		} else {
			setReady(true, true, both)
		}
	}
	slices.Sort(latencies)
	t.Logf("EndpointSlice update to rules applied, over %d changes: p50 %v, max %v", len(latencies), latencies[len(latencies)/2], latencies[len(latencies)-1])

	t.Run("the tables go when the proxy stops", func(t *testing.T) {
		if got := tables(t, n.ns); !strings.Contains(got, "table ip "+proxy.TableName) || !strings.Contains(got, "table ip6 "+proxy.TableName) {
			t.Fatalf("tables while running = %q", got)
		}
		stop()
		if got := tables(t, n.ns); strings.Contains(got, proxy.TableName) {
			t.Errorf("tables after stop = %q, want none of the proxy's", got)
		}
	})
}

// BenchmarkSync1000ServicesX10Endpoints is a sync of 1 000 NodePort
// Services of 10 ready endpoints each, with nft applying it in a
// namespace of its own: "whole" writes every table (the first sync),
// "one-endpoint" is the update after one endpoint of one Service went not
// ready (and back, every other op). Beside the wall time (which a loaded
// machine stretches) it reports the CPU time of the decision and of nft.
func BenchmarkSync1000ServicesX10Endpoints(b *testing.B) {
	needNetns(b)
	ns := newNetns(b, "bench")
	svcs, eps := proxy.Fixture(1000, 10)
	cfg := proxy.Config{NodeName: "n", NodePortIPs: []netip.Addr{netip.MustParseAddr("192.168.0.2")}, LocalCIDRs: []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16")}}
	nft := []string{"ip", "netns", "exec", ns, "nft"}
	apply := func(script string) {
		if err := proxy.Apply(context.Background(), nft, script); err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B, decide, cpu time.Duration) {
		b.ReportMetric(float64(decide.Microseconds())/float64(b.N)/1000, "ms-decide/op")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "ms-nft-cpu/op")
	}
	b.Run("whole", func(b *testing.B) {
		var decide time.Duration
		before := childrenCPU(b)
		for b.Loop() {
			t0 := time.Now()
			script := proxy.Render(proxy.Rules(svcs, eps, cfg))
			decide += time.Since(t0)
			apply(script)
		}
		report(b, decide, childrenCPU(b)-before)
	})
	b.Run("one-endpoint", func(b *testing.B) {
		prev := proxy.Rules(svcs, eps, cfg)
		apply(proxy.Render(prev))
		var stale proxy.Stale
		changed := eps[500].DeepCopy()
		changed.Endpoints[3].Conditions.Ready = ptr.To(false)
		var decide time.Duration
		before := childrenCPU(b)
		i := 0
		for b.Loop() {
			i++
			cur := slices.Clone(eps)
			if i%2 == 1 {
				cur[500] = changed
			}
			t0 := time.Now()
			next := proxy.Rules(svcs, cur, cfg)
			script, emptied, ok := proxy.RenderUpdate(prev, next, stale)
			decide += time.Since(t0)
			if !ok || script == "" {
				b.Fatalf("no update: ok %v, script %q", ok, script)
			}
			apply(script)
			prev, stale = next, emptied
		}
		report(b, decide, childrenCPU(b)-before)
	})
}

// childrenCPU is the user and system time of the process's waited-for
// children.
func childrenCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
