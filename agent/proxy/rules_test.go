package proxy

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const node = "n1"

var cfg = Config{
	NodeName:    node,
	NodePortIPs: []netip.Addr{netip.MustParseAddr("192.168.1.2"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("fd00::2")},
	LocalCIDRs:  []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16")},
}

// service is a Service "web" in "ns" with cluster IP ip and port 80
// (named "http", node port 30080 when typ is NodePort).
func service(ip string, typ v1.ServiceType, edit ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.ServiceSpec{
		Type: typ, ClusterIP: ip, ClusterIPs: []string{ip},
		Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}},
	}}
	if typ == v1.ServiceTypeNodePort {
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	for _, e := range edit {
		e(s)
	}
	return s
}

type ep struct {
	ip                          string
	ready, serving, terminating bool
	node                        string
}

// slice is an EndpointSlice of "web" with port "http" 8080 and eps.
func slice(eps ...ep) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-abc", Labels: map[string]string{discovery.LabelServiceName: "web"}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	if len(eps) > 0 && strings.Contains(eps[0].ip, ":") {
		s.AddressType = discovery.AddressTypeIPv6
	}
	for _, e := range eps {
		d := discovery.Endpoint{Addresses: []string{e.ip}, Conditions: discovery.EndpointConditions{
			Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)}}
		if e.node != "" {
			d.NodeName = ptr.To(e.node)
		}
		s.Endpoints = append(s.Endpoints, d)
	}
	return s
}

func ready(ip string) ep       { return ep{ip: ip, ready: true, serving: true} }
func readyOn(ip, n string) ep  { return ep{ip: ip, ready: true, serving: true, node: n} }
func notReady(ip string) ep    { return ep{ip: ip} }
func terminating(ip string) ep { return ep{ip: ip, serving: true, terminating: true} }

func table(t *testing.T, rs Ruleset, family string) Table {
	t.Helper()
	for _, tb := range rs.Tables {
		if tb.Family == family {
			return tb
		}
	}
	t.Fatalf("no %s table in %+v", family, rs)
	return Table{}
}

// rulesOf is every rule of the chains whose name starts with prefix.
func rulesOf(tb Table, prefix string) []string {
	var out []string
	for _, c := range tb.Chains {
		if strings.HasPrefix(c.Name, prefix) {
			out = append(out, c.Rules...)
		}
	}
	return out
}

func hasElement(elems []Element, key, valuePrefix string) bool {
	return slices.ContainsFunc(elems, func(e Element) bool { return e.Key == key && strings.HasPrefix(e.Value, valuePrefix) })
}

