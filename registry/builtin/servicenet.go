package builtin

import (
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilptr "k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/validation"
	discoveryvalidation "github.com/kite-project/kite/apis/discovery/validation"
	networkingvalidation "github.com/kite-project/kite/apis/networking/validation"
	"github.com/kite-project/kite/registry"
)

// serviceNetStrategies are the resources of Services' networking beside
// the Services themselves: core/v1 Endpoints, discovery.k8s.io/v1
// EndpointSlices, networking.k8s.io/v1 ServiceCIDRs and IPAddresses.
func serviceNetStrategies() []*registry.Strategy {
	return []*registry.Strategy{Endpoints(), EndpointSlices(), ServiceCIDRs(), IPAddresses()}
}

// Endpoints returns the strategy of core/v1 endpoints.
func Endpoints() *registry.Strategy {
	return &registry.Strategy{
		Kind:         v1.SchemeGroupVersion.WithKind("Endpoints"),
		Resource:     "endpoints",
		SingularName: "endpoints",
		ShortNames:   []string{"ep"},
		Namespaced:   true,
		New:          func() runtime.Object { return &v1.Endpoints{} },
		NewList:      func() runtime.Object { return &v1.EndpointsList{} },
		Default: func(obj runtime.Object) {
			// Upstream's v1 defaulting: a port's protocol is TCP.
			for i := range obj.(*v1.Endpoints).Subsets {
				for j := range obj.(*v1.Endpoints).Subsets[i].Ports {
					if p := &obj.(*v1.Endpoints).Subsets[i].Ports[j]; p.Protocol == "" {
						p.Protocol = v1.ProtocolTCP
					}
				}
			}
		},
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateEndpoints(obj.(*v1.Endpoints), nil)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateEndpoints(obj.(*v1.Endpoints), old.(*v1.Endpoints))
		},
		AllowCreateOnUpdate:      true,
		AllowUnconditionalUpdate: true,
	}
}

// EndpointSlices returns the strategy of discovery.k8s.io/v1
// endpointslices.
func EndpointSlices() *registry.Strategy {
	return &registry.Strategy{
		Kind:         discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
		Resource:     "endpointslices",
		SingularName: "endpointslice",
		Namespaced:   true,
		New:          func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:      func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Default: func(obj runtime.Object) {
			// Upstream's v1 defaulting: a port's name is "", its
			// protocol TCP.
			for i := range obj.(*discoveryv1.EndpointSlice).Ports {
				p := &obj.(*discoveryv1.EndpointSlice).Ports[i]
				if p.Name == nil {
					p.Name = utilptr.To("")
				}
				if p.Protocol == nil {
					p.Protocol = utilptr.To(v1.ProtocolTCP)
				}
			}
		},
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return discoveryvalidation.ValidateEndpointSlice(obj.(*discoveryv1.EndpointSlice), nil)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return discoveryvalidation.ValidateEndpointSlice(obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice))
		},
		AllowUnconditionalUpdate: true,
	}
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
