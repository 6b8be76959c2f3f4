package endpoint

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/endpointslice"
)

const (
	// LabelManagedBy names who writes an Endpoints object; the
	// controller leaves alone those another manager labelled.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	// ManagedBy is this controller's value of LabelManagedBy, upstream's.
	ManagedBy = "endpoint-controller"
	// MaxAddresses is how many addresses an Endpoints object holds; past
	// it the object is cut and annotated over capacity.
	MaxAddresses = 1000
)

// Mine reports whether the controller may write the Endpoints object: it
// is absent, unlabelled, or labelled as this controller's.
func Mine(ep *corev1.Endpoints) bool {
	if ep == nil {
		return true
	}
	v, ok := ep.Labels[LabelManagedBy]
	return !ok || v == ManagedBy
}

// address is the pod's address of the Service's primary family, or false.
func address(svc *corev1.Service, p *corev1.Pod) (corev1.EndpointAddress, bool) {
	v6 := len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	ips := p.Status.PodIPs
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	for _, pip := range ips {
		ip := net.ParseIP(pip.IP)
		if ip == nil || (ip.To4() == nil) != v6 {
			continue
		}
		a := corev1.EndpointAddress{IP: ip.String(), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
		if p.Spec.NodeName != "" {
			a.NodeName = &p.Spec.NodeName
		}
		if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
			a.Hostname = p.Spec.Hostname
		}
		return a, true
	}
	return corev1.EndpointAddress{}, false
}

// Subsets are the Service's Endpoints subsets from the pods: a pod that
// has an IP and has not finished (nor is being deleted, unless the Service
// publishes addresses that are not ready) is an address, ready when its
// Ready condition is True or the Service publishes unready addresses,
// with the Service's ports it resolves; addresses sharing ports share a
// subset (upstream's RepackSubsets), sorted. At most MaxAddresses
// addresses are kept; over says some were cut.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) (subsets []corev1.EndpointSubset, over bool) {
	type entry struct {
		addr  corev1.EndpointAddress
		ready bool
		ports []corev1.EndpointPort
	}
	groups := map[string]*corev1.EndpointSubset{}
	var keys []string
	total := 0
	for _, p := range pods {
		if !endpointslice.InEndpoints(p) || (p.DeletionTimestamp != nil && !svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		a, ok := address(svc, p)
		if !ok {
			continue
		}
		e := entry{addr: a, ready: svc.Spec.PublishNotReadyAddresses || controller.Ready(p)}
		for _, sp := range endpointslice.Ports(svc, p) {
			e.ports = append(e.ports, corev1.EndpointPort{Name: *sp.Name, Port: *sp.Port, Protocol: *sp.Protocol, AppProtocol: sp.AppProtocol})
		}
		if len(e.ports) == 0 && !(len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone) {
			// A pod serving none of the Service's ports is no address
			// (upstream: a headless Service without ports takes it).
			continue
		}
		if total >= MaxAddresses {
			over = true
			continue
		}
		total++
		slices.SortFunc(e.ports, func(a, b corev1.EndpointPort) int {
			return strings.Compare(fmt.Sprintf("%s/%d/%s", a.Name, a.Port, a.Protocol), fmt.Sprintf("%s/%d/%s", b.Name, b.Port, b.Protocol))
		})
		k := fmt.Sprint(e.ports)
		g := groups[k]
		if g == nil {
			g = &corev1.EndpointSubset{Ports: e.ports}
			groups[k] = g
			keys = append(keys, k)
		}
		if e.ready {
			g.Addresses = append(g.Addresses, e.addr)
		} else {
			g.NotReadyAddresses = append(g.NotReadyAddresses, e.addr)
		}
	}
	slices.Sort(keys)
	byIP := func(a, b corev1.EndpointAddress) int { return strings.Compare(a.IP, b.IP) }
	for _, k := range keys {
		g := groups[k]
		slices.SortFunc(g.Addresses, byIP)
		slices.SortFunc(g.NotReadyAddresses, byIP)
		subsets = append(subsets, *g)
	}
	return subsets, over
}

// Desired is the Endpoints object the Service should have, from its
// current one (nil when absent).
func Desired(svc *corev1.Service, current *corev1.Endpoints, pods []*corev1.Pod) *corev1.Endpoints {
	subsets, over := Subsets(svc, pods)
	ep := &corev1.Endpoints{}
	if current != nil {
		ep = current.DeepCopy()
	}
	ep.Name, ep.Namespace = svc.Name, svc.Namespace
	ep.Subsets = subsets
	ep.Labels = map[string]string{}
	for k, v := range svc.Labels {
		ep.Labels[k] = v
	}
	ep.Labels[LabelManagedBy] = ManagedBy
	delete(ep.Labels, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		ep.Labels[corev1.IsHeadlessService] = ""
	}
	if over {
		if ep.Annotations == nil {
			ep.Annotations = map[string]string{}
		}
		ep.Annotations[corev1.EndpointsOverCapacity] = "truncated"
	} else {
		delete(ep.Annotations, corev1.EndpointsOverCapacity)
	}
	return ep
}