func TestRules(t *testing.T) {
	local := v1.ServiceInternalTrafficPolicyLocal
	tests := []struct {
		name     string
		services []*v1.Service
		slices   []*discovery.EndpointSlice
		check    func(t *testing.T, ip Table)
	}{{
		name:     "a cluster IP goes to a random ready endpoint",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP)},
		slices:   []*discovery.EndpointSlice{slice(ready("10.42.0.3"), ready("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if !hasElement(ip.ServiceIPs, "10.43.0.5 . tcp . 80", "goto service-") {
				t.Errorf("service-ips = %v, want the cluster IP's port to its service chain", ip.ServiceIPs)
			}
			want := []string{"meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.42.0.2 . 8080, 1 : 10.42.0.3 . 8080 }"}
			if got := rulesOf(ip, "service-"); !slices.Equal(got, want) {
				t.Errorf("service chain = %q, want %q", got, want)
			}
			if !slices.Equal(ip.ClusterIPs, []string{"10.43.0.5"}) {
				t.Errorf("cluster-ips = %v", ip.ClusterIPs)
			}
		},
	}, {
		name:     "one endpoint is a plain DNAT",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP)},
		slices:   []*discovery.EndpointSlice{slice(ready("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if got := rulesOf(ip, "service-"); !slices.Equal(got, []string{"meta l4proto tcp dnat to 10.42.0.2:8080"}) {
				t.Errorf("service chain = %q", got)
			}
		},
	}, {
		name:     "a Service without ready endpoints rejects",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeNodePort)},
		slices:   []*discovery.EndpointSlice{slice(notReady("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if len(ip.ServiceIPs) != 0 || len(ip.NodePorts) != 0 || len(ip.Chains) != 0 {
				t.Errorf("service-ips %v, nodeports %v, chains %v: want none", ip.ServiceIPs, ip.NodePorts, ip.Chains)
			}
			if !hasElement(ip.NoEndpointServices, "10.43.0.5 . tcp . 80", "goto reject-chain") || !hasElement(ip.NoEndpointNodePorts, "tcp . 30080", "goto reject-chain") {
				t.Errorf("no-endpoint-services %v, no-endpoint-nodeports %v: want both rejected", ip.NoEndpointServices, ip.NoEndpointNodePorts)
			}
		},
	}, {
		name:     "a Service without EndpointSlices rejects",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP)},
		check: func(t *testing.T, ip Table) {
			if !hasElement(ip.NoEndpointServices, "10.43.0.5 . tcp . 80", "goto reject-chain") {
				t.Errorf("no-endpoint-services = %v", ip.NoEndpointServices)
			}
		},
	}, {
		name:     "not-ready endpoints get no traffic",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP)},
		slices:   []*discovery.EndpointSlice{slice(ready("10.42.0.2"), notReady("10.42.0.3"), terminating("10.42.0.4"))},
		check: func(t *testing.T, ip Table) {
			if got := rulesOf(ip, "service-"); !slices.Equal(got, []string{"meta l4proto tcp dnat to 10.42.0.2:8080"}) {
				t.Errorf("service chain = %q, want the ready endpoint only", got)
			}
		},
	}, {
		name:     "serving terminating endpoints are used when none is ready",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP)},
		slices:   []*discovery.EndpointSlice{slice(notReady("10.42.0.3"), terminating("10.42.0.4"), ep{ip: "10.42.0.5", terminating: true})},
		check: func(t *testing.T, ip Table) {
			if got := rulesOf(ip, "service-"); !slices.Equal(got, []string{"meta l4proto tcp dnat to 10.42.0.4:8080"}) {
				t.Errorf("service chain = %q, want the serving terminating endpoint", got)
			}
		},
	}, {
		name:     "a node port on the node's primary addresses masquerades and goes to any endpoint",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeNodePort)},
		slices:   []*discovery.EndpointSlice{slice(ready("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if !slices.Equal(ip.NodePortIPs, []string{"192.168.1.2"}) {
				t.Errorf("nodeport-ips = %v, want the IPv4 address without loopback", ip.NodePortIPs)
			}
			if !hasElement(ip.NodePorts, "tcp . 30080", "goto external-") {
				t.Errorf("service-nodeports = %v", ip.NodePorts)
			}
			ext := rulesOf(ip, "external-")
			if len(ext) != 2 || ext[0] != masqueradeRule || !strings.HasPrefix(ext[1], "goto service-") {
				t.Errorf("external chain = %q, want masquerade then the cluster chain", ext)
			}
		},
	}, {
		name: "externalTrafficPolicy Local without local endpoints drops node port traffic but serves the cluster IP",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeNodePort, func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		})},
		slices: []*discovery.EndpointSlice{slice(readyOn("10.42.1.2", "n2"))},
		check: func(t *testing.T, ip Table) {
			if !hasElement(ip.NoEndpointNodePorts, "tcp . 30080", "drop") {
				t.Errorf("no-endpoint-nodeports = %v, want the node port dropped", ip.NoEndpointNodePorts)
			}
			if !hasElement(ip.ServiceIPs, "10.43.0.5 . tcp . 80", "goto service-") {
				t.Errorf("service-ips = %v, want the cluster IP served", ip.ServiceIPs)
			}
			ext := rulesOf(ip, "external-")
			if len(ext) != 3 || !strings.HasPrefix(ext[0], "ip saddr { 10.42.0.0/16 } goto service-") || !strings.HasPrefix(ext[2], "fib saddr type local goto service-") {
				t.Errorf("external chain = %q, want pods' and the node's own traffic short-circuited and nothing else", ext)
			}
		},
	}, {
		name: "externalTrafficPolicy Local sends node port traffic to local endpoints only",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeNodePort, func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		})},
		slices: []*discovery.EndpointSlice{slice(readyOn("10.42.0.2", node), readyOn("10.42.1.2", "n2"))},
		check: func(t *testing.T, ip Table) {
			if got := rulesOf(ip, "local-"); !slices.Equal(got, []string{"meta l4proto tcp dnat to 10.42.0.2:8080"}) {
				t.Errorf("local chain = %q", got)
			}
			if ext := rulesOf(ip, "external-"); !strings.HasPrefix(ext[len(ext)-1], "goto local-") {
				t.Errorf("external chain = %q, want it to end in the local chain", ext)
			}
		},
	}, {
		name:     "internalTrafficPolicy Local without local endpoints drops cluster IP traffic",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP, func(s *v1.Service) { s.Spec.InternalTrafficPolicy = &local })},
		slices:   []*discovery.EndpointSlice{slice(readyOn("10.42.1.2", "n2"))},
		check: func(t *testing.T, ip Table) {
			if !hasElement(ip.NoEndpointServices, "10.43.0.5 . tcp . 80", "drop") || len(ip.ServiceIPs) != 0 {
				t.Errorf("no-endpoint-services %v, service-ips %v: want the cluster IP dropped", ip.NoEndpointServices, ip.ServiceIPs)
			}
		},
	}, {
		name: "sessionAffinity ClientIP remembers each client's endpoint for the timeout",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP, func(s *v1.Service) {
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To(int32(60))}}
		})},
		slices: []*discovery.EndpointSlice{slice(ready("10.42.0.2"), ready("10.42.0.3"))},
		check: func(t *testing.T, ip Table) {
			if len(ip.AffinitySets) != 2 || ip.AffinitySets[0].Timeout != 60 {
				t.Fatalf("affinity sets = %v, want one per endpoint with timeout 60", ip.AffinitySets)
			}
			svc := rulesOf(ip, "service-")
			if len(svc) != 3 || !strings.Contains(svc[0], "ip saddr @affinity-") || !strings.HasPrefix(svc[2], "numgen random mod 2 vmap") {
				t.Errorf("service chain = %q, want the affinity checks then a random endpoint chain", svc)
			}
			epRules := rulesOf(ip, "endpoint-")
			if len(epRules) != 4 || !strings.HasPrefix(epRules[0], "update @affinity-") || epRules[1] != "meta l4proto tcp dnat to 10.42.0.2:8080" {
				t.Errorf("endpoint chains = %q", epRules)
			}
		},
	}, {
		name:     "a pod reaching itself through its Service is masqueraded (hairpin)",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP)},
		slices:   []*discovery.EndpointSlice{slice(readyOn("10.42.0.2", node), readyOn("10.42.1.2", "n2"))},
		check: func(t *testing.T, ip Table) {
			if !slices.Equal(ip.Hairpin, []string{"10.42.0.2 . 10.42.0.2 . tcp . 8080"}) {
				t.Errorf("hairpin = %v, want the local endpoint only", ip.Hairpin)
			}
		},
	}, {
		name: "headless and ExternalName Services get nothing",
		services: []*v1.Service{service("None", v1.ServiceTypeClusterIP), service("", v1.ServiceTypeExternalName, func(s *v1.Service) {
			s.Name, s.Spec.ExternalName = "ext", "example.com"
		})},
		slices: []*discovery.EndpointSlice{slice(ready("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if len(ip.ClusterIPs)+len(ip.ServiceIPs)+len(ip.NoEndpointServices)+len(ip.Chains) != 0 {
				t.Errorf("table = %+v, want empty", ip)
			}
		},
	}, {
		name:     "a slice port of another name or protocol serves nothing",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP, func(s *v1.Service) { s.Spec.Ports[0].Protocol = v1.ProtocolUDP })},
		slices:   []*discovery.EndpointSlice{slice(ready("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if !hasElement(ip.NoEndpointServices, "10.43.0.5 . udp . 80", "goto reject-chain") {
				t.Errorf("no-endpoint-services = %v, want the UDP port rejected", ip.NoEndpointServices)
			}
		},
	}, {
		name: "external IPs are served like node ports",
		services: []*v1.Service{service("10.43.0.5", v1.ServiceTypeClusterIP, func(s *v1.Service) {
			s.Spec.ExternalIPs = []string{"203.0.113.7"}
		})},
		slices: []*discovery.EndpointSlice{slice(ready("10.42.0.2"))},
		check: func(t *testing.T, ip Table) {
			if !hasElement(ip.ServiceIPs, "203.0.113.7 . tcp . 80", "goto external-") {
				t.Errorf("service-ips = %v", ip.ServiceIPs)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := Rules(tc.services, tc.slices, cfg)
			tc.check(t, table(t, rs, "ip"))
			if ip6 := table(t, rs, "ip6"); len(ip6.ClusterIPs) != 0 {
				t.Errorf("ip6 table has cluster IPs %v for IPv4 Services", ip6.ClusterIPs)
			}
		})
	}
}

