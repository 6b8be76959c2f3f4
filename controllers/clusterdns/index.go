package clusterdns

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Index is what the server answers from: the Services and the
// EndpointSlices of the cluster, by namespace and name, with the reverse
// (PTR) names of their addresses. The runner fills it from informers; a
// test fills it directly. It is safe for concurrent use: queries read it
// under a read lock while events write it.
type Index struct {
	zone string // lower case, fully qualified ("cluster.local.")

	mu       sync.RWMutex
	services map[key]*v1.Service
	// slices are the EndpointSlices of each Service (by the
	// kubernetes.io/service-name label), by slice name.
	slices map[key]map[string]*discoveryv1.EndpointSlice
	// sliceService is the Service each slice was filed under, so that a
	// slice whose label changes moves.
	sliceService map[key]key
	// namespaces counts the Services of each namespace: <ns>.svc.<zone>
	// exists while it has one.
	namespaces map[string]int
	// reverse are the PTR targets of each address; ptrs what each
	// Service put there, to take it out again.
	reverse map[netip.Addr][]string
	ptrs    map[key][]netip.Addr
	// serial is the SOA serial: the second of the last change.
	serial uint32
	now    func() time.Time
}

type key struct{ namespace, name string }

// NewIndex returns an empty Index of zone (e.g. "cluster.local").
func NewIndex(zone string) *Index {
	return &Index{zone: strings.ToLower(fqdn(zone)), services: map[key]*v1.Service{}, slices: map[key]map[string]*discoveryv1.EndpointSlice{},
		sliceService: map[key]key{}, namespaces: map[string]int{}, reverse: map[netip.Addr][]string{}, ptrs: map[key][]netip.Addr{},
		now: time.Now, serial: uint32(time.Now().Unix())}
}

// Zone is the zone, fully qualified and lower case.
func (x *Index) Zone() string { return x.zone }

// SetService adds or replaces a Service.
func (x *Index) SetService(svc *v1.Service) {
	k := key{strings.ToLower(svc.Namespace), strings.ToLower(svc.Name)}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.services[k]; !ok {
		x.namespaces[k.namespace]++
	}
	x.services[k] = svc
	x.changedLocked(k)
}

// DeleteService removes a Service (its slices stay until they go, as
// they do in the API, but answer nothing without it).
func (x *Index) DeleteService(svc *v1.Service) {
	k := key{strings.ToLower(svc.Namespace), strings.ToLower(svc.Name)}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.services[k]; !ok {
		return
	}
	delete(x.services, k)
	if x.namespaces[k.namespace]--; x.namespaces[k.namespace] <= 0 {
		delete(x.namespaces, k.namespace)
	}
	x.changedLocked(k)
}

// SetSlice adds or replaces an EndpointSlice.
func (x *Index) SetSlice(s *discoveryv1.EndpointSlice) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sk := x.unfileSliceLocked(s)
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	k := key{strings.ToLower(s.Namespace), strings.ToLower(name)}
	if x.slices[k] == nil {
		x.slices[k] = map[string]*discoveryv1.EndpointSlice{}
	}
	x.slices[k][s.Name] = s
	x.sliceService[sk] = k
	x.changedLocked(k)
}

// DeleteSlice removes an EndpointSlice.
func (x *Index) DeleteSlice(s *discoveryv1.EndpointSlice) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unfileSliceLocked(s)
}

// unfileSliceLocked takes slice s from the Service it was filed under,
// and returns its key.
func (x *Index) unfileSliceLocked(s *discoveryv1.EndpointSlice) key {
	sk := key{s.Namespace, s.Name}
	k, ok := x.sliceService[sk]
	if !ok {
		return sk
	}
	delete(x.sliceService, sk)
	delete(x.slices[k], s.Name)
	if len(x.slices[k]) == 0 {
		delete(x.slices, k)
	}
	x.changedLocked(k)
	return sk
}

// changedLocked puts the reverse names of Service k right and moves the
// serial on.
func (x *Index) changedLocked(k key) {
	for _, ip := range x.ptrs[k] {
		x.reverse[ip] = slices.DeleteFunc(x.reverse[ip], func(n string) bool { return isOf(n, k, x.zone) })
		if len(x.reverse[ip]) == 0 {
			delete(x.reverse, ip)
		}
	}
	delete(x.ptrs, k)
	if svc := x.services[k]; svc != nil {
		base := serviceName(k, x.zone)
		add := func(ip netip.Addr, name string) {
			if !slices.Contains(x.reverse[ip], name) {
				x.reverse[ip] = append(x.reverse[ip], name)
				x.ptrs[k] = append(x.ptrs[k], ip)
			}
		}
		if headless(svc) {
			for _, ep := range x.endpointsLocked(k) {
				add(ep.ip, ep.host+"."+base)
			}
		} else {
			for _, ip := range clusterIPs(svc) {
				add(ip, base)
			}
		}
	}
	if s := uint32(x.now().Unix()); s > x.serial {
		x.serial = s
	} else {
		x.serial++
	}
}

// isOf says whether name is Service k's own name or one of its endpoints'.
func isOf(name string, k key, zone string) bool {
	base := serviceName(k, zone)
	return name == base || strings.HasSuffix(name, "."+base)
}

func serviceName(k key, zone string) string { return k.name + "." + k.namespace + ".svc." + zone }

// endpoint is one ready address of a Service, with the name it has under
// the Service's: its hostname, or its address with dashes (CoreDNS's
// name for an endpoint without one).
type endpoint struct {
	ip   netip.Addr
	host string
}

// endpointsLocked are the ready addresses of Service k's slices, each
// once, in a stable order.
func (x *Index) endpointsLocked(k key) []endpoint {
	var out []endpoint
	for _, name := range sortedKeys(x.slices[k]) {
		for _, ep := range x.slices[k][name].Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil || slices.ContainsFunc(out, func(e endpoint) bool { return e.ip == ip }) {
					continue
				}
				host := dashed(ip)
				if ep.Hostname != nil && *ep.Hostname != "" {
					host = strings.ToLower(*ep.Hostname)
				}
				out = append(out, endpoint{ip: ip, host: host})
			}
		}
	}
	return out
}

// endpointPorts are the ports of Service k's slices, each once.
func (x *Index) endpointPortsLocked(k key) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, name := range sortedKeys(x.slices[k]) {
		for _, p := range x.slices[k][name].Ports {
			if !slices.ContainsFunc(out, func(o discoveryv1.EndpointPort) bool { return equalPort(o, p) }) {
				out = append(out, p)
			}
		}
	}
	return out
}

func equalPort(a, b discoveryv1.EndpointPort) bool {
	return deref(a.Name) == deref(b.Name) && deref(a.Port) == deref(b.Port) && deref(a.Protocol) == deref(b.Protocol)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func headless(svc *v1.Service) bool { return svc.Spec.ClusterIP == v1.ClusterIPNone }

// clusterIPs are the Service's cluster IPs (both families).
func clusterIPs(svc *v1.Service) []netip.Addr {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

// dashed is an address as one label: 10-1-2-3, or fd00--1 for IPv6 (the
// form of <a-b-c-d>.<ns>.pod names and CoreDNS's endpoint names).
func dashed(ip netip.Addr) string {
	return strings.ReplaceAll(strings.ReplaceAll(ip.String(), ".", "-"), ":", "-")
}

// undashed is the address a dashed label stands for, if any.
func undashed(label string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ".")); err == nil && ip.Is4() {
		return ip, true
	}
	if ip, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ":")); err == nil && ip.Is6() {
		return ip, true
	}
	return netip.Addr{}, false
}

func fqdn(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
