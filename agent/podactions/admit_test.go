package podactions

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAdmit(t *testing.T) {
	withRequests := func(cpu, mem string) *v1.Pod {
		r := v1.ResourceList{}
		if cpu != "" {
			r[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			r[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: r}}}}}
	}
	many := func(n int) []*v1.Pod {
		out := make([]*v1.Pod, n)
		for i := range out {
			out[i] = withRequests("", "")
		}
		return out
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	cases := []struct {
		name   string
		pod    *v1.Pod
		active []*v1.Pod
		max    int
		want   *Rejection
	}{
		{"fits", withRequests("500m", "256Mi"), many(3), 110, nil},
		{"the 111th pod", withRequests("", ""), many(110), 0,
			&Rejection{"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"}},
		{"too much cpu", withRequests("1500m", ""), []*v1.Pod{withRequests("1", "")}, 110,
			&Rejection{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
		{"too much memory", withRequests("", "768Mi"), []*v1.Pod{withRequests("", "512Mi")}, 110,
			&Rejection{"OutOfmemory", fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", 768<<20, 512<<20, 1<<30)}},
		{"best effort always fits resources", withRequests("", ""), []*v1.Pod{withRequests("2", "1Gi")}, 110, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Admit(tc.pod, tc.active, alloc, tc.max)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Admit = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAdmitRefusesTakenHostPorts is the kubelet's NodePorts admission:
// a host port (IP, protocol, port) another active pod holds, with
// 0.0.0.0 (or no IP) overlapping every address.
func TestAdmitRefusesTakenHostPorts(t *testing.T) {
	port := func(ip string, proto v1.Protocol, n int32) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostPort: n, HostIP: ip, Protocol: proto}
	}
	withPorts := func(ports ...v1.ContainerPort) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: ports}}}}
	}
	sidecar := func(ports ...v1.ContainerPort) *v1.Pod {
		always := v1.ContainerRestartPolicyAlways
		p := withPorts()
		p.Spec.InitContainers = []v1.Container{{Name: "s", RestartPolicy: &always, Ports: ports}}
		return p
	}
	initOnly := func(ports ...v1.ContainerPort) *v1.Pod {
		p := withPorts()
		p.Spec.InitContainers = []v1.Container{{Name: "i", Ports: ports}}
		return p
	}
	taken := &Rejection{"NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
	cases := []struct {
		name   string
		pod    *v1.Pod
		active []*v1.Pod
		want   *Rejection
	}{
		{"the same port", withPorts(port("", "", 8080)), []*v1.Pod{withPorts(port("", v1.ProtocolTCP, 8080))}, taken},
		{"another port", withPorts(port("", "", 8080)), []*v1.Pod{withPorts(port("", "", 8081))}, nil},
		{"another protocol", withPorts(port("", v1.ProtocolUDP, 8080)), []*v1.Pod{withPorts(port("", v1.ProtocolTCP, 8080))}, nil},
		{"two addresses", withPorts(port("127.0.0.1", "", 8080)), []*v1.Pod{withPorts(port("127.0.0.2", "", 8080))}, nil},
		{"an address against all", withPorts(port("127.0.0.1", "", 8080)), []*v1.Pod{withPorts(port("0.0.0.0", "", 8080))}, taken},
		{"all against an address", withPorts(port("", "", 8080)), []*v1.Pod{withPorts(port("127.0.0.1", "", 8080))}, taken},
		{"a container port alone holds nothing", withPorts(v1.ContainerPort{ContainerPort: 8080}), []*v1.Pod{withPorts(v1.ContainerPort{ContainerPort: 8080})}, nil},
		{"a sidecar's port is held", withPorts(port("", "", 8080)), []*v1.Pod{sidecar(port("", "", 8080))}, taken},
		{"a sidecar asks for a held port", sidecar(port("", "", 8080)), []*v1.Pod{withPorts(port("", "", 8080))}, taken},
		{"an init container's port is not held", withPorts(port("", "", 8080)), []*v1.Pod{initOnly(port("", "", 8080))}, nil},
		{"no other pod", withPorts(port("", "", 8080)), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Admit(tc.pod, tc.active, nil, 110)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Admit = %+v, want %+v", got, tc.want)
			}
		})
	}
}
