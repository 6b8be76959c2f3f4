package endpointslicemirroring

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/controllers/endpointslice"
)

const (
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
	// slices this controller owns, upstream's.
	ManagedBy = "endpointslicemirroring-controller.k8s.io"
	// MaxEndpointsPerSubset is how many addresses of one subset are
	// mirrored at most (--mirroring-max-endpoints-per-subset's default),
	// ready ones first; it is also what one slice holds at most.
	MaxEndpointsPerSubset = 1000
	// leaderAnnotation marks an Endpoints object used as a leader election
	// lock (client-go's resourcelock): not a Service's endpoints.
	leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"
)

// Mirrors reports whether the Endpoints ep get mirrored slices, as
// upstream's shouldMirror and syncEndpoints decide: ep and its Service
// exist, the Service has no selector (a selector's Service gets its
// slices from the EndpointSlice controller), ep is not labelled
// endpointslice.kubernetes.io/skip-mirror=true and is no leader lock.
func Mirrors(ep *corev1.Endpoints, svc *corev1.Service) bool {
	if ep == nil || svc == nil || svc.Spec.Selector != nil {
		return false
	}
	if ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, leader := ep.Annotations[leaderAnnotation]
	return !leader
}

// Desired groups the addresses of ep's subsets by address type and ports,
// as upstream's reconciler: subsets with the same ports share a group, an
// address is listed once per group (ready if any copy is), addresses that
// are not IPs are left out, and each subset gives at most
// MaxEndpointsPerSubset addresses, its ready ones first.
func Desired(ep *corev1.Endpoints) []endpointslice.Group {
	byKey := map[string]*endpointslice.Group{}
	seen := map[string]map[string]int{} // group key -> address -> index
	var keys []string
	for _, ss := range ep.Subsets {
		ports := slicePorts(ss.Ports)
		n := 0
		add := func(a corev1.EndpointAddress, ready bool) {
			ip := net.ParseIP(a.IP)
			if ip == nil || n >= MaxEndpointsPerSubset {
				return
			}
			n++
			at := discoveryv1.AddressTypeIPv4
			if ip.To4() == nil {
				at = discoveryv1.AddressTypeIPv6
			}
			k := endpointslice.GroupKey(at, ports)
			g := byKey[k]
			if g == nil {
				g = &endpointslice.Group{AddressType: at, Ports: ports, Endpoints: []discoveryv1.Endpoint{}}
				byKey[k], seen[k] = g, map[string]int{}
				keys = append(keys, k)
			}
			if i, dup := seen[k][ip.String()]; dup {
				if ready {
					g.Endpoints[i].Conditions.Ready = ptr(true)
				}
				return
			}
			seen[k][ip.String()] = len(g.Endpoints)
			// The address as an IP's canonical text, whatever form it was
			// written in; Ready is the only condition Endpoints carry.
			e := discoveryv1.Endpoint{Addresses: []string{ip.String()},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)}, TargetRef: a.TargetRef, NodeName: a.NodeName}
			if a.Hostname != "" {
				e.Hostname = ptr(a.Hostname)
			}
			g.Endpoints = append(g.Endpoints, e)
		}
		for _, a := range ss.Addresses {
			add(a, true)
		}
		for _, a := range ss.NotReadyAddresses {
			add(a, false)
		}
	}
	sort.Strings(keys)
	out := make([]endpointslice.Group, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

// slicePorts are a subset's ports as a slice's, sorted by name so that
// the same ports in another order make the same group.
func slicePorts(ps []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ps))
	for _, p := range ps {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, discoveryv1.EndpointPort{Name: ptr(p.Name), Port: ptr(p.Port), Protocol: ptr(proto), AppProtocol: p.AppProtocol})
	}
	slices.SortFunc(out, func(a, b discoveryv1.EndpointPort) int {
		return strings.Compare(fmt.Sprintf("%s/%d/%s", *a.Name, *a.Port, *a.Protocol), fmt.Sprintf("%s/%d/%s", *b.Name, *b.Port, *b.Protocol))
	})
	return out
}

// Reconcile plans the writes that make the existing mirrored slices of ep
// hold the groups (endpointslice.Fill), at most MaxEndpointsPerSubset
// endpoints a slice. Unlike the EndpointSlice controller, an Endpoints
// object with no address has no slice (upstream keeps no placeholder
// here).
func Reconcile(ep *corev1.Endpoints, groups []endpointslice.Group, existing []*discoveryv1.EndpointSlice) endpointslice.Plan {
	return endpointslice.Fill(groups, existing, MaxEndpointsPerSubset, func(g endpointslice.Group, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return newSlice(ep, g.AddressType, g.Ports, eps)
	})
}

// newSlice is a mirrored slice as upstream's newEndpointSlice makes it:
// the Endpoints' labels and annotations (but the last change trigger
// time and kubectl's last applied configuration), the service name and
// manager labels, the Endpoints as controller owner.
func newSlice(ep *corev1.Endpoints, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	labels, annotations := map[string]string{}, map[string]string{}
	for k, v := range ep.Labels {
		labels[k] = v
	}
	labels[discoveryv1.LabelServiceName] = ep.Name
	labels[discoveryv1.LabelManagedBy] = ManagedBy
	for k, v := range ep.Annotations {
		if k != corev1.EndpointsLastChangeTriggerTime && k != corev1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	prefix := ep.Name + "-"
	if len(prefix) > 57 {
		prefix = prefix[:57]
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: prefix, Namespace: ep.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Endpoints", Name: ep.Name, UID: ep.UID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   slices.Clone(eps),
	}
}

func ptr[T any](v T) *T { return &v }
