package apiserver_test

import (
	"fmt"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// serviceNetSample is the sample of Endpoints, an EndpointSlice, a
// ServiceCIDR or an IPAddress; nil for other kinds.
func serviceNetSample(gk schema.GroupKind, meta metav1.ObjectMeta) runtime.Object {
	cluster := meta
	cluster.Namespace = ""
	switch gk {
	case schema.GroupKind{Kind: "Endpoints"}:
		return &v1.Endpoints{ObjectMeta: meta, Subsets: []v1.EndpointSubset{{
			Addresses: []v1.EndpointAddress{{IP: "10.244.1.5"}}, Ports: []v1.EndpointPort{{Name: "http", Port: 80}}}}}
	case schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:
		return &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}}}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:
		return &networkingv1.ServiceCIDR{ObjectMeta: cluster, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "IPAddress"}:
		// An IPAddress is named by its address: one outside the cluster's
		// service range, derived from the sample's name.
		h := fnv.New32a()
		h.Write([]byte(meta.Name))
		sum := h.Sum32()
		cluster.Name = fmt.Sprintf("10.201.%d.%d", sum>>8&0xff, 1+sum&0x7f)
		return &networkingv1.IPAddress{ObjectMeta: cluster, Spec: networkingv1.IPAddressSpec{
			ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: fuzzNamespace, Name: "web"}}}
	}
	return nil
}