func TestIPv6ServicesGoToTheIP6Table(t *testing.T) {
	rs := Rules([]*v1.Service{service("fd00:43::5", v1.ServiceTypeNodePort)}, []*discovery.EndpointSlice{slice(ready("fd00:42::2"), ready("fd00:42::3"))}, cfg)
	ip6 := table(t, rs, "ip6")
	if !hasElement(ip6.ServiceIPs, "fd00:43::5 . tcp . 80", "goto service-") || !slices.Equal(ip6.NodePortIPs, []string{"fd00::2"}) {
		t.Errorf("ip6 table = %+v", ip6)
	}
	if got := rulesOf(ip6, "service-"); len(got) != 1 || !strings.Contains(got[0], "dnat ip6 addr . port to numgen random mod 2 map { 0 : fd00:42::2 . 8080") {
		t.Errorf("service chain = %q", got)
	}
	if ip := table(t, rs, "ip"); len(ip.ServiceIPs) != 0 {
		t.Errorf("ip table has %v", ip.ServiceIPs)
	}
}

// TestRenderedRulesLoad gives nft a ruleset with every kind of rule, in a
// network namespace of its own (unshare), so that the kernel and nft
// check the syntax and the references (nft -c changes nothing).
func TestRenderedRulesLoad(t *testing.T) {
	needNft(t)
	affinity := func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }
	etpLocal := func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }
	named := func(name, ip string, port int32) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Name, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.Ports[0].NodePort = name, ip, []string{ip}, port
		}
	}
	svcs := []*v1.Service{
		service("10.43.0.5", v1.ServiceTypeNodePort),
		service("10.43.0.6", v1.ServiceTypeNodePort, named("aff", "10.43.0.6", 30081), affinity, etpLocal),
		service("10.43.0.7", v1.ServiceTypeNodePort, named("none", "10.43.0.7", 30082)),
		service("fd00:43::5", v1.ServiceTypeNodePort, named("six", "fd00:43::5", 30083), affinity),
	}
	eps := []*discovery.EndpointSlice{slice(readyOn("10.42.0.2", node), ready("10.42.0.3")), slice(readyOn("10.42.0.2", node), ready("10.42.0.3")), slice(ready("fd00:42::2"), ready("fd00:42::3"))}
	eps[1].Name, eps[1].Labels[discovery.LabelServiceName] = "aff-1", "aff"
	eps[2].Name, eps[2].Labels[discovery.LabelServiceName] = "six-1", "six"
	script := Render(Rules(svcs, eps, cfg))
	// Applied twice: the second replaces the tables the first made.
	cmd := exec.Command("unshare", "--net", "sh", "-c", `nft -f - <"$0" && nft -f - <"$0" && nft list tables`, writeTemp(t, script))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nft: %v: %s\nscript:\n%s", err, out, script)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"table", "ip", TableName, "table", "ip6", TableName}) {
		t.Errorf("tables = %q", out)
	}
}

