package kite

import "github.com/kite-project/kite/registry/builtin"

// kubernetesServiceHosts are the names and addresses by which pods reach
// the API server through the `kubernetes` Service, which its serving
// certificate must carry, as kube-apiserver's self-signed one does (the
// first address of each --service-cluster-ip-range, and kubernetes,
// kubernetes.default, kubernetes.default.svc, plus kubeadm's
// kubernetes.default.svc.cluster.local): an in-cluster client
// (rest.InClusterConfig) dials KUBERNETES_SERVICE_HOST, the Service's
// cluster IP, and verifies the certificate against it. Invalid ranges
// give no address here; allocateServices reports them.
func kubernetesServiceHosts(opts Options) []string {
	hosts := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if alloc, err := builtin.NewServiceAllocation(opts.ServiceClusterIPRanges, opts.ServiceNodePortRange); err == nil {
		hosts = append(hosts, alloc.FirstIPs()...)
	}
	return hosts
}
