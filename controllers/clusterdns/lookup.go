package clusterdns

import (
	"net/netip"
	"strings"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
)

// TTL is the records' time to live in seconds, CoreDNS's kubernetes
// plugin's default: short, since Services and endpoints change.
const TTL = 5

// SchemaVersion is the DNS schema version served at dns-version.<zone>
// (TXT), CoreDNS's (the specification's 1.0.1 plus its extensions).
const SchemaVersion = "1.1.0"

// Answer is the content of a response.
type Answer struct {
	Rcode  int
	Answer []dns.RR
	Ns     []dns.RR
	Extra  []dns.RR
}

// Lookup answers q from the index, as the Kubernetes DNS specification
// and CoreDNS's kubernetes plugin say, and says whether q was the index's
// to answer: a name in the zone always is (NXDOMAIN when it does not
// exist, NODATA with the SOA when it has no record of q's type); a
// reverse name (PTR) is when one of the index's addresses has it;
// anything else is not (the server forwards it).
func (x *Index) Lookup(q dns.Question) (Answer, bool) {
	name := strings.ToLower(q.Name)
	x.mu.RLock()
	defer x.mu.RUnlock()
	if q.Qtype == dns.TypePTR {
		if ip, ok := reverseAddr(name); ok {
			targets := x.reverse[ip]
			if len(targets) == 0 {
				return Answer{}, false
			}
			var a Answer
			for _, t := range targets {
				a.Answer = append(a.Answer, &dns.PTR{Hdr: header(q.Name, dns.TypePTR), Ptr: t})
			}
			return a, true
		}
	}
	var rest string
	switch {
	case name == x.zone:
	case strings.HasSuffix(name, "."+x.zone):
		rest = strings.TrimSuffix(name, "."+x.zone)
	default:
		return Answer{}, false
	}
	var labels []string
	if rest != "" {
		labels = strings.Split(rest, ".")
	}
	rrs, extra, exists := x.recordsLocked(q.Name, labels)
	var a Answer
	for _, rr := range rrs {
		if t := rr.Header().Rrtype; t == q.Qtype || q.Qtype == dns.TypeANY || t == dns.TypeCNAME {
			a.Answer = append(a.Answer, rr)
		}
	}
	switch {
	case !exists:
		a.Rcode = dns.RcodeNameError
		a.Ns = []dns.RR{x.soaLocked()}
	case len(a.Answer) == 0:
		a.Ns = []dns.RR{x.soaLocked()}
	default:
		a.Extra = extra
	}
	return a, true
}

// recordsLocked are the records of every type named by labels (the name
// without the zone, lower case), owned by owner; extra are the addresses
// SRV targets have; exists is whether the name exists at all (an empty
// non-terminal such as svc.<zone> does).
func (x *Index) recordsLocked(owner string, labels []string) (rrs, extra []dns.RR, exists bool) {
	n := len(labels)
	switch {
	case n == 0:
		return []dns.RR{x.soaLocked(), &dns.NS{Hdr: header(owner, dns.TypeNS), Ns: "ns.dns." + x.zone}}, nil, true
	case n == 1 && labels[0] == "dns-version":
		return []dns.RR{&dns.TXT{Hdr: header(owner, dns.TypeTXT), Txt: []string{SchemaVersion}}}, nil, true
	case n == 1:
		return nil, nil, labels[0] == "svc" || labels[0] == "pod"
	case labels[n-1] == "pod":
		switch n {
		case 2:
			return nil, nil, true
		case 3:
			// <a-b-c-d>.<ns>.pod: any address, as CoreDNS's "pods
			// insecure" (kubeadm's and k3s's Corefile).
			ip, ok := undashed(labels[0])
			if !ok {
				return nil, nil, false
			}
			return []dns.RR{addressRR(owner, ip)}, nil, true
		}
		return nil, nil, false
	case labels[n-1] != "svc":
		return nil, nil, false
	case n == 2:
		return nil, nil, x.namespaces[labels[0]] > 0
	}
	k := key{namespace: labels[n-2], name: labels[n-3]}
	svc := x.services[k]
	if svc == nil {
		return nil, nil, false
	}
	switch n {
	case 3:
		return x.serviceRecordsLocked(owner, k, svc)
	case 4:
		if strings.HasPrefix(labels[0], "_") {
			// _<proto>.<svc>.<ns>.svc: the parent of the SRV names.
			return nil, nil, true
		}
		if !headless(svc) {
			return nil, nil, false
		}
		for _, ep := range x.endpointsLocked(k) {
			if ep.host == labels[0] {
				rrs = append(rrs, addressRR(owner, ep.ip))
			}
		}
		return rrs, nil, len(rrs) > 0
	case 5:
		port, okPort := strings.CutPrefix(labels[0], "_")
		proto, okProto := strings.CutPrefix(labels[1], "_")
		if !okPort || !okProto {
			return nil, nil, false
		}
		rrs, extra = x.srvLocked(owner, k, svc, port, proto)
		return rrs, extra, len(rrs) > 0
	}
	return nil, nil, false
}

