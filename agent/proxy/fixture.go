package proxy

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Fixture makes n NodePort Services in namespace "bench", each with one
// EndpointSlice of per ready endpoints: the load of the benchmarks here
// and in test/proxy.
func Fixture(n, per int) ([]*v1.Service, []*discovery.EndpointSlice) {
	var svcs []*v1.Service
	var eps []*discovery.EndpointSlice
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip := fmt.Sprintf("10.43.%d.%d", i/250, i%250+1)
		svcs = append(svcs, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name}, Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeNodePort, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: int32(30000 + i%2768)}},
		}})
		s := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name + "-1", Labels: map[string]string{discovery.LabelServiceName: name}},
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(v1.ProtocolTCP)}}}
		for j := range per {
			k := i*per + j
			s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.42.%d.%d", k/250, k%250+1)}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}})
		}
		eps = append(eps, s)
	}
	return svcs, eps
}
