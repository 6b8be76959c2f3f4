package proxy

import (
	"fmt"
	"strings"
)

// baseChain is a chain on a netfilter hook, at the priorities dstnat
// (-100), filter (0) and srcnat (100) written as numbers: nft 1.0 knows
// "dstnat" for prerouting only. Upstream's base chains, but
// for the load-balancer source ranges' (not done).
type baseChain struct {
	name, typ, hook, priority string
	// jumps are the rules: the top-level chains it jumps to.
	jumps []string
}

var baseChains = []baseChain{
	{"filter-input", "filter", "input", "0", []string{"ct state new jump " + nodePortEndpointsCheck, "ct state new jump " + serviceEndpointsCheckChain}},
	{"filter-forward", "filter", "forward", "0", []string{"ct state new jump " + serviceEndpointsCheckChain, "ct state new jump " + clusterIPsCheckChain}},
	{"filter-output", "filter", "output", "0", []string{"ct state new jump " + serviceEndpointsCheckChain, "ct state new jump " + clusterIPsCheckChain}},
	{"nat-prerouting", "nat", "prerouting", "-100", []string{"jump " + servicesChain}},
	{"nat-output", "nat", "output", "-100", []string{"jump " + servicesChain}},
	{"nat-postrouting", "nat", "postrouting", "100", []string{"jump " + masqueradingChain}},
}

// Render writes rs as one nft script. Each table is created (if missing)
// and deleted, then written again whole: nft -f applies the script as one
// transaction, so the kernel switches from the old rules to the new ones
// at once, and a failure leaves the old ones in place.
func Render(rs Ruleset) string {
	var b strings.Builder
	for _, t := range rs.Tables {
		t.render(&b)
	}
	return b.String()
}

// DeleteScript is the nft script that removes the proxy's tables (and
// succeeds when they do not exist).
func DeleteScript() string {
	var b strings.Builder
	for _, f := range Families {
		fmt.Fprintf(&b, "add table %s %s\ndelete table %s %s\n", f, TableName, f, TableName)
	}
	return b.String()
}

func (t *Table) render(b *strings.Builder) {
	f := t.Family
	tbl := f + " " + TableName
	addr := addrType(f)
	fmt.Fprintf(b, "add table %s\ndelete table %s\nadd table %s { comment \"service proxy of the kite agent\"; }\n", tbl, tbl, tbl)

	// Every chain first, so that rules and verdict maps may name any.
	for _, c := range baseChains {
		fmt.Fprintf(b, "add chain %s %s { type %s hook %s priority %s; policy accept; }\n", tbl, c.name, c.typ, c.hook, c.priority)
	}
	for _, name := range []string{servicesChain, serviceEndpointsCheckChain, nodePortEndpointsCheck, clusterIPsCheckChain, masqueradingChain, rejectChain} {
		fmt.Fprintf(b, "add chain %s %s\n", tbl, name)
	}
	for _, c := range t.Chains {
		fmt.Fprintf(b, "add chain %s %s\n", tbl, c.Name)
	}

	fmt.Fprintf(b, "add set %s %s { type %s; }\n", tbl, clusterIPsSet, addr)
	fmt.Fprintf(b, "add set %s %s { type %s; }\n", tbl, nodePortIPsSet, addr)
	fmt.Fprintf(b, "add set %s %s { type %s . %s . inet_proto . inet_service; }\n", tbl, hairpinSet, addr, addr)
	fmt.Fprintf(b, "add map %s %s { type %s . inet_proto . inet_service : verdict; }\n", tbl, serviceIPsMap, addr)
	fmt.Fprintf(b, "add map %s %s { type inet_proto . inet_service : verdict; }\n", tbl, serviceNodePortsMap)
	fmt.Fprintf(b, "add map %s %s { type %s . inet_proto . inet_service : verdict; }\n", tbl, noEndpointServicesMap, addr)
	fmt.Fprintf(b, "add map %s %s { type inet_proto . inet_service : verdict; }\n", tbl, noEndpointNodePortsMap)
	for _, s := range t.AffinitySets {
		fmt.Fprintf(b, "add set %s %s { type %s; flags dynamic,timeout; timeout %ds; }\n", tbl, s.Name, addr, s.Timeout)
	}
	elements(b, tbl, clusterIPsSet, t.ClusterIPs)
	elements(b, tbl, nodePortIPsSet, t.NodePortIPs)
	elements(b, tbl, hairpinSet, t.Hairpin)
	mapElements(b, tbl, serviceIPsMap, t.ServiceIPs)
	mapElements(b, tbl, serviceNodePortsMap, t.NodePorts)
	mapElements(b, tbl, noEndpointServicesMap, t.NoEndpointServices)
	mapElements(b, tbl, noEndpointNodePortsMap, t.NoEndpointNodePorts)

	rule := func(chain, r string) { fmt.Fprintf(b, "add rule %s %s %s\n", tbl, chain, r) }
	for _, c := range baseChains {
		for _, r := range c.jumps {
			rule(c.name, r)
		}
	}
	if len(t.LocalCIDRs) > 0 {
		// Traffic to a cluster IP from outside the pods' ranges (another
		// host routing through this node, the node itself) is masqueraded,
		// so that the endpoint's reply comes back here to be translated.
		rule(servicesChain, fmt.Sprintf("%s daddr @%s %s saddr != { %s } %s", f, clusterIPsSet, f, strings.Join(t.LocalCIDRs, ", "), masqueradeRule))
	}
	rule(servicesChain, fmt.Sprintf("%s daddr . meta l4proto . th dport vmap @%s", f, serviceIPsMap))
	rule(servicesChain, fmt.Sprintf("%s daddr @%s meta l4proto . th dport vmap @%s", f, nodePortIPsSet, serviceNodePortsMap))
	rule(serviceEndpointsCheckChain, fmt.Sprintf("%s daddr . meta l4proto . th dport vmap @%s", f, noEndpointServicesMap))
	rule(nodePortEndpointsCheck, fmt.Sprintf("%s daddr @%s meta l4proto . th dport vmap @%s", f, nodePortIPsSet, noEndpointNodePortsMap))
	// A cluster IP on a port no Service has is refused.
	rule(clusterIPsCheckChain, fmt.Sprintf("%s daddr @%s reject", f, clusterIPsSet))
	rule(rejectChain, "reject")
	rule(masqueradingChain, fmt.Sprintf("meta mark and %s != 0 meta mark set meta mark xor %s masquerade fully-random", masqueradeMark, masqueradeMark))
	rule(masqueradingChain, fmt.Sprintf("ct status dnat %s saddr . %s daddr . meta l4proto . th dport @%s masquerade fully-random", f, f, hairpinSet))
	for _, c := range t.Chains {
		for _, r := range c.Rules {
			rule(c.Name, r)
		}
	}
}

func elements(b *strings.Builder, tbl, set string, elems []string) {
	if len(elems) == 0 {
		return
	}
	fmt.Fprintf(b, "add element %s %s { %s }\n", tbl, set, strings.Join(elems, ", "))
}

func mapElements(b *strings.Builder, tbl, m string, elems []Element) {
	if len(elems) == 0 {
		return
	}
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = e.Key + " : " + e.Value
	}
	fmt.Fprintf(b, "add element %s %s { %s }\n", tbl, m, strings.Join(parts, ", "))
}

// addrType is the nft type of family's addresses.
func addrType(family string) string {
	if family == "ip6" {
		return "ipv6_addr"
	}
	return "ipv4_addr"
}
