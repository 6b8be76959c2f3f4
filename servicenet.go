package kite

import (
	"context"
	"fmt"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

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
