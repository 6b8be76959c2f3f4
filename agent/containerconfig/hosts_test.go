package containerconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestManagedHostsFileAsTheKubeletWritesIt: a pod in a network of its own
// gets the kubelet's managed hosts file (localhost entries, its address
// with its hostname, or FQDN with a subdomain, then its hostAliases); a pod
// on the node's network gets the node's file under the host-network
// header and its aliases.
func TestManagedHostsFileAsTheKubeletWritesIt(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}}
	local := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	cases := []struct {
		name      string
		hostNet   bool
		subdomain string
		aliases   []v1.HostAlias
		in        Inputs
		want      string
	}{
		{name: "pod network", in: Inputs{PodNetwork: true, PodIPs: []string{"10.42.0.5"}},
			want: local + "10.42.0.5\tweb\n"},
		{name: "pod network with aliases", aliases: aliases, in: Inputs{PodNetwork: true, PodIPs: []string{"10.42.0.5"}},
			want: local + "10.42.0.5\tweb\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"},
		{name: "subdomain is the FQDN", subdomain: "sub", in: Inputs{PodNetwork: true, PodIPs: []string{"10.42.0.5"}, ClusterDomain: "cluster.local"},
			want: local + "10.42.0.5\tweb.sub.hosts.svc.cluster.local\tweb\n"},
		{name: "host network", hostNet: true, aliases: aliases, in: Inputs{PodNetwork: true, HostIPs: []string{"192.0.2.1"}},
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"},
		{name: "runtime without pod networks", in: Inputs{HostIPs: []string{"192.0.2.1"}},
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("hosts", v1.Container{Name: "c"})
			pod.Name = "web"
			pod.Spec.HostNetwork, pod.Spec.Subdomain, pod.Spec.HostAliases = tc.hostNet, tc.subdomain, tc.aliases
			if got := string(HostsContent(pod, tc.in, []byte("127.0.0.1 node\n"))); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestHostsFileMountedWhereTheKubeletMountsIt: only a runtime that runs
// images binds it, and not over a volume the container mounts at
// /etc/hosts.
func TestHostsFileMountedWhereTheKubeletMountsIt(t *testing.T) {
	in := Inputs{RunsImages: true, PodDir: "/pods/u", HostIPs: []string{"192.0.2.1"}}
	if !mountsHostsFile(&v1.Container{Name: "c"}, in) {
		t.Error("a CRI container does not get the hosts file")
	}
	if mountsHostsFile(&v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts"}}}, in) {
		t.Error("the hosts file is bound over the container's own volume at /etc/hosts")
	}
	in.RunsImages = false
	if mountsHostsFile(&v1.Container{Name: "c"}, in) {
		t.Error("a process runtime container gets the hosts file")
	}
}
