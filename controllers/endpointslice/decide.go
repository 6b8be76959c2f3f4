package endpointslice

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/controllers/controller"
)

const (
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
	// slices this controller owns, upstream's.
	ManagedBy = "endpointslice-controller.k8s.io"
	// MaxEndpoints is how many endpoints a slice holds at most
	// (--max-endpoints-per-slice's default).
	MaxEndpoints = 100
)

// Managed reports whether the controller syncs the Service's slices:
// upstream leaves ExternalName Services and Services without a selector
// (their slices are their users') alone.
func Managed(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.Selector != nil
}

// InEndpoints reports whether a pod is an endpoint at all (upstream's
// ShouldPodBeInEndpoints with terminating pods included): it has an IP
// and has not finished.
func InEndpoints(p *corev1.Pod) bool {
	if p.Status.PodIP == "" && len(p.Status.PodIPs) == 0 {
		return false
	}
	return !controller.Terminal(p)
}

// AddressTypes are the address families of the Service's slices.
func AddressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) == 0 {
		out = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
		if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil && ip.To4() == nil {
			out[0] = discoveryv1.AddressTypeIPv6
		}
	}
	return out
}

// FindPort resolves a Service port's targetPort in a pod: a number is
// itself (0 means the port), a name is the container port of that name and
// protocol.
func FindPort(p *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	tp := sp.TargetPort
	if tp.Type == intstr.String {
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal && protocolOr(cp.Protocol) == protocolOr(sp.Protocol) {
					return cp.ContainerPort, nil
				}
			}
		}
		return 0, fmt.Errorf("no container port named %q of pod %s/%s", tp.StrVal, p.Namespace, p.Name)
	}
	if tp.IntVal == 0 {
		return sp.Port, nil
	}
	return tp.IntVal, nil
}

func protocolOr(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// Ports are the Service's ports as the pod serves them; a port the pod
// cannot resolve is left out.
func Ports(svc *corev1.Service, p *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := FindPort(p, sp)
		if err != nil {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{Name: ptr(sp.Name), Port: ptr(n), Protocol: ptr(protocolOr(sp.Protocol)), AppProtocol: sp.AppProtocol})
	}
	return out
}

// Endpoint is the pod as an endpoint of the Service's slices of the
// address type, or false when it has no address of that type.
func Endpoint(svc *corev1.Service, p *corev1.Pod, at discoveryv1.AddressType) (discoveryv1.Endpoint, bool) {
	var addrs []string
	ips := p.Status.PodIPs
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	for _, pip := range ips {
		ip := net.ParseIP(pip.IP)
		if ip == nil {
			continue
		}
		if v6 := ip.To4() == nil; v6 == (at == discoveryv1.AddressTypeIPv6) {
			addrs = append(addrs, ip.String())
		}
	}
	if len(addrs) == 0 {
		return discoveryv1.Endpoint{}, false
	}
	serving := controller.Ready(p)
	terminating := p.DeletionTimestamp != nil
	// A terminating pod is never ready, unless the Service publishes
	// addresses that are not (upstream's compatibility rule).
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  addrs,
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
	}
	if p.Spec.NodeName != "" {
		ep.NodeName = ptr(p.Spec.NodeName)
	}
	if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
		ep.Hostname = ptr(p.Spec.Hostname)
	}
	return ep, true
}

// Group is the endpoints of one address type sharing one set of ports:
// what one or more slices hold.
type Group struct {
	AddressType discoveryv1.AddressType
	Ports       []discoveryv1.EndpointPort
	Endpoints   []discoveryv1.Endpoint
}

// GroupKey identifies a group's address type and ports.
func GroupKey(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	b.WriteString(string(at))
	for _, p := range ports {
		fmt.Fprintf(&b, "|%s/%d/%s/%s", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol))
	}
	return b.String()
}

// Desired groups the pods' endpoints for the Service: by address type and
// by the ports each pod resolves, each group's endpoints sorted by pod.
func Desired(svc *corev1.Service, pods []*corev1.Pod) []Group {
	byKey := map[string]*Group{}
	var keys []string
	for _, at := range AddressTypes(svc) {
		for _, p := range pods {
			if !InEndpoints(p) {
				continue
			}
			ep, ok := Endpoint(svc, p, at)
			if !ok {
				continue
			}
			ports := Ports(svc, p)
			k := GroupKey(at, ports)
			g := byKey[k]
			if g == nil {
				g = &Group{AddressType: at, Ports: ports}
				byKey[k] = g
				keys = append(keys, k)
			}
			g.Endpoints = append(g.Endpoints, ep)
		}
	}
	sort.Strings(keys)
	out := make([]Group, 0, len(keys))
	for _, k := range keys {
		g := byKey[k]
		slices.SortFunc(g.Endpoints, func(a, b discoveryv1.Endpoint) int {
			return strings.Compare(a.TargetRef.Name, b.TargetRef.Name)
		})
		out = append(out, *g)
	}
	return out
}

// Plan is what to write for a Service's slices.
type Plan struct {
	Create []*discoveryv1.EndpointSlice
	Update []*discoveryv1.EndpointSlice
	Delete []*discoveryv1.EndpointSlice
}

