package kite

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestKubeDNSEndpoints: the kube-dns endpoints list the DNS's address for
// dns and dns-tcp, and the metrics port only where metrics are served on
// that address; the Service's metrics port targets it (9153 otherwise).
func TestKubeDNSEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name                string
		ip                  string
		port, metrics       int32
		slicePorts, epPorts int
		target              int32
	}{
		{name: "DNS and metrics on the node's address", ip: "192.168.1.11", port: 53, metrics: 9153, slicePorts: 3, epPorts: 3, target: 9153},
		{name: "metrics elsewhere (or none): no metrics endpoint", ip: "192.168.1.11", port: 10053, slicePorts: 2, epPorts: 2, target: 9153},
		{name: "metrics on another port", ip: "192.168.1.11", port: 53, metrics: 19153, slicePorts: 3, epPorts: 3, target: 19153},
		{name: "no address: no endpoint at all", port: 53, metrics: 9153, slicePorts: 2, epPorts: -1, target: 9153},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, slice := kubeDNSEndpoints(tc.ip, tc.port, tc.metrics)
			if len(slice.Ports) != tc.slicePorts {
				t.Errorf("slice ports %d, want %d", len(slice.Ports), tc.slicePorts)
			}
			if tc.epPorts < 0 {
				if len(ep.Subsets) != 0 || len(slice.Endpoints) != 0 {
					t.Errorf("endpoints without an address: %v, %v", ep.Subsets, slice.Endpoints)
				}
			} else if len(ep.Subsets) != 1 || len(ep.Subsets[0].Ports) != tc.epPorts {
				t.Errorf("Endpoints subsets %v, want one of %d ports", ep.Subsets, tc.epPorts)
			}
			if tc.metrics != 0 && tc.ip != "" {
				last := slice.Ports[len(slice.Ports)-1]
				if *last.Name != "metrics" || *last.Port != tc.metrics || *last.Protocol != v1.ProtocolTCP {
					t.Errorf("metrics port %s %d %s", *last.Name, *last.Port, *last.Protocol)
				}
			}
			svc := kubeDNSService("10.43.0.10", tc.port, tc.metrics)
			if p := svc.Spec.Ports[2]; p.Name != "metrics" || p.Port != 9153 || p.TargetPort.IntVal != tc.target {
				t.Errorf("Service's metrics port %+v, want 9153 to %d", p, tc.target)
			}
		})
	}
}
