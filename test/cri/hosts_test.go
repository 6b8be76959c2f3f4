package cri

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestHostAliasesReachEtcHosts: a container from an image gets the pod's
// managed /etc/hosts, as the kubelet writes it: here (a runtime without
// pod networks, pods on the node's network) the node's file under the
// host-network header, then the pod's hostAliases.
func TestHostAliasesReachEtcHosts(t *testing.T) {
	a := startAgent(t, "cri-hosts", t.TempDir())
	p := a.pod(t, "hosts", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.HostAliases = []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}}
		p.Spec.Containers[0].Command = []string{"sh", "-c", "cat /etc/hosts > /dev/termination-log"}
	})
	p = a.wait(t, p, "Succeeded", phase(v1.PodSucceeded))
	msg := mainStatus(p).State.Terminated.Message
	if !strings.HasPrefix(msg, "# Kubernetes-managed hosts file (host network).\n") || !strings.HasSuffix(msg, "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n") {
		t.Errorf("/etc/hosts:\n%s\nwant the managed file with the aliases", msg)
	}
}
