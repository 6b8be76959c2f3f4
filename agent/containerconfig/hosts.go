package containerconfig

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// EtcHostsPath is where containers find their hosts file.
const EtcHostsPath = "/etc/hosts"

// HostsFile is the pod's managed hosts file on the host, <pod dir>/etc-hosts
// (the kubelet's getEtcHostsPath), bound at /etc/hosts in its containers.
func HostsFile(podDir string) string { return filepath.Join(podDir, "etc-hosts") }

// mountsHostsFile says whether c gets the pod's managed hosts file, as the
// kubelet's makeMounts: a runtime that runs images (a process runtime's
// container sees the host's files, and its /etc/hosts), a pod with
// addresses, and no volume of c mounted at /etc/hosts.
func mountsHostsFile(c *v1.Container, in Inputs) bool {
	if !in.RunsImages || in.PodDir == "" || len(podIPs(in)) == 0 {
		return false
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == EtcHostsPath {
			return false
		}
	}
	return true
}

// podIPs are the pod's addresses: its own in a network of its own, else
// the node's.
func podIPs(in Inputs) []string {
	if in.PodNetwork && len(in.PodIPs) > 0 {
		return in.PodIPs
	}
	return in.HostIPs
}

// HostsContent is the managed hosts file of pod, as the kubelet's
// ensureHostsFile: for a pod in a network of its own, the localhost
// entries, its addresses with its hostname (and FQDN with a subdomain),
// then its hostAliases; for a pod on the node's network (hostNetwork, or a
// runtime without pod networks) the node's hosts file (nodeHosts) under the
// host-network header, then its hostAliases.
func HostsContent(pod *v1.Pod, in Inputs, nodeHosts []byte) []byte {
	var b bytes.Buffer
	if pod.Spec.HostNetwork || !in.PodNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(nodeHosts)
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		host := Hostname(pod)
		for _, ip := range podIPs(in) {
			if pod.Spec.Subdomain != "" && in.ClusterDomain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", ip, host, pod.Spec.Subdomain, pod.Namespace, in.ClusterDomain, host)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, host)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}
