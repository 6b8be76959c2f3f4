package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// TableName is the name of the proxy's tables, one per family (ip, ip6).
// Nothing else on the host is touched.
const TableName = "kite-proxy"

// Families are the nftables families the proxy programmes, in order.
var Families = []string{"ip", "ip6"}

// masqueradeMark is the bit that marks a packet for masquerading in
// postrouting, kube-proxy's default (--masquerade-bit 14).
const masqueradeMark = "0x00004000"

// Chains and maps with fixed names, upstream's names.
const (
	servicesChain              = "services"
	serviceIPsMap              = "service-ips"
	serviceNodePortsMap        = "service-nodeports"
	nodePortIPsSet             = "nodeport-ips"
	clusterIPsSet              = "cluster-ips"
	serviceEndpointsCheckChain = "service-endpoints-check"
	nodePortEndpointsCheck     = "nodeport-endpoints-check"
	noEndpointServicesMap      = "no-endpoint-services"
	noEndpointNodePortsMap     = "no-endpoint-nodeports"
	rejectChain                = "reject-chain"
	clusterIPsCheckChain       = "cluster-ips-check"
	masqueradingChain          = "masquerading"
	hairpinSet                 = "hairpin-connections"
)

// Config is what the decision needs to know of the node.
type Config struct {
	// NodeName tells which endpoints are local (an endpoint's nodeName),
	// for the traffic policies Local.
	NodeName string
	// NodePortIPs are the addresses that accept NodePort traffic:
	// kube-proxy's nftables default, "primary", is the Node's primary
	// InternalIP of each family. Loopback addresses are left out, as
	// upstream (localhost node ports are not served).
	NodePortIPs []netip.Addr
	// LocalCIDRs are the pods' ranges (kube-proxy's --cluster-cidr, or the
	// node's podCIDRs in its NodeCIDR mode): traffic to a cluster IP from
	// outside them is masqueraded, and a pod's traffic to a node port
	// with externalTrafficPolicy Local may use any endpoint. Empty: no
	// such rule, as kube-proxy without a local-traffic detector.
	LocalCIDRs []netip.Prefix
}

// Ruleset is the whole state of the proxy's tables, one per family.
type Ruleset struct {
	Tables []Table
}

// Table is the content of one family's table. Sets and maps hold their
// elements as nft expressions; Chains are the per-service chains (the
// fixed chains are written by Render).
type Table struct {
	// Family is "ip" or "ip6".
	Family string
	// ClusterIPs are the active cluster IPs (set cluster-ips): a packet
	// to one of them on a port no Service has is rejected.
	ClusterIPs []string
	// NodePortIPs is the set nodeport-ips.
	NodePortIPs []string
	// ServiceIPs maps "ip . proto . port" to the chain that handles it
	// (map service-ips): cluster, external and load-balancer IPs.
	ServiceIPs []Element
	// NodePorts maps "proto . port" to the chain of a node port
	// (map service-nodeports).
	NodePorts []Element
	// NoEndpointServices and NoEndpointNodePorts map the destinations of
	// Services without usable endpoints to "goto reject-chain" (no
	// endpoint anywhere) or "drop" (a traffic policy Local without local
	// endpoints).
	NoEndpointServices  []Element
	NoEndpointNodePorts []Element
	// Hairpin holds "ip . ip . proto . port" of local endpoints: a pod
	// that reaches itself through its Service is masqueraded, so that its
	// reply comes back through the DNAT.
	Hairpin []string
	// AffinitySets are the per-endpoint sets of client addresses of
	// Services with sessionAffinity ClientIP.
	AffinitySets []AffinitySet
	// LocalCIDRs are Config.LocalCIDRs of this family.
	LocalCIDRs []string
	// Chains are the per-service chains.
	Chains []Chain
}

// Element is a map element: Key maps to Value.
type Element struct {
	Key, Value string
}

// Chain is a regular chain and its rules, in order.
type Chain struct {
	Name  string
	Rules []string
}

// AffinitySet remembers for Timeout seconds which clients went to an
// endpoint.
type AffinitySet struct {
	Name    string
	Timeout int32
}

// endpoint is one address and port of a Service port.
type endpoint struct {
	addr        netip.Addr
	port        int32
	ready       bool
	serving     bool
	terminating bool
	local       bool
}

func (e endpoint) hostPort() string {
	return netip.AddrPortFrom(e.addr, uint16(e.port)).String()
}

