package podstatus

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

func TestPodIPs(t *testing.T) {
	host := []string{"192.0.2.2"}
	withIPs := rt(instance("c", podruntime.Running, 0, 1, 0))
	withIPs.IPs = []string{"10.42.0.5", "fd42::5"}
	cases := []struct {
		name        string
		podNetwork  bool
		hostNetwork bool
		runtime     bool
		want        string
	}{
		{"a pod network: the sandbox's addresses, primary first", true, false, true, "10.42.0.5 [{10.42.0.5} {fd42::5}]"},
		{"a pod network, no sandbox yet: none", true, false, false, " []"},
		{"hostNetwork: the node's", true, true, true, "192.0.2.2 [{192.0.2.2}]"},
		{"no pod network (process runtime): the node's", false, false, true, "192.0.2.2 [{192.0.2.2}]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(v1.RestartPolicyAlways, nil, "c")
			p.Spec.HostNetwork = tc.hostNetwork
			in := Input{Pod: p, HostIPs: host, PodNetwork: tc.podNetwork, Now: now}
			if tc.runtime {
				in.Runtime = withIPs
			}
			s := Generate(in)
			if got := fmt.Sprintf("%s %v", s.PodIP, s.PodIPs); got != tc.want {
				t.Errorf("podIP podIPs = %s, want %s", got, tc.want)
			}
			if s.HostIP != "192.0.2.2" || len(s.HostIPs) != 1 {
				t.Errorf("hostIP %q hostIPs %v; want the node's", s.HostIP, s.HostIPs)
			}
		})
	}
}
