package builtin

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	networkingvalidation "github.com/kite-project/kite/apis/networking/validation"
	"github.com/kite-project/kite/registry"
)

// serviceNetStrategies are the resources of Services' networking beside
// the Services themselves: networking.k8s.io/v1 ServiceCIDRs and
// IPAddresses.
func serviceNetStrategies() []*registry.Strategy {
	return []*registry.Strategy{ServiceCIDRs(), IPAddresses()}
}

// ServiceCIDRs returns the strategy of networking.k8s.io/v1
// servicecidrs: the ranges Services take cluster IPs from. The one named
// `kubernetes` is made at start from --service-cluster-ip-range.
func ServiceCIDRs() *registry.Strategy {
	return &registry.Strategy{
		Kind:              networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR"),
		Resource:          "servicecidrs",
		SingularName:      "servicecidr",
		New:               func() runtime.Object { return &networkingv1.ServiceCIDR{} },
		NewList:           func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
		ValidatesMetadata: true,
		PrepareForCreate:  func(obj runtime.Object) { obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{} },
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*networkingv1.ServiceCIDR).Status = old.(*networkingv1.ServiceCIDR).Status
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateServiceCIDR(obj.(*networkingv1.ServiceCIDR))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateServiceCIDRUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*networkingv1.ServiceCIDR).Spec = old.(*networkingv1.ServiceCIDR).Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return networkingvalidation.ValidateServiceCIDRStatusUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
				},
			},
		},
	}
}

// IPAddresses returns the strategy of networking.k8s.io/v1 ipaddresses:
// one per cluster IP a Service holds, named by the address.
func IPAddresses() *registry.Strategy {
	return &registry.Strategy{
		Kind:              networkingv1.SchemeGroupVersion.WithKind("IPAddress"),
		Resource:          "ipaddresses",
		SingularName:      "ipaddress",
		ShortNames:        []string{"ip"},
		New:               func() runtime.Object { return &networkingv1.IPAddress{} },
		NewList:           func() runtime.Object { return &networkingv1.IPAddressList{} },
		ValidatesMetadata: true,
		ValidateName:      networkingvalidation.ValidateIPAddressName,
		Validate: func(obj runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIPAddress(obj.(*networkingv1.IPAddress))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIPAddressUpdate(obj.(*networkingv1.IPAddress), old.(*networkingv1.IPAddress))
		},
		AllowUnconditionalUpdate: true,
	}
}
