package containerconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestNamespacesAsTheKubeletsNamespacesForPod: the sandbox and every
// container get the same modes, those of kuberuntime's NamespacesForPod;
// an ephemeral container with a target joins the target's PID namespace
// only where the pod gives each container its own.
func TestNamespacesAsTheKubeletsNamespacesForPod(t *testing.T) {
	const (
		pod    = runtimeapi.NamespaceMode_POD
		ctr    = runtimeapi.NamespaceMode_CONTAINER
		node   = runtimeapi.NamespaceMode_NODE
		target = runtimeapi.NamespaceMode_TARGET
	)
	yes, no := true, false
	cases := []struct {
		name       string
		podNetwork bool
		spec       func(*v1.PodSpec)
		// want: network, ipc, pid; wantTarget: pid of an ephemeral
		// container targeting another.
		network, ipc, pid, targetPid runtimeapi.NamespaceMode
	}{
		{"default: each container its own PID namespace", true, nil, pod, pod, ctr, target},
		{"shareProcessNamespace false is the default", true, func(s *v1.PodSpec) { s.ShareProcessNamespace = &no }, pod, pod, ctr, target},
		{"shareProcessNamespace: the pod's", true, func(s *v1.PodSpec) { s.ShareProcessNamespace = &yes }, pod, pod, pod, pod},
		{"hostPID: the node's, also over shareProcessNamespace", true, func(s *v1.PodSpec) { s.HostPID, s.ShareProcessNamespace = true, &yes }, pod, pod, node, node},
		{"hostIPC: the node's", true, func(s *v1.PodSpec) { s.HostIPC = true }, pod, node, ctr, target},
		{"hostNetwork: the node's", true, func(s *v1.PodSpec) { s.HostNetwork = true }, node, pod, ctr, target},
		{"without a pod network, the node's network only", false, nil, node, pod, ctr, target},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod("ns", v1.Container{Name: "c", Command: []string{"sleep"}})
			if tc.spec != nil {
				tc.spec(&p.Spec)
			}
			in := Inputs{PodNetwork: tc.podNetwork}
			want := &runtimeapi.NamespaceOption{Network: tc.network, Ipc: tc.ipc, Pid: tc.pid}
			sb := SandboxConfig(p, in, 0).Linux.SecurityContext.NamespaceOptions
			cfg, err := Build(p, &p.Spec.Containers[0], in)
			if err != nil {
				t.Fatal(err)
			}
			for what, got := range map[string]*runtimeapi.NamespaceOption{"sandbox": sb, "container": cfg.Linux.SecurityContext.NamespaceOptions} {
				if got.String() != want.String() {
					t.Errorf("%s: %v; want %v", what, got, want)
				}
			}
			eph := TargetNamespaces(p, tc.podNetwork, "target-id")
			wantTargetID := ""
			if tc.targetPid == target {
				wantTargetID = "target-id"
			}
			if eph.Pid != tc.targetPid || eph.TargetId != wantTargetID || eph.Network != tc.network || eph.Ipc != tc.ipc {
				t.Errorf("ephemeral with a target: %v; want pid %v target %q, network %v, ipc %v", eph, tc.targetPid, wantTargetID, tc.network, tc.ipc)
			}
		})
	}
}
