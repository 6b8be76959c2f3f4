package containerconfig

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxNetworkNamespaceAndHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	cases := []struct {
		name         string
		podNetwork   bool
		hostNetwork  bool
		podName      string
		specHostname string
		wantMode     runtimeapi.NamespaceMode
		wantHostname string
	}{
		{"with a pod network: a namespace of its own, named after the pod", true, false, "web", "", runtimeapi.NamespaceMode_POD, "web"},
		{"spec.hostname names it", true, false, "web", "front", runtimeapi.NamespaceMode_POD, "front"},
		{"a long name is cut to 63 without a trailing dash", true, false, long, "", runtimeapi.NamespaceMode_POD, strings.Repeat("a", 62)},
		{"hostNetwork: the node's, and its hostname", true, true, "web", "", runtimeapi.NamespaceMode_NODE, ""},
		{"without a pod network every pod is in the node's", false, false, "web", "", runtimeapi.NamespaceMode_NODE, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("ns", v1.Container{Name: "c"})
			pod.Name = tc.podName
			pod.Spec.HostNetwork, pod.Spec.Hostname = tc.hostNetwork, tc.specHostname
			sb := SandboxConfig(pod, Inputs{PodNetwork: tc.podNetwork}, 0)
			if got := sb.Linux.SecurityContext.NamespaceOptions.Network; got != tc.wantMode || sb.Hostname != tc.wantHostname {
				t.Errorf("network %v hostname %q; want %v %q", got, sb.Hostname, tc.wantMode, tc.wantHostname)
			}
		})
	}
}

func TestEnvPodIPsAreTheSandboxsWithAPodNetwork(t *testing.T) {
	field := func(p string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: p}}
	}
	c := v1.Container{Name: "c", Command: []string{"sh"}, Env: []v1.EnvVar{
		{Name: "PODIP", ValueFrom: field("status.podIP")}, {Name: "PODIPS", ValueFrom: field("status.podIPs")},
		{Name: "HOSTIP", ValueFrom: field("status.hostIP")},
	}}
	cases := []struct {
		name                  string
		podNetwork, hostNet   bool
		podIP, podIPs, hostIP string
	}{
		{"a pod network: the sandbox's", true, false, "10.42.0.7", "10.42.0.7,fd42::7", "10.1.2.3"},
		{"hostNetwork: the node's", true, true, "10.1.2.3", "10.1.2.3,fd00::3", "10.1.2.3"},
		{"no pod network: the node's", false, false, "10.1.2.3", "10.1.2.3,fd00::3", "10.1.2.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("env", c)
			pod.Spec.HostNetwork = tc.hostNet
			in := Inputs{HostIPs: []string{"10.1.2.3", "fd00::3"}, PodNetwork: tc.podNetwork, PodIPs: []string{"10.42.0.7", "fd42::7"}}
			got, err := Env(pod, &c, in)
			if err != nil {
				t.Fatal(err)
			}
			want := []EnvVar{{"PODIP", tc.podIP}, {"PODIPS", tc.podIPs}, {"HOSTIP", tc.hostIP}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("env = %v, want %v", got, want)
			}
		})
	}
}