// serviceRecordsLocked are <svc>.<ns>.svc's: a CNAME to an ExternalName
// Service's name, the cluster IPs, or a headless Service's ready
// endpoints (NXDOMAIN without one, as the specification says).
func (x *Index) serviceRecordsLocked(owner string, k key, svc *v1.Service) (rrs, extra []dns.RR, exists bool) {
	switch {
	case svc.Spec.Type == v1.ServiceTypeExternalName:
		if svc.Spec.ExternalName == "" {
			return nil, nil, true
		}
		return []dns.RR{&dns.CNAME{Hdr: header(owner, dns.TypeCNAME), Target: dns.Fqdn(svc.Spec.ExternalName)}}, nil, true
	case headless(svc):
		for _, ep := range x.endpointsLocked(k) {
			rrs = append(rrs, addressRR(owner, ep.ip))
		}
		return rrs, nil, len(rrs) > 0
	}
	for _, ip := range clusterIPs(svc) {
		rrs = append(rrs, addressRR(owner, ip))
	}
	return rrs, nil, true
}

// srvLocked are the SRV records of _<port>._<proto>.<svc>.<ns>.svc: the
// Service's named port pointing at the Service's name, or, headless, one
// per ready endpoint and port of its slices pointing at the endpoint's
// name; extra are the targets' addresses.
func (x *Index) srvLocked(owner string, k key, svc *v1.Service, port, proto string) (rrs, extra []dns.RR) {
	base := serviceName(k, x.zone)
	match := func(name string, protocol v1.Protocol) bool {
		if protocol == "" {
			protocol = v1.ProtocolTCP
		}
		return name != "" && strings.EqualFold(name, port) && strings.EqualFold(string(protocol), proto)
	}
	switch {
	case svc.Spec.Type == v1.ServiceTypeExternalName:
		return nil, nil
	case headless(svc):
		eps := x.endpointsLocked(k)
		for _, p := range x.endpointPortsLocked(k) {
			if !match(deref(p.Name), deref(p.Protocol)) {
				continue
			}
			for _, ep := range eps {
				rrs = append(rrs, &dns.SRV{Hdr: header(owner, dns.TypeSRV), Port: uint16(deref(p.Port)), Target: ep.host + "." + base})
			}
		}
		if len(rrs) > 0 {
			for _, ep := range eps {
				extra = append(extra, addressRR(ep.host+"."+base, ep.ip))
			}
		}
	default:
		for _, p := range svc.Spec.Ports {
			if match(p.Name, p.Protocol) {
				rrs = append(rrs, &dns.SRV{Hdr: header(owner, dns.TypeSRV), Port: uint16(p.Port), Target: base})
			}
		}
		if len(rrs) > 0 {
			for _, ip := range clusterIPs(svc) {
				extra = append(extra, addressRR(base, ip))
			}
		}
	}
	for _, rr := range rrs {
		// Equal shares, priority 0, as CoreDNS weighs one priority's.
		rr.(*dns.SRV).Weight = uint16(max(100/len(rrs), 1))
	}
	return rrs, extra
}

// soaLocked is the zone's SOA, CoreDNS's shape.
func (x *Index) soaLocked() dns.RR {
	return &dns.SOA{Hdr: header(x.zone, dns.TypeSOA), Ns: "ns.dns." + x.zone, Mbox: "hostmaster." + x.zone,
		Serial: x.serial, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL}
}

func header(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
}

// addressRR is an A or AAAA record of ip.
func addressRR(owner string, ip netip.Addr) dns.RR {
	if ip.Is4() {
		return &dns.A{Hdr: header(owner, dns.TypeA), A: ip.AsSlice()}
	}
	return &dns.AAAA{Hdr: header(owner, dns.TypeAAAA), AAAA: ip.AsSlice()}
}

// reverseAddr is the address of a reverse name (d.c.b.a.in-addr.arpa.,
// or the 32 nibbles of ip6.arpa.).
func reverseAddr(name string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(name, ".in-addr.arpa."); ok {
		l := strings.Split(rest, ".")
		if len(l) != 4 {
			return netip.Addr{}, false
		}
		ip, err := netip.ParseAddr(l[3] + "." + l[2] + "." + l[1] + "." + l[0])
		return ip, err == nil
	}
	if rest, ok := strings.CutSuffix(name, ".ip6.arpa."); ok {
		l := strings.Split(rest, ".")
		if len(l) != 32 {
			return netip.Addr{}, false
		}
		var b strings.Builder
		for i := 31; i >= 0; i-- {
			if len(l[i]) != 1 {
				return netip.Addr{}, false
			}
			b.WriteString(l[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		ip, err := netip.ParseAddr(b.String())
		return ip, err == nil
	}
	return netip.Addr{}, false
}