// Rules decides the whole ruleset for the Services and EndpointSlices
// given, as kube-proxy's nftables proxier would programme them on the node
// of cfg. Services without a cluster IP (headless) and ExternalName
// Services get nothing; EndpointSlices of type FQDN are ignored.
func Rules(services []*v1.Service, slices []*discovery.EndpointSlice, cfg Config) Ruleset {
	bySvc := map[string][]*discovery.EndpointSlice{}
	for _, s := range slices {
		name := s.Labels[discovery.LabelServiceName]
		if name == "" {
			continue
		}
		key := s.Namespace + "/" + name
		bySvc[key] = append(bySvc[key], s)
	}
	var rs Ruleset
	for _, family := range Families {
		t := Table{Family: family}
		for _, ip := range cfg.NodePortIPs {
			if familyOf(ip) == family && !ip.IsLoopback() {
				t.NodePortIPs = append(t.NodePortIPs, ip.String())
			}
		}
		for _, p := range cfg.LocalCIDRs {
			if familyOf(p.Addr()) == family {
				t.LocalCIDRs = append(t.LocalCIDRs, p.Masked().String())
			}
		}
		for _, svc := range services {
			if svc.Spec.Type == v1.ServiceTypeExternalName {
				continue
			}
			clusterIP, ok := clusterIPOf(svc, family)
			if !ok {
				continue
			}
			eps := bySvc[svc.Namespace+"/"+svc.Name]
			for i := range svc.Spec.Ports {
				t.addServicePort(svc, &svc.Spec.Ports[i], clusterIP, endpointsOf(eps, &svc.Spec.Ports[i], family, cfg.NodeName), cfg)
			}
		}
		t.sort()
		rs.Tables = append(rs.Tables, t)
	}
	return rs
}

