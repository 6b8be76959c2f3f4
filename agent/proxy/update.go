package proxy

import (
	"fmt"
	"slices"
	"strings"
)

// Stale are the chains of each family that an update emptied because no
// element points at them any more. They are deleted by the next update,
// not by the one that emptied them: before Linux 6.2 the kernel sees a
// chain as unreferenced only a moment after the map element that named
// it is gone (upstream's staleChains).
type Stale map[string][]string

// RenderUpdate writes the script that turns the tables holding prev (as
// Render or RenderUpdate left them, with the chains of stale still there)
// into next, touching only what differs: elements deleted and added,
// chains whose rules changed flushed and written again, new chains added,
// chains no longer used emptied now and deleted next time, affinity sets of
// endpoints that are gone deleted. The sets of endpoints that stay keep
// their clients, so sessionAffinity holds across updates. It returns the
// chains it emptied, for the next update, and ok false when only a whole
// Render can go from prev to next (other families, other pods' ranges, an
// affinity timeout changed). An empty script means no change.
func RenderUpdate(prev, next Ruleset, stale Stale) (script string, emptied Stale, ok bool) {
	if len(prev.Tables) != len(next.Tables) {
		return "", nil, false
	}
	var b strings.Builder
	emptied = Stale{}
	for i, nt := range next.Tables {
		pt := prev.Tables[i]
		if pt.Family != nt.Family || !slices.Equal(pt.LocalCIDRs, nt.LocalCIDRs) {
			return "", nil, false
		}
		tbl := nt.Family + " " + TableName
		prevSets, nextSets := affinityByName(pt.AffinitySets), affinityByName(nt.AffinitySets)
		for name, s := range nextSets {
			if p, had := prevSets[name]; had && p.Timeout != s.Timeout {
				return "", nil, false
			}
		}
		// Elements that go or change first: they may name chains that go.
		sets := []struct {
			name       string
			prev, next []string
		}{{clusterIPsSet, pt.ClusterIPs, nt.ClusterIPs}, {nodePortIPsSet, pt.NodePortIPs, nt.NodePortIPs}, {hairpinSet, pt.Hairpin, nt.Hairpin}}
		for _, s := range sets {
			deleteElements(&b, tbl, s.name, missing(s.prev, s.next))
		}
		vmaps := []struct {
			name       string
			prev, next []Element
		}{
			{serviceIPsMap, pt.ServiceIPs, nt.ServiceIPs},
			{serviceNodePortsMap, pt.NodePorts, nt.NodePorts},
			{noEndpointServicesMap, pt.NoEndpointServices, nt.NoEndpointServices},
			{noEndpointNodePortsMap, pt.NoEndpointNodePorts, nt.NoEndpointNodePorts},
		}
		for _, m := range vmaps {
			deleteElements(&b, tbl, m.name, keys(missingElements(m.prev, m.next)))
		}
		prevChains, nextChains := chainsByName(pt.Chains), chainsByName(nt.Chains)
		for _, name := range stale[nt.Family] {
			if _, back := nextChains[name]; !back {
				fmt.Fprintf(&b, "delete chain %s %s\n", tbl, name)
			}
		}
		var write []Chain
		for _, c := range nt.Chains {
			p, had := prevChains[c.Name]
			switch {
			case !had:
				fmt.Fprintf(&b, "add chain %s %s\n", tbl, c.Name)
				write = append(write, c)
			case !slices.Equal(p.Rules, c.Rules):
				fmt.Fprintf(&b, "flush chain %s %s\n", tbl, c.Name)
				write = append(write, c)
			}
		}
		for _, c := range pt.Chains {
			if _, kept := nextChains[c.Name]; !kept {
				fmt.Fprintf(&b, "flush chain %s %s\n", tbl, c.Name)
				emptied[nt.Family] = append(emptied[nt.Family], c.Name)
			}
		}
		// Sets of endpoints that went, once the rules naming them are
		// flushed; then the new ones.
		for _, s := range pt.AffinitySets {
			if _, kept := nextSets[s.Name]; !kept {
				fmt.Fprintf(&b, "delete set %s %s\n", tbl, s.Name)
			}
		}
		for _, s := range nt.AffinitySets {
			if _, had := prevSets[s.Name]; !had {
				fmt.Fprintf(&b, "add set %s %s { type %s; flags dynamic,timeout; timeout %ds; }\n", tbl, s.Name, addrType(nt.Family), s.Timeout)
			}
		}
		for _, s := range sets {
			elements(&b, tbl, s.name, missing(s.next, s.prev))
		}
		for _, c := range write {
			for _, r := range c.Rules {
				fmt.Fprintf(&b, "add rule %s %s %s\n", tbl, c.Name, r)
			}
		}
		for _, m := range vmaps {
			mapElements(&b, tbl, m.name, missingElements(m.next, m.prev))
		}
	}
	return b.String(), emptied, true
}

// missing is what of a is not in b.
func missing(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

// missingElements is what of a is not in b with the same value.
func missingElements(a, b []Element) []Element {
	in := map[string]string{}
	for _, e := range b {
		in[e.Key] = e.Value
	}
	var out []Element
	for _, e := range a {
		if v, ok := in[e.Key]; !ok || v != e.Value {
			out = append(out, e)
		}
	}
	return out
}

func keys(elems []Element) []string {
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = e.Key
	}
	return out
}

func deleteElements(b *strings.Builder, tbl, set string, keys []string) {
	if len(keys) > 0 {
		fmt.Fprintf(b, "delete element %s %s { %s }\n", tbl, set, strings.Join(keys, ", "))
	}
}

func chainsByName(cs []Chain) map[string]Chain {
	m := make(map[string]Chain, len(cs))
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

func affinityByName(ss []AffinitySet) map[string]AffinitySet {
	m := make(map[string]AffinitySet, len(ss))
	for _, s := range ss {
		m[s.Name] = s
	}
	return m
}
