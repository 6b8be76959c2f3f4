package routes

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, podCIDRs []string, ips ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{PodCIDRs: podCIDRs}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: name})
	return n
}

func routesOf(p Plan) []string {
	var out []string
	for _, r := range p.Routes {
		out = append(out, r.String())
	}
	return out
}

func prefixes(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func TestDecide(t *testing.T) {
	self := node("a", []string{"10.42.0.0/24"}, "192.168.0.1")
	for _, tc := range []struct {
		name      string
		nodes     []*v1.Node
		routes    []string
		local     []string
		podCIDRs  []string
		problems  []string
		noSelfYet bool
	}{
		{name: "alone: nothing to route, own pods masqueraded", nodes: []*v1.Node{self},
			local: []string{"10.42.0.0/24"}, podCIDRs: []string{"10.42.0.0/24"}},
		{name: "each other node's podCIDR through its InternalIP", nodes: []*v1.Node{
			node("c", []string{"10.42.2.0/24"}, "192.168.0.3"), self, node("b", []string{"10.42.1.0/24"}, "192.168.0.2")},
			routes: []string{"10.42.1.0/24 via 192.168.0.2", "10.42.2.0/24 via 192.168.0.3"}, local: []string{"10.42.0.0/24"},
			podCIDRs: []string{"10.42.0.0/24", "10.42.1.0/24", "10.42.2.0/24"}},
		{name: "dual-stack: each family through the address of its family", nodes: []*v1.Node{
			node("a", []string{"10.42.0.0/24", "fd00:42::/64"}, "192.168.0.1", "fd00::1"),
			node("b", []string{"10.42.1.0/24", "fd00:42:0:1::/64"}, "fd00::2", "192.168.0.2")},
			routes: []string{"10.42.1.0/24 via 192.168.0.2", "fd00:42:0:1::/64 via fd00::2"}, local: []string{"10.42.0.0/24", "fd00:42::/64"},
			podCIDRs: []string{"10.42.0.0/24", "10.42.1.0/24", "fd00:42:0:1::/64", "fd00:42::/64"}},
		{name: "a node without a podCIDR yet is left out", nodes: []*v1.Node{self, node("b", nil, "192.168.0.2")},
			local: []string{"10.42.0.0/24"}, podCIDRs: []string{"10.42.0.0/24"}},
		{name: "podCIDR written before podCIDRs", nodes: []*v1.Node{self, func() *v1.Node {
			n := node("b", nil, "192.168.0.2")
			n.Spec.PodCIDR = "10.42.1.0/24"
			return n
		}()}, routes: []string{"10.42.1.0/24 via 192.168.0.2"}, local: []string{"10.42.0.0/24"}, podCIDRs: []string{"10.42.0.0/24", "10.42.1.0/24"}},
		{name: "no InternalIP of the podCIDR's family", nodes: []*v1.Node{self, node("b", []string{"10.42.1.0/24"}, "fd00::2")},
			local: []string{"10.42.0.0/24"}, podCIDRs: []string{"10.42.0.0/24", "10.42.1.0/24"},
			problems: []string{"node b: no InternalIP of the family of its podCIDR 10.42.1.0/24"}},
		{name: "a loopback InternalIP is no gateway", nodes: []*v1.Node{self, node("b", []string{"10.42.1.0/24"}, "127.0.0.1")},
			local: []string{"10.42.0.0/24"}, podCIDRs: []string{"10.42.0.0/24", "10.42.1.0/24"},
			problems: []string{"node b: its InternalIP 127.0.0.1 cannot be a gateway to its podCIDR 10.42.1.0/24"}},
		{name: "a podCIDR overlapping this node's or one routed already is not routed", nodes: []*v1.Node{self,
			node("b", []string{"10.42.0.0/16"}, "192.168.0.2"), node("c", []string{"10.42.5.0/24"}, "192.168.0.3"), node("d", []string{"10.42.5.0/24"}, "192.168.0.4")},
			routes: []string{"10.42.5.0/24 via 192.168.0.3"}, local: []string{"10.42.0.0/24"},
			podCIDRs: []string{"10.42.0.0/16", "10.42.0.0/24", "10.42.5.0/24"},
			problems: []string{"node b: its podCIDR 10.42.0.0/16 overlaps another node's", "node d: its podCIDR 10.42.5.0/24 overlaps another node's"}},
		{name: "a bad podCIDR is a problem", nodes: []*v1.Node{self, node("b", []string{"ten"}, "192.168.0.2")},
			local: []string{"10.42.0.0/24"}, podCIDRs: []string{"10.42.0.0/24"}, problems: []string{`node b: podCIDR "ten" is not a CIDR`}},
		{name: "before its own node is known: routes, nothing local", nodes: []*v1.Node{node("b", []string{"10.42.1.0/24"}, "192.168.0.2")},
			routes: []string{"10.42.1.0/24 via 192.168.0.2"}, podCIDRs: []string{"10.42.1.0/24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide("a", tc.nodes)
			if got := routesOf(p); !slices.Equal(got, tc.routes) {
				t.Errorf("routes = %q, want %q", got, tc.routes)
			}
			if got := prefixes(p.Local); !slices.Equal(got, tc.local) {
				t.Errorf("local = %q, want %q", got, tc.local)
			}
			if got := prefixes(p.PodCIDRs); !slices.Equal(got, tc.podCIDRs) {
				t.Errorf("podCIDRs = %q, want %q", got, tc.podCIDRs)
			}
			if !slices.Equal(p.Problems, tc.problems) {
				t.Errorf("problems = %q, want %q", p.Problems, tc.problems)
			}
		})
	}
}

func route(dst, via string) Route {
	return Route{Dst: netip.MustParsePrefix(dst), Via: netip.MustParseAddr(via)}
}

func TestRouteChanges(t *testing.T) {
	p := fmt.Sprint(Protocol)
	for _, tc := range []struct {
		name          string
		current, want []Route
		cmds          []string
	}{
		{name: "nothing to do", current: []Route{route("10.42.1.0/24", "192.168.0.2")}, want: []Route{route("10.42.1.0/24", "192.168.0.2")}},
		{name: "a new node's podCIDR is added", want: []Route{route("10.42.1.0/24", "192.168.0.2"), route("fd00:42:1::/64", "fd00::2")},
			cmds: []string{"-4 route replace 10.42.1.0/24 via 192.168.0.2 proto " + p, "-6 route replace fd00:42:1::/64 via fd00::2 proto " + p}},
		{name: "a deleted node's (or one a previous run left) is removed", current: []Route{route("10.42.1.0/24", "192.168.0.2"), route("10.42.9.0/24", "192.168.0.9")},
			want: []Route{route("10.42.1.0/24", "192.168.0.2")}, cmds: []string{"-4 route del 10.42.9.0/24 proto " + p}},
		{name: "a node whose address changed: replaced", current: []Route{route("10.42.1.0/24", "192.168.0.2")}, want: []Route{route("10.42.1.0/24", "192.168.0.7")},
			cmds: []string{"-4 route replace 10.42.1.0/24 via 192.168.0.7 proto " + p}},
		{name: "deletions come first", current: []Route{route("10.42.1.0/24", "192.168.0.2")}, want: []Route{route("10.42.2.0/24", "192.168.0.2")},
			cmds: []string{"-4 route del 10.42.1.0/24 proto " + p, "-4 route replace 10.42.2.0/24 via 192.168.0.2 proto " + p}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range RouteChanges(tc.current, tc.want) {
				got = append(got, strings.Join(c, " "))
			}
			if !slices.Equal(got, tc.cmds) {
				t.Errorf("commands = %q, want %q", got, tc.cmds)
			}
		})
	}
}

func TestRenderMasquerade(t *testing.T) {
	plan := Decide("a", []*v1.Node{node("a", []string{"10.42.0.0/24"}, "192.168.0.1"), node("b", []string{"10.42.1.0/24"}, "192.168.0.2")})
	script := RenderMasquerade(plan)
	for _, want := range []string{
		"elements = { 10.42.0.0/24, 10.42.1.0/24 }",
		"ip saddr { 10.42.0.0/24 } ip daddr != @pod-cidrs ip daddr != 224.0.0.0/4 masquerade",
		"add table ip6 kite-pods\ndelete table ip6 kite-pods\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "table ip6 kite-pods {") {
		t.Errorf("an IPv6 table without an IPv6 podCIDR:\n%s", script)
	}
}