// clusterIPOf is the Service's cluster IP of family, if any.
func clusterIPOf(svc *v1.Service, family string) (netip.Addr, bool) {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		if s == v1.ClusterIPNone {
			return netip.Addr{}, false
		}
		if ip, err := netip.ParseAddr(s); err == nil && familyOf(ip) == family {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

func familyOf(ip netip.Addr) string {
	if ip.Unmap().Is4() {
		return "ip"
	}
	return "ip6"
}

// endpointsOf lists the endpoints of the Service port sp in the slices of
// family, sorted, each address and port once (a duplicate counts as ready
// if any of its copies is, as upstream's slice cache merges them).
func endpointsOf(eps []*discovery.EndpointSlice, sp *v1.ServicePort, family, nodeName string) []endpoint {
	want := discovery.AddressTypeIPv4
	if family == "ip6" {
		want = discovery.AddressTypeIPv6
	}
	byKey := map[netip.AddrPort]int{}
	var out []endpoint
	for _, s := range eps {
		if s.AddressType != want {
			continue
		}
		port, ok := slicePort(s, sp)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			addr, err := netip.ParseAddr(e.Addresses[0])
			if err != nil {
				continue
			}
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			ep := endpoint{
				addr:        addr.Unmap(),
				port:        port,
				ready:       ready,
				serving:     ready,
				terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
				local:       e.NodeName != nil && *e.NodeName == nodeName,
			}
			if e.Conditions.Serving != nil {
				ep.serving = *e.Conditions.Serving
			}
			k := netip.AddrPortFrom(ep.addr, uint16(port))
			if i, dup := byKey[k]; dup {
				if ep.ready && !out[i].ready {
					out[i] = ep
				}
				continue
			}
			byKey[k] = len(out)
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, compareEndpoints)
	return out
}

// slicePort is the port of slice s that serves sp: same name, same
// protocol (TCP when unset).
func slicePort(s *discovery.EndpointSlice, sp *v1.ServicePort) (int32, bool) {
	for _, p := range s.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		proto := v1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == sp.Protocol && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

// categorize splits endpoints as upstream's CategorizeEndpoints (without
// topology hints): the Cluster policy's endpoints are the ready ones, or
// the serving terminating ones when none is ready; the Local policy's are
// the local ready ones, or the local serving terminating ones.
// hasAny says whether the Service has any usable endpoint anywhere.
func categorize(eps []endpoint, usesCluster, usesLocal bool) (cluster, local []endpoint, hasAny bool) {
	if usesCluster {
		cluster = filter(eps, func(e endpoint) bool { return e.ready })
		if len(cluster) == 0 {
			cluster = filter(eps, func(e endpoint) bool { return e.serving && e.terminating })
		}
		hasAny = len(cluster) > 0
	}
	if !usesLocal {
		return cluster, nil, hasAny
	}
	for _, e := range eps {
		if e.ready || (e.serving && e.terminating) {
			hasAny = true
		}
	}
	local = filter(eps, func(e endpoint) bool { return e.local && e.ready })
	if len(local) == 0 {
		local = filter(eps, func(e endpoint) bool { return e.local && e.serving && e.terminating })
	}
	return cluster, local, hasAny
}

func filter(eps []endpoint, keep func(endpoint) bool) []endpoint {
	var out []endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// addServicePort adds what one port of a Service needs, as upstream's
// syncProxyRules does for one service port.
func (t *Table) addServicePort(svc *v1.Service, sp *v1.ServicePort, clusterIP netip.Addr, eps []endpoint, cfg Config) {
	proto := strings.ToLower(string(sp.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	port := strconv.Itoa(int(sp.Port))
	base := servicePortName(svc, sp, proto)
	hash := shortHash(base)
	clusterChain := "service-" + hash + "-" + base
	localChain := "local-" + hash + "-" + base
	externalChain := "external-" + hash + "-" + base

	var externalIPs []string
	for _, s := range svc.Spec.ExternalIPs {
		if ip, err := netip.ParseAddr(s); err == nil && familyOf(ip) == t.Family {
			externalIPs = append(externalIPs, ip.Unmap().String())
		}
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(ing.IP); err == nil && familyOf(ip) == t.Family {
			externalIPs = append(externalIPs, ip.Unmap().String())
		}
	}
	nodePort := 0
	if svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		nodePort = int(sp.NodePort)
	}
	externallyAccessible := nodePort != 0 || len(externalIPs) > 0
	internalLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal
	externalLocal := externallyAccessible && svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
	usesCluster := !internalLocal || (externallyAccessible && !externalLocal)
	usesLocal := internalLocal || externalLocal
	cluster, local, hasAny := categorize(eps, usesCluster, usesLocal)

	affinity := svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP
	timeout := int32(v1.DefaultClientIPServiceAffinitySeconds)
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		timeout = *c.ClientIP.TimeoutSeconds
	}
	// The endpoints any chain of this port uses, each once.
	reachable := map[netip.AddrPort]endpoint{}
	for _, e := range append(slices.Clone(cluster), local...) {
		reachable[netip.AddrPortFrom(e.addr, uint16(e.port))] = e
	}
	for _, e := range sortedEndpoints(reachable) {
		if e.local {
			t.Hairpin = append(t.Hairpin, fmt.Sprintf("%s . %s . %s . %d", e.addr, e.addr, proto, e.port))
		}
	}

	internalChain, hasInternal := clusterChain, hasAny
	if internalLocal {
		internalChain, hasInternal = localChain, len(local) > 0
	}
	externalPolicyChain, hasExternal := clusterChain, hasAny
	if externalLocal {
		externalPolicyChain, hasExternal = localChain, len(local) > 0
	}
	// Upstream: reject when there is no endpoint at all, drop when only a
	// policy Local finds none on this node.
	internalVerdict, externalVerdict := "drop", "drop"
	if !hasAny {
		internalVerdict, externalVerdict = "goto "+rejectChain, "goto "+rejectChain
	}

	t.ClusterIPs = append(t.ClusterIPs, clusterIP.String())
	key := func(ip string) string { return ip + " . " + proto + " . " + port }
	if hasInternal {
		t.ServiceIPs = append(t.ServiceIPs, Element{key(clusterIP.String()), "goto " + internalChain})
	} else {
		t.NoEndpointServices = append(t.NoEndpointServices, Element{key(clusterIP.String()), internalVerdict})
	}
	for _, ip := range externalIPs {
		if hasAny {
			t.ServiceIPs = append(t.ServiceIPs, Element{key(ip), "goto " + externalChain})
		}
		if !hasExternal {
			t.NoEndpointServices = append(t.NoEndpointServices, Element{key(ip), externalVerdict})
		}
	}
	if nodePort != 0 {
		k := proto + " . " + strconv.Itoa(nodePort)
		if hasAny {
			t.NodePorts = append(t.NodePorts, Element{k, "goto " + externalChain})
		}
		if !hasExternal {
			t.NoEndpointNodePorts = append(t.NoEndpointNodePorts, Element{k, externalVerdict})
		}
	}

	if hasAny && externallyAccessible {
		ext := Chain{Name: externalChain}
		if !externalLocal {
			// Cluster policy: the endpoint may be on another node.
			ext.Rules = append(ext.Rules, masqueradeRule)
		} else {
			if len(t.LocalCIDRs) > 0 {
				// A pod's traffic to an external destination is subject to
				// no traffic policy (as if it went out and came back).
				ext.Rules = append(ext.Rules, fmt.Sprintf("%s saddr { %s } goto %s", t.Family, strings.Join(t.LocalCIDRs, ", "), clusterChain))
			}
			// The node's own traffic has a local source address: masquerade
			// it and use any endpoint.
			ext.Rules = append(ext.Rules, "fib saddr type local "+masqueradeRule, "fib saddr type local goto "+clusterChain)
		}
		if hasExternal {
			ext.Rules = append(ext.Rules, "goto "+externalPolicyChain)
		}
		t.Chains = append(t.Chains, ext)
	}

	usesClusterChain := len(cluster) > 0
	usesLocalChain := len(local) > 0 && usesLocal
	if !affinity {
		if usesClusterChain {
			t.Chains = append(t.Chains, Chain{Name: clusterChain, Rules: []string{t.dnatRule(proto, cluster)}})
		}
		if usesLocalChain {
			t.Chains = append(t.Chains, Chain{Name: localChain, Rules: []string{t.dnatRule(proto, local)}})
		}
		return
	}
	epChain := func(e endpoint) string {
		// nft names take no ':' (nor IPv6's brackets).
		return "endpoint-" + shortHash(base+"/"+e.hostPort()) + "-" + base + "__" + strings.ReplaceAll(e.addr.String(), ":", ".") + "/" + strconv.Itoa(int(e.port))
	}
	affinitySet := func(e endpoint) string { return "affinity-" + strings.TrimPrefix(epChain(e), "endpoint-") }
	jumps := func(name string, eps []endpoint) Chain {
		c := Chain{Name: name}
		var elems []string
		for i, e := range eps {
			c.Rules = append(c.Rules, fmt.Sprintf("%s saddr @%s goto %s", t.Family, affinitySet(e), epChain(e)))
			elems = append(elems, fmt.Sprintf("%d : goto %s", i, epChain(e)))
		}
		c.Rules = append(c.Rules, fmt.Sprintf("numgen random mod %d vmap { %s }", len(eps), strings.Join(elems, ", ")))
		return c
	}
	if usesClusterChain {
		t.Chains = append(t.Chains, jumps(clusterChain, cluster))
	}
	if usesLocalChain {
		t.Chains = append(t.Chains, jumps(localChain, local))
	}
	for _, e := range sortedEndpoints(reachable) {
		t.AffinitySets = append(t.AffinitySets, AffinitySet{Name: affinitySet(e), Timeout: timeout})
		t.Chains = append(t.Chains, Chain{Name: epChain(e), Rules: []string{
			fmt.Sprintf("update @%s { %s saddr }", affinitySet(e), t.Family),
			fmt.Sprintf("meta l4proto %s dnat to %s", proto, e.hostPort()),
		}})
	}
}

// masqueradeRule marks a packet for masquerading in postrouting.
const masqueradeRule = "meta mark set meta mark or " + masqueradeMark

// dnatRule sends a packet to one of eps at random: one DNAT for a single
// endpoint, else a numgen map (upstream's writeServiceToEndpointDNATs).
func (t *Table) dnatRule(proto string, eps []endpoint) string {
	if len(eps) == 1 {
		return fmt.Sprintf("meta l4proto %s dnat to %s", proto, eps[0].hostPort())
	}
	elems := make([]string, len(eps))
	for i, e := range eps {
		elems[i] = fmt.Sprintf("%d : %s . %d", i, e.addr, e.port)
	}
	return fmt.Sprintf("meta l4proto %s dnat %s addr . port to numgen random mod %d map { %s }", proto, t.Family, len(eps), strings.Join(elems, ", "))
}

// compareEndpoints orders endpoints by address, then port.
func compareEndpoints(a, b endpoint) int {
	if c := a.addr.Compare(b.addr); c != 0 {
		return c
	}
	return int(a.port - b.port)
}

func sortedEndpoints(m map[netip.AddrPort]endpoint) []endpoint {
	out := make([]endpoint, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, compareEndpoints)
	return out
}

// servicePortName is "namespace/name/proto/port" (the port's name, or its
// number when it has none), the readable part of the chains' names.
func servicePortName(svc *v1.Service, sp *v1.ServicePort, proto string) string {
	name := sp.Name
	if name == "" {
		name = strconv.Itoa(int(sp.Port))
	}
	return svc.Namespace + "/" + svc.Name + "/" + proto + "/" + name
}

// shortHash keeps chain names unique whatever their readable part, as
// upstream's hashAndTruncate.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:8]
}

// sort orders what the Services' order would otherwise decide, so that a
// ruleset is a function of the objects' set.
func (t *Table) sort() {
	byKey := func(a, b Element) int { return strings.Compare(a.Key, b.Key) }
	slices.Sort(t.ClusterIPs)
	t.ClusterIPs = slices.Compact(t.ClusterIPs)
	slices.SortFunc(t.ServiceIPs, byKey)
	slices.SortFunc(t.NodePorts, byKey)
	slices.SortFunc(t.NoEndpointServices, byKey)
	slices.SortFunc(t.NoEndpointNodePorts, byKey)
	slices.Sort(t.Hairpin)
	t.Hairpin = slices.Compact(t.Hairpin)
	slices.SortFunc(t.AffinitySets, func(a, b AffinitySet) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(t.Chains, func(a, b Chain) int { return strings.Compare(a.Name, b.Name) })
}