func writeTemp(t *testing.T, s string) string {
	t.Helper()
	f := t.TempDir() + "/rules.nft"
	if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestUpdatesEndWhereAWholeRenderEnds applies a sequence of rulesets with
// RenderUpdate, each after the previous, and checks that the kernel then
// holds what a whole Render of the same ruleset gives (chains left empty
// for the next update aside), in namespaces of their own.
func TestUpdatesEndWhereAWholeRenderEnds(t *testing.T) {
	needNft(t)
	affinity := func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }
	web := service("10.43.0.5", v1.ServiceTypeNodePort)
	aff := service("10.43.0.6", v1.ServiceTypeClusterIP, affinity, func(s *v1.Service) { s.Name = "aff" })
	affSlice := func(eps ...ep) *discovery.EndpointSlice {
		s := slice(eps...)
		s.Name, s.Labels[discovery.LabelServiceName] = "aff-1", "aff"
		return s
	}
	steps := []struct {
		name     string
		services []*v1.Service
		slices   []*discovery.EndpointSlice
	}{
		{"one Service", []*v1.Service{web}, []*discovery.EndpointSlice{slice(ready("10.42.0.2"), ready("10.42.0.3"))}},
		{"an endpoint goes not ready", []*v1.Service{web}, []*discovery.EndpointSlice{slice(ready("10.42.0.2"), notReady("10.42.0.3"))}},
		{"a Service with affinity comes", []*v1.Service{web, aff}, []*discovery.EndpointSlice{slice(ready("10.42.0.2")), affSlice(ready("10.42.0.7"), ready("10.42.0.8"))}},
		{"no endpoint is ready", []*v1.Service{web, aff}, []*discovery.EndpointSlice{slice(notReady("10.42.0.2")), affSlice(ready("10.42.0.7"))}},
		{"a Service goes", []*v1.Service{aff}, []*discovery.EndpointSlice{affSlice(ready("10.42.0.8"), readyOn("10.42.0.9", node))}},
		{"nothing", nil, nil},
	}
	// The updates go to one namespace; each whole render to a new one.
	ns := fmt.Sprintf("kite-proxy-test-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
	prev := Rules(nil, nil, cfg)
	canonicalRuleset(t, ns, Render(prev))
	var stale Stale
	for _, s := range steps {
		next := Rules(s.services, s.slices, cfg)
		script, emptied, ok := RenderUpdate(prev, next, stale)
		if !ok {
			t.Fatalf("%s: no update from the previous ruleset", s.name)
		}
		got := canonicalRuleset(t, ns, script)
		want := canonicalRuleset(t, "", Render(next))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: after the updates the kernel holds\n%s\nwant, as a whole render gives,\n%s\nupdate script:\n%s", s.name, strings.Join(got, "\n"), strings.Join(want, "\n"), script)
		}
		prev, stale = next, emptied
	}
	if script, _, _ := RenderUpdate(prev, prev, stale); strings.Contains(script, "add ") || strings.Contains(script, "flush ") {
		t.Errorf("an update to the same ruleset writes %q", script)
	}
}

