package kite

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
)

// DefaultServiceCIDRName is upstream's name of the ServiceCIDR made from
// --service-cluster-ip-range.
const DefaultServiceCIDRName = "kubernetes"

// allocateServices makes the services strategy allocate cluster IPs and
// node ports from opts' ranges, rebuilt from the stored Services and
// IPAddresses before anything is served (upstream's repair at start),
// and makes the default ServiceCIDR.
func (s *Server) allocateServices(ctx context.Context, opts Options) error {
	alloc, err := builtin.NewServiceAllocation(opts.ServiceClusterIPRanges, opts.ServiceNodePortRange)
	if err != nil {
		return fmt.Errorf("service ranges: %w", err)
	}
	services := s.resources.Store("services")
	alloc.Install(services.Strategy(), s.resources.Store("ipaddresses.networking.k8s.io"))
	if err := alloc.RepairFrom(ctx, services); err != nil {
		return err
	}
	s.services = alloc
	return ensureDefaultServiceCIDR(ctx, s.resources.Store("servicecidrs.networking.k8s.io"), alloc)
}

// ensureDefaultServiceCIDR makes the ServiceCIDR `kubernetes` of the
// configured ranges, Ready, as upstream's default ServiceCIDR controller
// does. One of other ranges (the flag changed) is left as it is and
// logged, as upstream.
func ensureDefaultServiceCIDR(ctx context.Context, store *registry.Store, alloc *builtin.ServiceAllocation) error {
	var cidrs []string
	for _, p := range alloc.CIDRs() {
		cidrs = append(cidrs, p.String())
	}
	obj, err := store.Get(ctx, "", DefaultServiceCIDRName, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err = store.Create(ctx, "", &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDRName},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}, &metav1.CreateOptions{FieldManager: "kube-apiserver"})
	}
	if err != nil {
		return fmt.Errorf("default ServiceCIDR: %w", err)
	}
	current := obj.(*networkingv1.ServiceCIDR)
	if !slices.Equal(current.Spec.CIDRs, cidrs) {
		klog.FromContext(ctx).Info("Inconsistent ServiceCIDR status", "serviceCIDR", DefaultServiceCIDRName, "controllerCIDRs", cidrs, "serviceCIDRs", current.Spec.CIDRs)
		return nil
	}
	if apimeta.IsStatusConditionTrue(current.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
		return nil
	}
	_, _, err = store.Update(ctx, &registry.UpdateRequest{Name: DefaultServiceCIDRName, Subresource: "status",
		Options: metav1.UpdateOptions{FieldManager: "kube-apiserver"},
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			c := existing.(*networkingv1.ServiceCIDR)
			apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
				Status: metav1.ConditionTrue, Reason: "", Message: "Kubernetes default Service CIDR is ready"})
			return c, nil
		}})
	if err != nil {
		return fmt.Errorf("default ServiceCIDR status: %w", err)
	}
	return nil
}

// ServiceAllocation is what gives Services their cluster IPs and node
// ports: its ranges and the `kubernetes` Service's address.
func (s *Server) ServiceAllocation() *builtin.ServiceAllocation { return s.services }

// ensureKubernetesService makes (or puts right) the `kubernetes` Service
// in `default`, as upstream's master endpoint reconciler does: the first
// address of the primary range, port 443 (https) to the API server's
// secure port; and its Endpoints and EndpointSlice, this server's
// address (the bind address, or the host's when that is loopback or
// unspecified, as kube-apiserver's --advertise-address). One server only:
// the lease-based reconciler of several is not done (docs/network.md).
func (s *Server) ensureKubernetesService(ctx context.Context, opts Options) error {
	u, err := url.Parse(s.url)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return fmt.Errorf("the API server's port in %s: %w", s.url, err)
	}
	store := s.resources.Store("services")
	want := kubernetesService(s.services.FirstIPs()[0], int32(port))
	obj, err := store.Get(ctx, metav1.NamespaceDefault, want.Name, &metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = store.Create(ctx, metav1.NamespaceDefault, want, &metav1.CreateOptions{FieldManager: "kube-apiserver"})
		if apierrors.IsAlreadyExists(err) {
			return nil // another API server made it meanwhile
		}
	case err == nil:
		if cur := obj.(*v1.Service); !equality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) || cur.Spec.Type != v1.ServiceTypeClusterIP {
			// Upstream's reconciler puts the ports and type back.
			_, _, err = store.Update(ctx, &registry.UpdateRequest{Namespace: metav1.NamespaceDefault, Name: want.Name,
				Options: metav1.UpdateOptions{FieldManager: "kube-apiserver"},
				Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
					svc := existing.(*v1.Service)
					svc.Spec.Ports, svc.Spec.Type = want.Spec.Ports, v1.ServiceTypeClusterIP
					return svc, nil
				}})
		}
	}
	if err != nil {
		return fmt.Errorf("the kubernetes Service: %w", err)
	}
	bind := net.ParseIP(cmp.Or(opts.BindAddress, "127.0.0.1"))
	if bind == nil {
		return nil // a host name: no address to advertise
	}
	advertise, err := utilnet.ResolveBindAddress(bind)
	if err != nil {
		// A host without a default route (a network namespace of tests,
		// an isolated machine): said only at -v=1, since nothing is wrong.
		klog.FromContext(ctx).V(1).Info("No address to advertise in the kubernetes Service's endpoints", "err", err)
		return nil
	}
	ep, slice := kubernetesEndpoints(advertise.String(), int32(port))
	if err := put(ctx, s.resources.Store("endpoints"), ep); err != nil {
		return fmt.Errorf("the kubernetes Endpoints: %w", err)
	}
	if err := put(ctx, s.resources.Store("endpointslices.discovery.k8s.io"), slice); err != nil {
		return fmt.Errorf("the kubernetes EndpointSlice: %w", err)
	}
	return nil
}

// put creates obj in store or replaces the stored one's labels and
// content with obj's.
func put(ctx context.Context, store *registry.Store, obj runtime.Object) error {
	m := obj.(metav1.Object)
	_, _, err := store.Update(ctx, &registry.UpdateRequest{Namespace: m.GetNamespace(), Name: m.GetName(), ForceAllowCreate: true,
		Options: metav1.UpdateOptions{FieldManager: "kube-apiserver"},
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			out := obj.DeepCopyObject()
			if existing != nil {
				em := existing.(metav1.Object)
				om := out.(metav1.Object)
				om.SetResourceVersion(em.GetResourceVersion())
				om.SetUID(em.GetUID())
			}
			return out, nil
		}})
	return err
}

// kubernetesEndpoints are upstream's Endpoints (not mirrored) and
// EndpointSlice of the `kubernetes` Service: ip:port, https, ready.
func kubernetesEndpoints(ip string, port int32) (*v1.Endpoints, *discoveryv1.EndpointSlice) {
	ep := &v1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: ip}},
			Ports: []v1.EndpointPort{{Name: "https", Port: port, Protocol: v1.ProtocolTCP}}}},
	}
	family := discoveryv1.AddressTypeIPv4
	if netutils.IsIPv6String(ip) {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	return ep, slice
}

// kubernetesService is upstream's `kubernetes` Service.
func kubernetesService(ip string, port int32) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: v1.ServiceSpec{
			Type:            v1.ServiceTypeClusterIP,
			ClusterIP:       ip,
			SessionAffinity: v1.ServiceAffinityNone,
			Ports: []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(port)}},
		},
	}
}
