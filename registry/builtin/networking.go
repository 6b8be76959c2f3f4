package builtin

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	networkingdefaults "github.com/kite-project/kite/apis/networking/defaults"
	networkingvalidation "github.com/kite-project/kite/apis/networking/validation"
	"github.com/kite-project/kite/registry"
)

// networkingStrategies are networking.k8s.io/v1's ingresses,
// ingressclasses and networkpolicies (servicecidrs and ipaddresses come
// with the service network).
func networkingStrategies() []*registry.Strategy {
	gv := networkingv1.SchemeGroupVersion
	return []*registry.Strategy{
		declared[*networkingv1.IngressClass]{
			kind: gv.WithKind("IngressClass"), resource: "ingressclasses",
			newList:  func() runtime.Object { return &networkingv1.IngressClassList{} },
			defaults: networkingdefaults.IngressClass,
			validate: networkingvalidation.ValidateIngressClass, update: networkingvalidation.ValidateIngressClassUpdate,
			generation: true,
		}.strategy(),
		declared[*networkingv1.Ingress]{
			kind: gv.WithKind("Ingress"), resource: "ingresses", short: []string{"ing"}, namespaced: true,
			newList:  func() runtime.Object { return &networkingv1.IngressList{} },
			validate: networkingvalidation.ValidateIngressCreate, update: networkingvalidation.ValidateIngressUpdate,
			status:     networkingvalidation.ValidateIngressStatusUpdate,
			generation: true,
		}.strategy(),
		declared[*networkingv1.NetworkPolicy]{
			kind: gv.WithKind("NetworkPolicy"), resource: "networkpolicies", short: []string{"netpol"}, namespaced: true,
			newList:  func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
			defaults: networkingdefaults.NetworkPolicy,
			validate: networkingvalidation.ValidateNetworkPolicy, update: networkingvalidation.ValidateNetworkPolicyUpdate,
			generation: true,
		}.strategy(),
	}
}
