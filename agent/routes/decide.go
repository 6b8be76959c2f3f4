// Package routes is the agent's host-gateway backend of the pod network:
// each node routes every other node's podCIDR through that node's
// InternalIP, as flannel's host-gw backend and kube-router do, and
// masquerades what its pods send outside the pod network (and only that:
// traffic between pods of any nodes keeps the pods' addresses). It
// needs the nodes on one link (layer 2), or a network that routes the
// podCIDRs itself; an overlay (VXLAN) would be another Backend. See
// docs/pod-network.md.
//
// The decision (Decide, RenderMasquerade, RouteChanges) is pure; the
// runner (HostGateway) watches the Nodes and applies it with ip and nft.
package routes

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Protocol is the routing protocol number ("proto" of ip-route) of the
// routes this package adds: after a restart it finds its routes by it
// and removes those no node needs any more, leaving every other route
// alone. 75 is unassigned in iproute2's rt_protos.
const Protocol = 75

// TableName is the nftables table (ip and ip6) of the pods' masquerade.
const TableName = "kite-pods"

// Route sends Dst (another node's podCIDR) through Via (that node's
// InternalIP).
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

func (r Route) String() string { return r.Dst.String() + " via " + r.Via.String() }

// Plan is what the node's network needs for the nodes it knows.
type Plan struct {
	// Routes to the other nodes' podCIDRs, sorted by Dst.
	Routes []Route
	// Local are this node's podCIDRs: its pods' source addresses.
	Local []netip.Prefix
	// PodCIDRs are every node's podCIDRs (Local included), sorted:
	// traffic from Local to them is not masqueraded.
	PodCIDRs []netip.Prefix
	// Problems say which nodes' pods cannot be routed to, and why.
	Problems []string
}

// Decide is the plan of node self among nodes. Another node's podCIDR is
// routed through its first InternalIP of the same family; a node without
// one, one whose address is loopback (a node that shares its host with
// others, as in tests, cannot be told apart by it), and a podCIDR that
// overlaps one already routed or this node's own are left out with a
// problem. Nodes are taken in name order so that the outcome does not
// depend on the order they were listed in.
func Decide(self string, nodes []*v1.Node) Plan {
	nodes = slices.Clone(nodes)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var p Plan
	taken := func(c netip.Prefix) bool {
		for _, l := range p.Local {
			if l.Overlaps(c) {
				return true
			}
		}
		for _, r := range p.Routes {
			if r.Dst.Overlaps(c) {
				return true
			}
		}
		return false
	}
	for _, n := range nodes {
		if n.Name == self {
			p.Local, _ = parseCIDRs(n)
		}
	}
	for _, n := range nodes {
		cidrs, bad := parseCIDRs(n)
		for _, s := range bad {
			p.Problems = append(p.Problems, fmt.Sprintf("node %s: podCIDR %q is not a CIDR", n.Name, s))
		}
		p.PodCIDRs = append(p.PodCIDRs, cidrs...)
		if n.Name == self {
			continue
		}
		for _, c := range cidrs {
			via, ok := internalIP(n, c.Addr().Is4())
			switch {
			case !ok:
				p.Problems = append(p.Problems, fmt.Sprintf("node %s: no InternalIP of the family of its podCIDR %s", n.Name, c))
			case via.IsLoopback() || via.IsUnspecified():
				p.Problems = append(p.Problems, fmt.Sprintf("node %s: its InternalIP %s cannot be a gateway to its podCIDR %s", n.Name, via, c))
			case taken(c):
				p.Problems = append(p.Problems, fmt.Sprintf("node %s: its podCIDR %s overlaps another node's", n.Name, c))
			default:
				p.Routes = append(p.Routes, Route{Dst: c, Via: via})
			}
		}
	}
	sort.Slice(p.Routes, func(i, j int) bool { return p.Routes[i].Dst.String() < p.Routes[j].Dst.String() })
	sort.Slice(p.PodCIDRs, func(i, j int) bool { return p.PodCIDRs[i].String() < p.PodCIDRs[j].String() })
	p.PodCIDRs = slices.Compact(p.PodCIDRs)
	return p
}

