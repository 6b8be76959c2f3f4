package containerconfig

import (
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