func needNft(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot make a network namespace to check the rules in")
	}
	for _, tool := range []string{"nft", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: cannot check the rules", tool)
		}
	}
}

// canonicalRuleset applies script in network namespace ns (a new one
// when ns is empty) and returns what the kernel then holds, as sorted
// JSON objects without handles, element lists sorted, and chains without
// rules left out.
func canonicalRuleset(t *testing.T, ns, script string) []string {
	t.Helper()
	sh := []string{"unshare", "--net"}
	if ns != "" {
		sh = []string{"ip", "netns", "exec", ns}
	}
	sh = append(sh, "sh", "-c", `nft -f "$0" && nft -j list ruleset`, writeTemp(t, script))
	out, err := exec.Command(sh[0], sh[1:]...).Output()
	if err != nil {
		t.Fatalf("nft: %v", err)
	}
	var listing struct {
		Nftables []map[string]map[string]any `json:"nftables"`
	}
	if err := json.Unmarshal(out, &listing); err != nil {
		t.Fatalf("nft -j: %v: %s", err, out)
	}
	withRules := map[string]bool{}
	for _, o := range listing.Nftables {
		if r, ok := o["rule"]; ok {
			withRules[fmt.Sprint(r["family"], r["chain"])] = true
		}
	}
	var objs []string
	for _, o := range listing.Nftables {
		for kind, v := range o {
			if kind == "metainfo" || (kind == "chain" && !withRules[fmt.Sprint(v["family"], v["name"])]) {
				continue
			}
			delete(v, "handle")
			if elems, ok := v["elem"].([]any); ok {
				slices.SortFunc(elems, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			}
			b, _ := json.Marshal(map[string]any{kind: v})
			objs = append(objs, string(b))
		}
	}
	slices.Sort(objs)
	return objs
}