// Reconcile plans the writes that make the Service's existing slices
// (those it manages) hold the groups, at most max endpoints a slice: a
// group's slices are its existing slices of the same address type and
// ports, reused in name order, filled in order; what is left over is
// created or deleted. A Service with no endpoints keeps one empty slice,
// as upstream's placeholder.
func Reconcile(svc *corev1.Service, groups []Group, existing []*discoveryv1.EndpointSlice, max int) Plan {
	if len(groups) == 0 {
		// The placeholder: an empty slice of the first address type.
		groups = []Group{{AddressType: AddressTypes(svc)[0], Ports: []discoveryv1.EndpointPort{}}}
	}
	return Fill(groups, existing, max, func(g Group, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return newSlice(svc, g.AddressType, g.Ports, eps)
	})
}

// Fill plans the writes that make existing slices hold the groups, at
// most max endpoints a slice (MaxEndpoints when 0), each slice as
// newSlice makes it: a group's slices are the existing slices of the
// same address type and ports, reused in name order and updated (labels,
// annotations when newSlice sets any, owners, ports, endpoints) where
// they differ; what is left over is created or deleted. A group without
// endpoints gets one empty slice.
func Fill(groups []Group, existing []*discoveryv1.EndpointSlice, max int, newSlice func(Group, []discoveryv1.Endpoint) *discoveryv1.EndpointSlice) Plan {
	if max <= 0 {
		max = MaxEndpoints
	}
	var plan Plan
	pool := map[string][]*discoveryv1.EndpointSlice{}
	sorted := slices.Clone(existing)
	slices.SortFunc(sorted, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range sorted {
		k := GroupKey(s.AddressType, s.Ports)
		pool[k] = append(pool[k], s)
	}
	for _, g := range groups {
		k := GroupKey(g.AddressType, g.Ports)
		for _, eps := range chunk(g.Endpoints, max) {
			want := newSlice(g, eps)
			if reuse := pool[k]; len(reuse) > 0 {
				old := reuse[0]
				pool[k] = reuse[1:]
				if !sameSlice(old, want) {
					up := old.DeepCopy()
					up.Labels, up.OwnerReferences = want.Labels, want.OwnerReferences
					if want.Annotations != nil {
						up.Annotations = want.Annotations
					}
					up.Ports, up.Endpoints = want.Ports, want.Endpoints
					plan.Update = append(plan.Update, up)
				}
				continue
			}
			plan.Create = append(plan.Create, want)
		}
	}
	for _, k := range sortedKeys(pool) {
		plan.Delete = append(plan.Delete, pool[k]...)
	}
	return plan
}

func chunk(eps []discoveryv1.Endpoint, max int) [][]discoveryv1.Endpoint {
	if len(eps) == 0 {
		return [][]discoveryv1.Endpoint{{}}
	}
	var out [][]discoveryv1.Endpoint
	for len(eps) > max {
		out = append(out, eps[:max])
		eps = eps[max:]
	}
	return append(out, eps)
}

func sortedKeys(m map[string][]*discoveryv1.EndpointSlice) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Labels are a managed slice's labels: the Service's, the service name,
// the manager, and the headless mark of a headless Service.
func Labels(svc *corev1.Service) map[string]string {
	l := map[string]string{}
	for k, v := range svc.Labels {
		l[k] = v
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ManagedBy
	delete(l, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[corev1.IsHeadlessService] = ""
	}
	return l
}

func newSlice(svc *corev1.Service, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	if eps == nil {
		eps = []discoveryv1.Endpoint{}
	}
	// The name is generated from the Service's, cut to leave room for
	// the random suffix, as upstream.
	prefix := svc.Name
	if len(prefix) > 57 {
		prefix = prefix[:57]
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1ObjectMeta(prefix+"-", svc),
		AddressType: at,
		Ports:       ports,
		Endpoints:   eps,
	}
}

func sameSlice(old, want *discoveryv1.EndpointSlice) bool {
	return equality.Semantic.DeepEqual(old.Labels, want.Labels) &&
		(want.Annotations == nil || equality.Semantic.DeepEqual(old.Annotations, want.Annotations)) &&
		equality.Semantic.DeepEqual(old.OwnerReferences, want.OwnerReferences) &&
		equality.Semantic.DeepEqual(old.Ports, want.Ports) &&
		equality.Semantic.DeepEqual(normal(old.Endpoints), want.Endpoints)
}

// normal is the endpoints as the API returns an empty list: nil and empty
// compare equal.
func normal(eps []discoveryv1.Endpoint) []discoveryv1.Endpoint {
	if eps == nil {
		return []discoveryv1.Endpoint{}
	}
	return eps
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// metav1ObjectMeta is a managed slice's metadata: generated name, labels
// and the Service as its controller (the garbage collector deletes the
// slices with their Service).
func metav1ObjectMeta(generateName string, svc *corev1.Service) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		GenerateName: generateName,
		Namespace:    svc.Namespace,
		Labels:       Labels(svc),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
	}
}

// Selects reports whether a pod change concerns the Service: it is
// managed and its selector matches the pod now or before (old, nil for
// an added or deleted pod).
func Selects(svc *corev1.Service, old, p *corev1.Pod) bool {
	if !Managed(svc) {
		return false
	}
	sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
	return sel.Matches(labels.Set(p.Labels)) || (old != nil && sel.Matches(labels.Set(old.Labels)))
}

// Selected are the pods the Service's selector matches.
func Selected(svc *corev1.Service, pods []*corev1.Pod) []*corev1.Pod {
	sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
	var out []*corev1.Pod
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}