// parseCIDRs are the node's podCIDRs (spec.podCIDR alone on a node
// written before there were several), masked, and those that do not
// parse.
func parseCIDRs(n *v1.Node) (cidrs []netip.Prefix, bad []string) {
	raw := n.Spec.PodCIDRs
	if len(raw) == 0 && n.Spec.PodCIDR != "" {
		raw = []string{n.Spec.PodCIDR}
	}
	for _, s := range raw {
		c, err := netip.ParsePrefix(s)
		if err != nil {
			bad = append(bad, s)
			continue
		}
		cidrs = append(cidrs, c.Masked())
	}
	return cidrs, bad
}

// internalIP is the node's first InternalIP of the family.
func internalIP(n *v1.Node, v4 bool) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err == nil && ip.Unmap().Is4() == v4 {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// RouteChanges are the ip-route commands (arguments of "ip") that turn
// the routes of Protocol the node has (current) into want: a route
// added or whose gateway changed is replaced, one no longer wanted is
// deleted. Deletions come first, so that a podCIDR that moved to another
// gateway never has two.
func RouteChanges(current, want []Route) [][]string {
	have := map[netip.Prefix]netip.Addr{}
	for _, r := range current {
		have[r.Dst] = r.Via
	}
	wanted := map[netip.Prefix]bool{}
	for _, r := range want {
		wanted[r.Dst] = true
	}
	proto := fmt.Sprint(Protocol)
	var cmds [][]string
	for _, r := range current {
		if !wanted[r.Dst] {
			cmds = append(cmds, []string{family(r.Dst), "route", "del", r.Dst.String(), "proto", proto})
		}
	}
	for _, r := range want {
		if via, ok := have[r.Dst]; !ok || via != r.Via {
			cmds = append(cmds, []string{family(r.Dst), "route", "replace", r.Dst.String(), "via", r.Via.String(), "proto", proto})
		}
	}
	return cmds
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "-4"
	}
	return "-6"
}

// RenderMasquerade is the nft script that makes the masquerade tables
// what plan needs, whole, in one transaction: for each family with a
// local podCIDR, traffic from the node's pods is masqueraded (to the
// outgoing interface's address) unless it goes to a pod of any node or to
// a multicast group; a family without one has no table. Traffic to a
// Service is DNATed before this hook, so what is decided is its endpoint.
func RenderMasquerade(plan Plan) string {
	var b strings.Builder
	for _, fam := range []struct {
		name, addrType, match, multicast string
		v4                               bool
	}{
		{"ip", "ipv4_addr", "ip", "224.0.0.0/4", true},
		{"ip6", "ipv6_addr", "ip6", "ff00::/8", false},
	} {
		var local, pods []string
		for _, c := range plan.Local {
			if c.Addr().Is4() == fam.v4 {
				local = append(local, c.String())
			}
		}
		for _, c := range plan.PodCIDRs {
			if c.Addr().Is4() == fam.v4 {
				pods = append(pods, c.String())
			}
		}
		// Create it (if missing) and delete it: the script works on any
		// state, and what follows replaces the table atomically.
		fmt.Fprintf(&b, "add table %s %s\ndelete table %s %s\n", fam.name, TableName, fam.name, TableName)
		if len(local) == 0 {
			continue
		}
		fmt.Fprintf(&b, "table %s %s {\n", fam.name, TableName)
		fmt.Fprintf(&b, "\tset pod-cidrs {\n\t\ttype %s\n\t\tflags interval\n\t\tauto-merge\n\t\telements = { %s }\n\t}\n", fam.addrType, strings.Join(pods, ", "))
		fmt.Fprintf(&b, "\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
		fmt.Fprintf(&b, "\t\t%s saddr { %s } %s daddr != @pod-cidrs %s daddr != %s masquerade\n", fam.match, strings.Join(local, ", "), fam.match, fam.match, fam.multicast)
		b.WriteString("\t}\n}\n")
	}
	return b.String()
}

// DeleteScript deletes the masquerade tables (the agent's cleanup).
func DeleteScript() string {
	return fmt.Sprintf("add table ip %[1]s\ndelete table ip %[1]s\nadd table ip6 %[1]s\ndelete table ip6 %[1]s\n", TableName)
}
